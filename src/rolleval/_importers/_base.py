"""What every importer produces: typed records per task, plus an honest account of the rest.

An importer reads another harness's output and yields :class:`ImportedTask` objects, one per
source task, each holding the task's :class:`~rolleval.records.PromptRecord`,
:class:`~rolleval.records.RolloutRecord` and :class:`~rolleval.records.JudgementRecord`
lists. Whatever a source field could not be mapped to is counted in :class:`Unmapped` by
field and reason, so the import summary says what was left behind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import DataError
from ..records import JudgementRecord, PromptRecord, RolloutRecord, content_hash

__all__ = [
    "ImportedRun",
    "ImportedTask",
    "Reader",
    "Unmapped",
    "as_float",
    "check_unique",
    "make_prompt",
    "source_error",
    "with_clusters",
]


class Unmapped:
    """Counts of source fields not carried into the run, by field and reason."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()

    def add(self, field_name: str, reason: str, count: int = 1) -> None:
        if count:
            self._counts[(field_name, reason)] += count

    def as_list(self) -> list[dict[str, Any]]:
        return [{"field": f, "reason": r, "count": n} for (f, r), n in sorted(self._counts.items())]


@dataclass
class ImportedTask:
    """One source task turned into rolleval records.

    ``settings`` goes into ``task.json`` (grader spec and identity, sampling, source,
    provenance); ``correctness`` says where the judgements came from (``"source"`` or
    ``"regraded"``); ``notes`` are sentences for the import summary.
    """

    name: str
    prompts: list[PromptRecord]
    rollouts: list[RolloutRecord]
    judgements: list[JudgementRecord]
    settings: dict[str, Any]
    unmapped: Unmapped = field(default_factory=Unmapped)
    notes: list[str] = field(default_factory=list)
    aligned_by: str = "content_hash"
    """``content_hash`` (prompt as sent + reference) or ``id`` (the source lacks one)."""
    source_metrics: dict[str, Any] = field(default_factory=dict)
    """The source's own aggregate numbers for this task (e.g. lm-eval's ``exact_match``)."""
    stream: Iterator[Any] | None = None
    """Instead of the three lists: batches holding whole problems, read once by the writer
    (large sources): each a :class:`~._batch.LineBatch` (the records' encoded lines, by the
    fast serializer of :mod:`rolleval.records._lines`, and their report columns); the other
    fields are final once the stream is exhausted."""
    record_files: tuple[Path, Path, Path] | None = None
    """Set by the writer before it reads ``stream``: the task's prompt, rollout and judgement
    files, which a stream's worker processes may append to themselves, in file order, when
    the batches they hand back hold only the report columns (lm-eval's column path)."""


@dataclass
class ImportedRun:
    """A source read into tasks. ``tasks`` is consumed once, task by task (streaming)."""

    format: str
    source: Path
    model: str | None
    provenance: dict[str, Any]
    tasks: Iterator[ImportedTask]


class Reader(Protocol):
    """One source format."""

    #: The FORMAT name on the command line.
    name: str

    def looks_like(self, path: Path) -> bool:
        """True when ``path`` has this format's shape (cheap: names and first bytes only)."""
        ...

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        """Read ``path``; with ``regrade`` (a grader type) keep every repeat's text to judge."""
        ...


def check_unique(
    seen: set[Any], key: Any, *, path: Path, what: str, line: int | None = None
) -> None:
    """Refuse a second record with the same id within one task."""
    if key in seen:
        raise DataError(
            f"duplicate {what} {key!r}; each must appear once per task (the file may be two "
            "logs concatenated: import them separately)",
            path=path,
            line=line,
        )
    seen.add(key)


def make_prompt(
    problem_id: str,
    prompt: Any,
    reference: Any,
    *,
    source_hash: str | None = None,
    cluster: str | None = None,
    extras: dict[str, Any] | None = None,
) -> PromptRecord:
    """The prompt record of one imported problem.

    With the prompt as sent, the content hash is rolleval's own (:func:`content_hash` of
    prompt and reference), so imports of the same task from different harnesses align by
    content. Without it, ``source_hash`` (the source's own content hash, e.g. TraceLens's
    task hash) is used, or none at all: then runs align by id and say so.
    """
    if prompt is not None:
        return PromptRecord(
            problem_id=problem_id,
            prompt=prompt,
            reference=reference,
            cluster=cluster,
            extras=extras or {},
            content_hash=content_hash(prompt, reference),
        )
    return PromptRecord(
        problem_id=problem_id,
        prompt=None,
        reference=reference,
        cluster=cluster,
        extras=extras or {},
        content_hash=source_hash,
    )


def with_clusters(judgements: list[JudgementRecord]) -> list[JudgementRecord]:
    """Fill in maj@n answer clusters the source did not give: rollouts of one problem whose
    extracted answers are the same string share the lowest such index."""
    lowest: dict[tuple[str, str], int] = {}
    for j in judgements:
        if j.cluster is None and j.extracted is not None and j.gradable:
            key = (j.problem_id, j.extracted)
            lowest[key] = min(lowest.get(key, j.index), j.index)
    return [
        j.model_copy(update={"cluster": lowest[(j.problem_id, j.extracted)]})
        if j.cluster is None and j.extracted is not None and j.gradable
        else j
        for j in judgements
    ]


def thought_fields(
    rollout: RolloutRecord, thinking: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The judgement's thought health of an imported rollout (``reasoning_tokens``,
    ``thought_chars``, ``answer_chars``, ``in_thought``), by the thinking delimiters the
    imported task is stored with (``thinking``; default the default delimiters): the same
    fields :func:`~rolleval.records.make_judgement` writes, so an imported reasoning run
    reports its thought like a run of rolleval's own."""
    from ..grading import split_thought
    from ..records import DEFAULT_THINKING

    out: dict[str, Any] = {}
    if rollout.usage is not None and rollout.usage.reasoning_tokens is not None:
        out["reasoning_tokens"] = rollout.usage.reasoning_tokens
    if rollout.status != "ok" or rollout.options is not None:
        return out
    split = split_thought(rollout.text, rollout.reasoning, thinking or DEFAULT_THINKING)
    if split.thought_chars is not None:
        out["thought_chars"] = split.thought_chars
        out["answer_chars"] = split.answer_chars
        if split.in_thought:
            out["in_thought"] = True
    return out


def source_error(path: Path, what: str, fix: str, *, line: int | None = None) -> DataError:
    """A :class:`DataError` for a source file that is not what its format promises."""
    return DataError(f"{what}; {fix}", path=path, line=line)


def as_float(value: Any) -> float | None:
    """A metric value as a float (bools count as 0/1); ``None`` for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None
