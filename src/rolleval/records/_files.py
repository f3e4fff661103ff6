"""The whole-file documents of a run directory, and the baseline file.

* ``manifest.json``: :class:`RunManifest` (runner, importers, synthetic runs);
* ``tasks/<task>/task.json``: :class:`TaskSettings` (runner, regrade, importers);
* ``tasks/<task>/profile.json``: :class:`Profile` (runner);
* ``report.json``: :class:`RunReport`, the envelope around the task reports (report);
* ``.rolleval.lock``: :class:`LockHolder`, while a writing command runs;
* a baseline file: :class:`BaselineFile` (``rolleval baseline save``).

Each model names its version field first. Reading goes through ``model_validate``: the
``mode="before"`` upgrade hook (:class:`~rolleval.records._base.FileModel`) refuses a newer
version and lifts an older one; unknown keys are refused, so a typo never passes silently.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from pydantic import ConfigDict, Field, model_validator

from ._base import SCHEMA_VERSION, FileModel, RecordPart

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_SCHEMA",
    "DEFAULT_THINKING",
    "REPORT_VERSION",
    "RUN_FORMAT",
    "BaselineFile",
    "BaselineTask",
    "LockHolder",
    "Profile",
    "RunManifest",
    "RunReport",
    "RunStatus",
    "RunSummary",
    "SamplingSettings",
    "Segment",
    "SequentialDesign",
    "SequentialLook",
    "SequentialTask",
    "TaskSettings",
]

RUN_FORMAT: Final = "rolleval-run"
BASELINE_FORMAT: Final = "rolleval-baseline"
BASELINE_SCHEMA = 2
"""Version 2 (issue 10) added per-problem ``gradable``/``unjudged``/``missing`` counts,
pooled ``health`` counts, answer-cluster ``votes`` and ``run_status``; a version-1 file
cannot be upgraded (it lacks the counts) and is refused with "save it again"."""
REPORT_VERSION = 1

RunStatus = Literal["running", "completed", "interrupted", "failed"]
"""``running`` while a command writes it (or after a crash); ``interrupted`` after Ctrl-C,
SIGTERM or a streak of failed rollouts (resumable); ``failed`` when every rollout failed."""


class RunSummary(RecordPart):
    """The manifest's one-glance summary of what was run."""

    model: str | None = None
    """Model name as sent to the endpoint (``local`` for the embedded model)."""
    n_rollouts: int | None = Field(default=None, ge=1)
    """Rollouts requested per problem (``None``: imported runs with no declared n)."""
    seed: int | None = None
    """Run seed the rollout seeds derive from (``None``: not known, imported runs)."""


class Segment(RecordPart):
    """One run or resume of the runner: when, how much, how it ended."""

    started_at: str
    ended_at: str | None = None
    seconds: float | None = Field(default=None, ge=0)
    requested: int = Field(ge=0)
    """Rollouts this segment set out to request."""
    completed: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    status: RunStatus | None = None


def _unchanged(data: dict[str, Any]) -> dict[str, Any]:
    return data


def _rename_measurement_n(data: dict[str, Any]) -> dict[str, Any]:
    """``measurement.n`` (schema 1; baseline files copy it) is ``n_rollouts`` from schema 2."""
    measurement = data.get("measurement")
    if isinstance(measurement, dict) and "n" in measurement and "n_rollouts" not in measurement:
        data["measurement"] = {("n_rollouts" if k == "n" else k): v for k, v in measurement.items()}
    return data


#: Schemas 2 and 3 changed only the manifest, schema 4 only ``task.json`` (and added
#: optional fields to the streams): the other run files read as they are.
_SAME_SINCE_1: dict[int, Any] = {1: _unchanged, 2: _unchanged, 3: _unchanged}

#: The thinking delimiters of a new task: the answer is the text after the last ``</think>``.
DEFAULT_THINKING: tuple[str, str] = ("<think>", "</think>")


def _graded_whole(data: dict[str, Any]) -> dict[str, Any]:
    """A ``task.json`` before schema 4 has no ``thinking``: its texts were graded whole
    (``"none"``), so a regrade or resume of the old run keeps that meaning until told
    otherwise."""
    data.setdefault("thinking", "none")
    return data


class SequentialLook(RecordPart):
    """One look of a sequential run at one task's confidence sequence."""

    problems: int = Field(ge=0)
    """Problems visited so far (in the recorded order)."""
    values: int = Field(ge=0)
    """Of them, problems with a paired difference (gradable on both sides)."""
    lower: float
    upper: float
    """The running-intersection interval of the mean difference (candidate - baseline)."""
    effect: float | None = None
    """The mean difference over the problems with one (``None`` before the first)."""
    verdict: str | None = None
    """The settled verdict at this look (``None``: not settled, look again)."""


