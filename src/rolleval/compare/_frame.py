"""Per-problem values of one task of one run: what ``compare``, ``gate`` and ``plan`` consume.

A :class:`ProblemFrame` is built from a run directory (via its judgements) or read back from
a compact baseline file (``rolleval baseline save``); both give identical frames, so a CI job
can gate against a baseline file without the baseline's run directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._report._build import (
    DEFAULT_TAUS,
    HEALTH_DEFINITIONS,
    health_counts,
    judged_mask,
    per_problem_values,
    report_ks,
)
from .._version import __version__
from ..errors import DataError, UsageError
from ..metrics import metric_name, parse_metric_name
from ..metrics._vote import vote_signatures
from ..records import BASELINE_FORMAT, BASELINE_SCHEMA, BaselineFile, BaselineTask
from ..rundir._store import RunDir, atomic_write_json, collect_warnings, read_json, validate_model
from ..rundir._table import TaskTable, load_task_table

__all__ = [
    "BASELINE_FORMAT",
    "HEALTH_METRICS",
    "ProblemFrame",
    "canonical_metric",
    "frames_from_baseline",
    "frames_from_run",
    "load_frames",
    "metric_direction",
    "read_baseline",
    "resolve_tasks",
    "save_baseline",
]

#: Health metrics available to compare, all "lower is better": name -> definition. One
#: definition each, shared with report.json and the gate (:data:`rolleval._report._build.HEALTH_DEFINITIONS`).
HEALTH_METRICS = {name: definition for name, (_key, definition) in HEALTH_DEFINITIONS.items()}

# settings that must agree for two frames to be comparable (the others that differ are
# listed under "what changed": rolleval.compare._changed)
_MUST_MATCH = ("grader_identity", "score_key", "denominator_policy", "timeout_policy")


#: ``metrics.<name>``: the mean of a named per-rollout judgement metric (report key).
_JUDGEMENT_METRIC = re.compile(r"metrics\.[A-Za-z_][A-Za-z0-9_]*")
#: Bare names accepted for a judgement metric (``compare --metric logprob_margin``).
JUDGEMENT_METRIC_ALIASES = ("logprob_margin", "acc_norm", "em", "f1")


def canonical_metric(name: str) -> str:
    """The key reports print for ``name`` (via :func:`rolleval.metrics.parse_metric_name`),
    a health metric name, or ``metrics.<name>`` (a per-rollout judgement metric; the bare
    names of :data:`JUDGEMENT_METRIC_ALIASES` too); ``UsageError`` listing the valid forms
    otherwise."""
    if isinstance(name, str) and name.strip() in HEALTH_METRICS:
        return name.strip()
    if isinstance(name, str) and _JUDGEMENT_METRIC.fullmatch(name.strip()):
        return name.strip()  # a per-rollout judgement metric, as reports print it
    if isinstance(name, str) and name.strip() in JUDGEMENT_METRIC_ALIASES:
        return f"metrics.{name.strip()}"
    family, params = parse_metric_name(name)
    return metric_name(family, **params)  # type: ignore[arg-type]


def metric_direction(name: str) -> int:
    """+1 when higher is better, -1 for the health metrics (lower is better)."""
    return -1 if name in HEALTH_METRICS else +1


def resolve_tasks(
    baseline: dict[str, ProblemFrame],
    candidate: dict[str, ProblemFrame] | None,
    tasks: list[str] | None,
    *,
    sources: tuple[object, object | None],
    sides: tuple[str, str] = ("baseline", "candidate"),
) -> list[str]:
    """The tasks named by the user, each checked to exist on both sides (UsageError, exit 2,
    naming the side and the tasks it has), or every baseline task present on both sides."""
    if tasks:
        for t in tasks:
            for side, frames, src in (
                (sides[0], baseline, sources[0]),
                (sides[1], candidate, sources[1]),
            ):
                if frames is not None and t not in frames:
                    raise UsageError(
                        f"task {t!r} is not in the {side} ({src}; it has: {', '.join(frames) or 'none'}); "
                        "pass --task with one of those"
                    )
        return list(dict.fromkeys(tasks))
    return [t for t in baseline if candidate is None or t in candidate]


@dataclass
class ProblemFrame:
    """One task of one run, problem by problem (canonical order: sorted ids)."""

    task: str
    ids: list[str]
    hashes: list[str | None]
    clusters: list[str | None]
    n: np.ndarray  # the metrics' denominator per problem (judged, or requested)
    c: np.ndarray  # correct among the judged rollouts
    requested: np.ndarray
    values: dict[str, np.ndarray]  # metric name -> per-problem value (NaN = not eligible)
    health: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    gradable: np.ndarray | None = None  # gradable rollouts per problem
    unjudged: np.ndarray | None = None  # requested rollouts not judged (errors, missing)
    missing: np.ndarray | None = None  # requested rollouts with no judgement record
    settings: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    kind: str = "run"
    run_id: str | None = None
    model: str | None = None
    run_status: str | None = None
    imported: tuple[str, str] | None = None
    """``(format, source)`` of an import that kept its source's judgements (no ``--regrade``)."""

    def __post_init__(self) -> None:
        zeros = np.zeros(len(self.ids), dtype=np.int64)
        if self.gradable is None:
            self.gradable = self.n.copy()
        if self.unjudged is None:
            self.unjudged = zeros.copy()
        if self.missing is None:
            self.missing = zeros.copy()

    # per problem: answer clusters (size, correct) and rollouts voting for nothing, for
    # maj@k / sc@k at a common k (None: not stored, e.g. an older baseline file); built
    # on first use from ``vote_rows`` (the per-rollout arrays of a run directory)
    stored_votes: list[Any] | None = None
    vote_rows: tuple[Any, ...] | None = field(default=None, repr=False)

    @property
    def votes(self) -> list[Any] | None:
        if self.stored_votes is None and self.vote_rows is not None:
            problem, cluster, correct, n_problems, extra = self.vote_rows
            self.stored_votes = vote_signatures(
                problem, cluster, correct, n_problems, extra_unextracted=extra
            )
        return self.stored_votes

    @property
    def has_hashes(self) -> bool:
        return bool(self.ids) and all(h is not None for h in self.hashes)

    @property
    def n_missing(self) -> int:
        assert self.missing is not None
        return int(self.missing.sum())

    @property
    def complete(self) -> bool:
        """The run finished (status ``completed``, or unknown for old baseline files) and
        every requested rollout has a judgement record."""
        return self.run_status in (None, "completed") and self.n_missing == 0

    def value(self, metric: str) -> np.ndarray:
        try:
            return self.values[metric]
        except KeyError:
            names = ", ".join(sorted([*self.values, *self.health]))
            raise UsageError(
                f"{self.source}: task {self.task!r} has no metric {metric!r} (available: {names})"
            ) from None