class SequentialTask(RecordPart):
    """One task of a sequential run: its visit order, looks and final verdict."""

    order: list[str]
    """BASE's problem ids in the seeded random visit order (the whole budget)."""
    alpha: float = Field(gt=0, lt=1)
    """This task's level (Bonferroni: the run's alpha / number of tasks)."""
    looks: list[SequentialLook] = Field(default_factory=list)
    verdict: str | None = None
    """The final verdict (compare's words), ``None`` while running."""
    reason: str | None = None
    stopped_after: int | None = Field(default=None, ge=0)
    """Problems visited when the task's verdict was settled (or the budget spent)."""


class SequentialDesign(RecordPart):
    """The manifest's ``sequential``: what a sequential run decided and how."""

    design: Literal["sequential"] = "sequential"
    method: str
    metric: str = "pass@1"
    alpha: float = Field(gt=0, lt=1)
    threshold: float = Field(ge=0)
    order_seed: int
    """The seed of the visit order (the run's ``--seed``)."""
    max_problems: int = Field(ge=1)
    """The budget per task (problems)."""
    round_problems: int = Field(ge=1)
    """Problems per round: the runs looks after each round."""
    multiplicity: str = "Bonferroni across tasks"
    baseline: dict[str, Any]
    """Where BASE was read from: ``path``, ``kind`` (run or baseline file), ``run_id``."""
    tasks: dict[str, SequentialTask]
    verdict: str | None = None
    """Overall: ``regression``, ``inconclusive`` or ``pass`` (``None`` while running)."""
    stopping_reason: str | None = None