def frame_from_table(
    table: TaskTable,
    settings: dict[str, Any],
    *,
    source: str = "",
    run_id: str | None = None,
    model: str | None = None,
    run_status: str | None = None,
) -> ProblemFrame:
    """All per-problem metric values of a task (the report's metrics) and health counts."""
    req = table.requested
    policy = settings.get("denominator_policy", "judged")
    timeout_policy = settings.get("timeout_policy", "failure")
    vals = per_problem_values(
        table,
        ks=report_ks(table, settings),
        taus=tuple(float(t) for t in settings.get("taus", DEFAULT_TAUS)),
        denominator_policy=policy,
        score_key=settings.get("score_key", "correct"),
        timeout_policy=timeout_policy,
    )
    values = {name: v for name, (v, _p, _r) in vals.items()}
    judged = judged_mask(table, timeout_policy)
    n_judged = table.per_problem(judged).astype(np.int64)
    n_records = np.bincount(table.r_problem, minlength=table.n_problems).astype(np.int64)
    full = dict(settings)
    full.setdefault("denominator_policy", policy)
    full.setdefault("timeout_policy", timeout_policy)
    n_frame = req.astype(np.int64) if policy == "requested" else n_judged
    g = table.r_gradable
    # judged timeouts (under the failure policy) and, under "requested", unjudged rollouts
    # count in the denominator and vote for nothing
    vote_rows = (
        table.r_problem[g],
        table.r_cluster[g],
        table.r_correct[g],
        table.n_problems,
        (n_frame - table.per_problem(g)).astype(np.int64),
    )
    return ProblemFrame(
        task=settings.get("name") or "",
        ids=list(table.problem_ids),
        hashes=list(table.content_hashes),
        clusters=list(table.clusters),
        n=n_frame,
        c=table.per_problem(judged & table.r_correct).astype(np.int64),
        requested=req.copy(),
        values=values,
        health=health_counts(table),
        gradable=table.per_problem(table.r_gradable).astype(np.int64),
        unjudged=(req - n_judged).astype(np.int64),
        missing=(req - n_records).astype(np.int64),
        settings={
            k: full.get(k)
            for k in (
                "name",
                "grader_identity",
                "score_key",
                "sampling",
                "n_rollouts",
                "denominator_policy",
                "timeout_policy",
                "source",
                "ks",
            )
        },
        source=source,
        run_id=run_id,
        model=model,
        run_status=run_status,
        vote_rows=vote_rows,
    )


def _source_judgements(manifest: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(format, source)`` when the run is an import judged by its source's own grader."""
    imp = manifest.get("import")
    if not isinstance(imp, dict) or imp.get("correctness") != "source":
        return None
    return str(imp.get("format") or "FORMAT"), str(imp.get("source") or "SOURCE")


def frames_from_run(path: str | os.PathLike[str]) -> dict[str, ProblemFrame]:
    run = RunDir.open(path)
    imported = _source_judgements(run.manifest)
    out: dict[str, ProblemFrame] = {}
    with collect_warnings():
        for tf in run.tasks():
            settings = tf.read_task()
            settings.setdefault("name", tf.name)
            table = load_task_table(tf, settings=settings)
            out[tf.name] = frame_from_table(
                table,
                settings,
                source=str(path),
                run_id=run.manifest.get("run_id"),
                model=(run.manifest.get("config") or {}).get("model"),
                run_status=run.manifest.get("status"),
            )
            out[tf.name].imported = imported
    return out


def _json_floats(a: np.ndarray) -> list[float | None]:
    return [None if np.isnan(x) else float(x) for x in a.tolist()]


def save_baseline(
    run_path: str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool = False
) -> BaselineFile:
    """Write a compact baseline (per-problem counts, metric values, hashes, provenance) and
    return it: the file's contents as :func:`read_baseline` reads them back (frozen;
    ``model_dump(mode="json")`` is the JSON written)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise UsageError(f"{out}: file exists; pass --force to replace it, or choose another --out")
    run = RunDir.open(run_path)
    if run.info.sequential is not None:
        raise UsageError(
            f"{run_path}: a sequential run (--until-decided) visited a data-dependent share of "
            "BASE's problems and stopped on its comparison; it cannot serve as a baseline "
            "(run the candidate in full, without --until-decided, to make one)"
        )
    frames = frames_from_run(run_path)
    doc: dict[str, Any] = {
        "format": BASELINE_FORMAT,
        "schema_version": BASELINE_SCHEMA,
        "rolleval_version": __version__,
        "run_id": run.manifest.get("run_id"),
        "model": (run.manifest.get("config") or {}).get("model"),
        "provenance": run.manifest.get("provenance"),
        "measurement": run.manifest.get("measurement"),
        "run_status": run.manifest.get("status"),
        "tasks": {},
    }
    for name, fr in frames.items():
        assert fr.gradable is not None and fr.unjudged is not None and fr.missing is not None
        doc["tasks"][name] = {
            "settings": fr.settings,
            "ids": fr.ids,
            "hashes": fr.hashes,
            "clusters": fr.clusters,
            "n": fr.n.tolist(),
            "c": fr.c.tolist(),
            "requested": fr.requested.tolist(),
            "gradable": fr.gradable.tolist(),
            "unjudged": fr.unjudged.tolist(),
            "missing": fr.missing.tolist(),
            "values": {k: _json_floats(v) for k, v in sorted(fr.values.items())},
            "health": {
                k: {"numerator": num.tolist(), "denominator": den.tolist()}
                for k, (num, den) in fr.health.items()
            },
            "votes": [[[list(c) for c in sig], u] for sig, u in (fr.votes or [])],
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    baseline = BaselineFile.model_validate(doc)
    atomic_write_json(out, baseline.model_dump(mode="json"))
    return baseline


def read_baseline(path: str | os.PathLike[str]) -> BaselineFile:
    """A baseline file (``rolleval baseline save``), validated against
    :class:`~rolleval.records.BaselineFile`.

    Keys this rolleval does not know are ignored (a later rolleval may add some); anything
    else wrong is a one-line :class:`DataError` naming the file and the field.
    """
    doc = read_json(path, what="baseline file")
    if not isinstance(doc, dict) or doc.get("format") != BASELINE_FORMAT:
        raise DataError(
            f"not a rolleval baseline file (format must be {BASELINE_FORMAT!r}); write one with `rolleval baseline save`",
            path=path,
        )
    return validate_model(
        _known_keys(doc),
        BaselineFile,
        path=path,
        what="baseline file",
        fix="write the baseline again with `rolleval baseline save`",
    )


def _known_keys(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without the keys :class:`BaselineFile` and :class:`BaselineTask` do not know."""
    out = {k: v for k, v in doc.items() if k in BaselineFile.model_fields}
    tasks = out.get("tasks")
    if isinstance(tasks, dict):
        out["tasks"] = {
            name: (
                {k: v for k, v in t.items() if k in BaselineTask.model_fields}
                if isinstance(t, dict)
                else t
            )
            for name, t in tasks.items()
        }
    return out


def frames_from_baseline(path: str | os.PathLike[str]) -> dict[str, ProblemFrame]:
    """Frames of every task of a baseline file (read through :func:`read_baseline`)."""
    doc = read_baseline(path)
    out: dict[str, ProblemFrame] = {}
    for name, t in doc.tasks.items():
        n_problems = len(t.ids)
        out[name] = ProblemFrame(
            task=name,
            ids=list(t.ids),
            hashes=list(t.hashes),
            clusters=list(t.clusters) if t.clusters is not None else [None] * n_problems,
            n=np.array(t.n, dtype=np.int64),
            c=np.array(t.c, dtype=np.int64),
            requested=np.array(t.requested, dtype=np.int64),
            values={
                k: np.array([np.nan if x is None else x for x in v], dtype=float)
                for k, v in t.values.items()
            },
            health={
                k: (np.array(h["numerator"], dtype=float), np.array(h["denominator"], dtype=float))
                for k, h in t.health.items()
            },
            gradable=np.array(t.gradable, dtype=np.int64),
            unjudged=np.array(t.unjudged, dtype=np.int64),
            missing=np.array(t.missing, dtype=np.int64),
            settings=dict(t.settings),
            source=str(path),
            kind="baseline",
            run_id=doc.run_id,
            model=doc.model,
            run_status=doc.run_status,
            # votes are stored per problem, or not at all (absent, or an empty list)
            stored_votes=(
                [(tuple(sig), u) for sig, u in t.votes]
                if t.votes is not None and len(t.votes) == n_problems
                else None
            ),
        )
    return out


def load_frames(path: str | os.PathLike[str]) -> dict[str, ProblemFrame]:
    """Frames of every task from a run directory or a baseline file."""
    p = Path(path)
    if p.is_file():
        return frames_from_baseline(p)
    return frames_from_run(p)