class RunManifest(FileModel):
    """``manifest.json``: identity, status, settings and provenance of a run."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    kind: ClassVar[str] = "run schema"
    _upgrades: ClassVar[dict[int, Any]] = {1: _rename_measurement_n, 2: _unchanged, 3: _unchanged}

    schema_version: int = SCHEMA_VERSION
    """Version of the run-directory format (:data:`~rolleval.records.SCHEMA_VERSION`)."""
    format: Literal["rolleval-run"] = RUN_FORMAT
    run_id: str = Field(min_length=1)
    """Identifier fixed at creation (random hex for runner-made runs)."""
    created_at: str | None = None
    """UTC timestamp, ``YYYY-MM-DDTHH:MM:SSZ``."""
    rolleval_version: str | None = None
    """Version of rolleval that created the run."""
    status: RunStatus = "completed"
    measurement: dict[str, Any] | None = None
    """Settings that decide what the numbers mean; ``--resume`` refuses any change.
    Schema 1 named the rollout count ``n``; reading lifts it to ``n_rollouts``."""
    throughput: dict[str, Any] | None = None
    """Settings that only decide speed; may change on resume. Never the API key itself."""
    config: RunSummary = Field(default_factory=RunSummary)
    tasks: list[str] = Field(default_factory=list)
    """Task names, in run order."""
    provenance: dict[str, Any] | None = None
    """Endpoint, server, Python, platform and package versions, recorded before the first request."""
    provenance_resumes: list[dict[str, Any]] = Field(default_factory=list)
    """The same, once per resume."""
    segments: list[Segment] = Field(default_factory=list)
    import_: dict[str, Any] | None = Field(default=None, alias="import")
    """For imported runs (``rolleval import``): what was imported from where, per task."""
    sequential: SequentialDesign | None = None
    """For a sequential run (``rolleval run --until-decided``, schema 3): its design, every
    look and why it stopped. ``None`` for a fixed-design run (every run before schema 3)."""

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        # Task entries may be written as {"name": ...} objects; the manifest keeps names.
        tasks = data.get("tasks")
        if isinstance(tasks, list):
            data["tasks"] = [
                t["name"] if isinstance(t, dict) and isinstance(t.get("name"), str) else t
                for t in tasks
            ]
        return data


class SamplingSettings(RecordPart):
    """Effective sampling settings sent with every request of a task.

    Runs imported from other harnesses keep their own sampling keys beside these (unknown
    keys are kept as they were, not refused: they describe another tool's request)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    reasoning_effort: str | None = None
    """Sent as ``reasoning_effort`` (OpenAI, vLLM, SGLang, llama.cpp); ``None``: not sent."""


class TaskSettings(FileModel):
    """``task.json``: how a task was run, graded and reported, and what data it used."""

    kind: ClassVar[str] = "task settings schema"
    _upgrades: ClassVar[dict[int, Any]] = {1: _unchanged, 2: _unchanged, 3: _graded_whole}

    schema_version: int = SCHEMA_VERSION
    """Same version as the manifest's (absent in files written before it was recorded: 1)."""
    name: str = Field(min_length=1)
    description: str | None = None
    n_rollouts: int | None = Field(default=None, ge=1)
    """Rollouts requested per problem; ``None`` for imported runs (then one more than the
    largest index present, per problem)."""
    ks: list[int] | None = None
    """k values reported (``None``: powers of two up to the smallest ``n_rollouts`` asked for)."""
    taus: list[float] | None = None
    """G-Pass@k thresholds reported (``None``: the defaults)."""
    denominator_policy: Literal["judged", "requested"] = "judged"
    timeout_policy: Literal["failure", "excluded"] = "failure"
    """How a timed-out rollout enters the metrics: as a failure (default) or left out."""
    score_key: str = "correct"
    """``correct`` (pass/fail), ``score``, or ``metrics.<name>``."""
    inference: dict[str, Any] | None = None
    """Overrides of the report's inference settings (n_resamples, confidence_level, seed)."""
    grader: dict[str, Any] | None = None
    """The grader spec that rebuilds the grader (``{"type": "math", ...}``)."""
    grader_identity: str | None = None
    """``<id>@<version>`` of the grader that wrote the judgements."""
    grader_dependencies: dict[str, str | None] | None = None
    thinking: tuple[str, str] | Literal["none"] = DEFAULT_THINKING
    """The delimiters of a thought written inline in the text (``[open, close]``), applied
    before extraction: the grader sees only the text after the last closing delimiter,
    and a thought opened and never closed is no answer (``docs/contract.md``, "Reasoning
    models"). ``"none"``: texts are graded whole (runs made before schema 4 read so)."""
    sampling: SamplingSettings | None = None
    source: dict[str, Any] | None = None
    """Data source (``package``, ``version``, ``path``, ``sha256`` ...)."""
    licence: str | None = None
    cluster_field: str | None = None
    """What the prompt records' ``cluster`` means (e.g. the MMLU subject)."""
    n_problems: int | None = Field(default=None, ge=0)
    eval_set_hash: str | None = None
    """sha256 of the concatenated problem hashes in sorted-id order."""
    problem_hashes: dict[str, str] = Field(default_factory=dict)
    """Per problem id: the prompt record's ``content_hash``."""
    source_file: str | None = None
    """Imported runs only (``rolleval import``): name of the file or folder of the source
    output this task was read from."""
    source_summary: dict[str, Any] | None = None
    """Imported lighteval runs only: the task's ``summary_tasks`` entry of the results file,
    as lighteval wrote it."""
    source_anomalies: Any = None
    """Imported SiEval runs only: the task's ``anomalies.json``, as SiEval wrote it."""
    runner: dict[str, Any] | None = None
    """Imported TraceLens runs only: the ``provenance.measurement.runner`` settings
    (``num_runs``, ``timeout_seconds``, ...), as TraceLens wrote them."""


class ProfileRollouts(RecordPart):
    effective: int = Field(ge=0)
    attempts: int = Field(ge=0)
    by_status: dict[str, int] = Field(default_factory=dict)


class ProfileTokens(RecordPart):
    prompt_total: int | None = None
    completion_total: int | None = None
    completion_mean: float | None = None
    reported_by: int = Field(ge=0)
    """How many completed rollouts reported usage."""


class ProfileGraderTokens(RecordPart):
    """Tokens an LLM judge spent grading the task's rollouts (never the candidate's)."""

    prompt_total: int | None = None
    completion_total: int | None = None
    calls: int = Field(ge=0)
    """Judgements that report the judge's usage."""


class ProfileLatency(RecordPart):
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    n: int = Field(ge=0)


class Profile(FileModel):
    """``profile.json``: token usage, latency percentiles, throughput, from stored rollouts."""

    kind: ClassVar[str] = "profile schema"
    _upgrades: ClassVar[dict[int, Any]] = _SAME_SINCE_1

    schema_version: int = SCHEMA_VERSION
    rollouts: ProfileRollouts
    retries: int = Field(ge=0)
    tokens: ProfileTokens
    latency_s: ProfileLatency
    response_models: list[str] = Field(default_factory=list)
    system_fingerprints: list[str] = Field(default_factory=list)
    note: str | None = None
    wall_seconds: float = Field(ge=0)
    """Wall time of all run segments (all tasks of the run share it)."""
    rollouts_per_second: float | None = None
    grader_tokens: ProfileGraderTokens | None = None
    """An LLM judge's token spend (``type: judge``); ``None`` when the grader spends none."""


class RunReport(FileModel):
    """``report.json`` at the run level: an envelope around every task's report."""

    kind: ClassVar[str] = "report"
    version_field: ClassVar[str] = "report_version"
    current_version: ClassVar[int] = REPORT_VERSION

    report_version: int = REPORT_VERSION
    rolleval_version: str
    run_id: str | None = None
    model: str | None = None
    tasks: dict[str, dict[str, Any]]
    """Task name -> task report (see ``docs/run-format.md``)."""
    sequential: dict[str, Any] | None = None
    """A sequential run's design, looks and verdict (the manifest's ``sequential``, issue
    24); absent for a fixed-design run. Optional, so the report version stays 1."""


class BaselineTask(RecordPart):
    """One task of a baseline file: per-problem counts and metric values, canonical order."""

    settings: dict[str, Any]
    ids: list[str]
    hashes: list[str | None]
    clusters: list[str | None] | None = None
    n: list[int]
    c: list[int]
    requested: list[int]
    gradable: list[int]
    """Gradable rollouts per problem."""
    unjudged: list[int]
    """Requested rollouts not judged (errors, missing), per problem."""
    missing: list[int]
    """Requested rollouts with no judgement record, per problem."""
    values: dict[str, list[float | None]]
    health: dict[str, dict[Literal["numerator", "denominator"], list[float]]]
    """Pooled health counts: name -> per-problem numerator and denominator."""
    votes: list[tuple[list[tuple[int, bool]], int]] | None = None
    """Per problem: the answer clusters as (size, correct), and rollouts voting for nothing
    (absent or empty: not stored, as in files saved before issue 10 was fixed; maj@n and
    self-consistency then refuse the file)."""

    @model_validator(mode="after")
    def _one_entry_per_problem(self) -> BaselineTask:
        """Every per-problem list holds one entry per id; ids are distinct."""
        n_problems = len(self.ids)
        if len(set(self.ids)) != n_problems:
            raise ValueError("a problem id is listed twice in 'ids'")
        lists: dict[str, list[Any]] = {
            "hashes": self.hashes,
            "n": self.n,
            "c": self.c,
            "requested": self.requested,
            "gradable": self.gradable,
            "unjudged": self.unjudged,
            "missing": self.missing,
        }
        if self.clusters is not None:
            lists["clusters"] = self.clusters
        if self.votes:
            lists["votes"] = self.votes
        for name, values in self.values.items():
            lists[f"values.{name}"] = values
        for name, counts in self.health.items():
            for part in ("numerator", "denominator"):
                if part not in counts:
                    raise ValueError(f"'health.{name}' has no {part!r} list")
                lists[f"health.{name}.{part}"] = counts[part]
        for name, values in lists.items():
            if len(values) != n_problems:
                raise ValueError(
                    f"{name!r} has {len(values)} entries for {n_problems} problems ('ids'); "
                    "every per-problem list needs one entry per problem"
                )
        return self


class BaselineFile(FileModel):
    """A compact baseline (``rolleval baseline save``): enough to compare and gate against.
    Frozen (what :func:`rolleval.compare.save_baseline` returns)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ClassVar[str] = "baseline schema"
    current_version: ClassVar[int] = BASELINE_SCHEMA
    stale_fix: ClassVar[str] = (
        "write it again from its run with `rolleval baseline save RUN --out FILE --force`"
    )

    schema_version: int = BASELINE_SCHEMA
    format: Literal["rolleval-baseline"] = BASELINE_FORMAT
    rolleval_version: str | None = None
    run_id: str | None = None
    model: str | None = None
    provenance: dict[str, Any] | None = None
    measurement: dict[str, Any] | None = None
    """The run manifest's ``measurement`` (a file saved from a schema-1 run says ``n``:
    read as ``n_rollouts``)."""
    run_status: str | None = None
    """The run's status when the baseline was saved (``completed`` unless forced)."""
    tasks: dict[str, BaselineTask] = Field(default_factory=dict)

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        return _rename_measurement_n(data)


class LockHolder(FileModel):
    """``.rolleval.lock``: who holds the run directory's write lock (empty when free)."""

    kind: ClassVar[str] = "lock file schema"
    _upgrades: ClassVar[dict[int, Any]] = _SAME_SINCE_1

    schema_version: int = SCHEMA_VERSION
    pid: int
    host: str
    command: str
    """What the holder is doing (``run``, ``resume``, ``regrade``, ``report``, ``import``...)."""
    since: str
    """UTC timestamp of when the lock was taken."""
