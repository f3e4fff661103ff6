"""Columnar view of one task's stored records: the input of every report and comparison.

:func:`load_task_table` reads ``prompts.jsonl`` and ``judgements.jsonl`` once and returns a
:class:`TaskTable`: per-problem counts in canonical order (problems sorted by id) and flat
per-rollout columns (sorted by problem, then rollout index). Reading order, write order and
resume history never change it.

Effective-record rules (``docs/run-format.md``):

* judgements: the first record for a (problem, index) wins; later ones are counted in
  ``n_duplicate_judgements`` and ignored;
* a judgement for a problem that has no prompt record is a :class:`DataError`;
* rollout indices at or beyond the task's ``n_rollouts`` are counted (``n_unexpected``) and
  ignored;
* an index below ``n_rollouts`` with no judgement is *missing* (a harness failure, like an
  infra error).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from itertools import islice, repeat
from typing import Any

import msgspec
import numpy as np

from ..errors import DataError, UsageError
from ..records import ROLLOUT_STATUSES
from ._store import JsonlColumns, TaskFiles, read_jsonl_columns

__all__ = [
    "STATUS_CODES",
    "UNREAD_JUDGEMENT_FIELDS",
    "UNREAD_PROMPT_FIELDS",
    "JudgementRow",
    "PromptRow",
    "ScoredJudgementRow",
    "TaskTable",
    "build_task_table",
    "load_task_table",
]

STATUS_CODES = {s: i for i, s in enumerate(ROLLOUT_STATUSES)}
_OK, _TIMEOUT, _INFRA, _SKIPPED = (
    STATUS_CODES[s] for s in ("ok", "timeout", "infra_error", "skipped")
)


@dataclass
class TaskTable:
    """Per-problem and per-rollout columns of one task (canonical order)."""

    problem_ids: list[str]
    clusters: list[str | None]
    content_hashes: list[str | None]
    requested: np.ndarray  # int64 per problem: rollouts requested
    # --- per-rollout columns (effective judgements with index < requested), sorted ---
    r_problem: np.ndarray  # int64 position of the problem in problem_ids
    r_index: np.ndarray  # int64 rollout index
    r_status: np.ndarray  # int8 code in STATUS_CODES
    r_gradable: np.ndarray  # bool: status ok and no grader error
    r_correct: np.ndarray  # bool (False where not gradable)
    r_extracted: np.ndarray  # bool: an answer was extracted
    r_cluster: np.ndarray  # int64 cluster label, -1 = none
    r_truncated: np.ndarray  # bool: finish_reason == "length"
    r_grader_error: np.ndarray  # bool
    r_output_tokens: np.ndarray  # float64, NaN = not reported
    r_score: np.ndarray  # float64 score in [0, 1] (NaN = none)
    # --- thought health (reasoning models; NaN / False where absent) ---
    r_reasoning_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """float64 reasoning tokens as the server counted them, NaN = not counted."""
    r_thought_chars: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """float64 characters of the thought, NaN = the rollout holds no thought."""
    r_answer_chars: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """float64 characters of the graded answer, NaN = not recorded (no thought)."""
    r_in_thought: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    """bool: the text ended inside its thought (no answer after it)."""
    # float64 per named judgement metric (``metrics.<name>``), NaN where a rollout lacks it
    r_metrics: dict[str, np.ndarray] = field(default_factory=dict)
    # --- file-level counts ---
    n_duplicate_judgements: int = 0
    n_unexpected: int = 0
    n_duplicate_prompts: int = 0
    torn_lines: dict[str, int] = field(default_factory=dict)

    @property
    def n_problems(self) -> int:
        return len(self.problem_ids)

    def per_problem(self, mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Sum of ``weights`` (or count) over rollouts where ``mask`` holds, per problem."""
        w = mask.astype(np.float64) if weights is None else np.where(mask, weights, 0.0)
        return np.bincount(self.r_problem, weights=w, minlength=self.n_problems)


def _mask(values: Any, n: int) -> np.ndarray:
    return np.fromiter(values, dtype=bool, count=n)


def _present(column: list[Any], n: int) -> np.ndarray:
    """Where ``column`` is not None (all or nothing found in C, by ``list.count``)."""
    absent = column.count(None) if n else 0
    if absent == 0:
        return np.ones(n, bool)
    if absent == n:
        return np.zeros(n, bool)
    return _mask(map(operator.is_not, column, repeat(None)), n)


def _bad(path: Any, line: int, message: str) -> DataError:
    return DataError(message, path=path, line=line)


_NoneType = type(None)


def _check_column(
    values: list[Any],
    kinds: tuple[type, ...],
    name: str,
    path: Any,
    line_of: Any,
    *,
    optional: bool,
) -> None:
    """Raise a DataError naming the first record whose ``name`` has the wrong type.

    ``kinds`` are exact types (``bool`` is not accepted where ``int`` is asked).
    """
    allowed = set(kinds) | ({_NoneType} if optional else set())
    if set(map(type, values)) <= allowed:
        return
    want = " or ".join(k.__name__ for k in kinds)
    for i, v in enumerate(values):
        if type(v) not in allowed:
            if v is None:
                raise _bad(
                    path,
                    line_of(i),
                    f"record has no {name!r}; every judgement needs it (regrade the run to rebuild judgements)",
                )
            raise _bad(
                path,
                line_of(i),
                f"{name!r} must be {want}, got {v!r}; regrade the run to rebuild judgements",
            )


class JudgementRow(msgspec.Struct, gc=False):
    """The fields of a judgement record that reports read, with their JSON types.

    Decoding checks every type (``index`` an integer and not a boolean, ``correct`` a boolean
    or null, ...); other fields of the record are skipped unread.
    """

    problem_id: str
    index: int
    status: str
    correct: bool | None = None
    extracted: str | None = None
    cluster: int | None = None
    finish_reason: str | None = None
    output_tokens: float | None = None
    grader_error: str | None = None
    reasoning_tokens: float | None = None
    thought_chars: float | None = None
    answer_chars: float | None = None
    in_thought: bool | None = None


class ScoredJudgementRow(JudgementRow, gc=False):
    """:class:`JudgementRow` plus the graded-score fields (read when ``score_key`` needs them)."""

    score: float | None = None
    metrics: dict[str, float] | None = None


JUDGEMENT_FIELDS = list(ScoredJudgementRow.__struct_fields__)
_COLUMN_TYPES: list[tuple[str, tuple[type, ...], bool]] = [
    ("problem_id", (str,), False),
    ("index", (int,), False),
    ("correct", (bool,), True),
    ("cluster", (int,), True),
    ("extracted", (str,), True),
    ("output_tokens", (int, float), True),
    ("score", (int, float), True),
    ("reasoning_tokens", (int, float), True),
    ("thought_chars", (int, float), True),
    ("answer_chars", (int, float), True),
    ("in_thought", (bool,), True),
]


class PromptRow(msgspec.Struct, gc=False):
    """The fields of a prompt record that reports read (the prompt text is skipped unread)."""

    problem_id: str
    content_hash: str | None = None
    cluster: str | None = None


#: Fields of the record models the columnar rows deliberately do not read. A field added to
#: :class:`~rolleval.records.JudgementRecord` or :class:`~rolleval.records.PromptRecord` must
#: be added to a row above or listed here (``tests/records/test_record_contract.py`` checks it).
UNREAD_JUDGEMENT_FIELDS = frozenset({"grader", "judge_raw", "grader_usage"})
UNREAD_PROMPT_FIELDS = frozenset({"prompt", "reference", "reference_kind", "extras"})


def build_task_table(
    prompts: list[dict[str, Any]] | JsonlColumns,
    judgements: list[dict[str, Any]] | JsonlColumns,
    *,
    requested: int | None,
    prompts_path: Any = "prompts.jsonl",
    prompt_lines: list[int] | None = None,
    judgements_path: Any = "judgements.jsonl",
    score_key: str = "correct",
) -> TaskTable:
    """Build a :class:`TaskTable` from prompt records and judgement records (or their columns).

    ``requested`` is the task's ``n_rollouts`` (rollouts per problem); ``None`` (imported runs
    declare none) takes, per problem, one more than the largest index present.

    The stages, each a function below: the problems in canonical order (from the prompt
    records); the judgement columns checked and converted (problem position, index, status);
    the effective records (indices below ``requested``, the first record of each
    (problem, index), canonical order); then the per-rollout columns of those records.
    """
    prompt_columns = _prompt_columns(prompts, prompt_lines)
    _check_score_key(score_key)
    if not isinstance(judgements, JsonlColumns):
        judgements = JsonlColumns(
            {f: [r.get(f) for r in judgements] for f in JUDGEMENT_FIELDS}, len(judgements)
        )
    problems = _canonical_problems(prompt_columns, prompts_path)

    _check_judgement_types(judgements, judgements_path)
    pos, pos_is_permutation = _problem_positions(
        judgements, prompt_columns.ids, problems, prompts_path, judgements_path
    )
    idx = _index_column(judgements, judgements_path)
    status = _status_column(judgements, judgements_path)
    req = _requested_per_problem(requested, len(problems.ids), pos, idx)
    rows, n_unexpected, n_dup = _effective_rows(pos, idx, req, pos_is_permutation)

    outcome = _judgement_columns(judgements, rows, status, judgements_path)
    health = _health_columns(judgements, rows)
    score = _score_column(judgements, score_key, rows, outcome, judgements_path)
    r_metrics = _metric_columns(
        judgements.columns.get("metrics"), rows, judgements_path, judgements.line_of
    )
    return TaskTable(
        problem_ids=problems.ids,
        clusters=list(map(prompt_columns.clusters.__getitem__, problems.order)),
        content_hashes=list(map(prompt_columns.hashes.__getitem__, problems.order)),
        requested=req,
        r_problem=pos[rows],
        r_index=idx[rows],
        r_status=outcome.status,
        r_gradable=outcome.gradable,
        r_correct=outcome.correct,
        r_extracted=outcome.extracted,
        r_cluster=outcome.cluster,
        r_truncated=health.truncated,
        r_grader_error=outcome.grader_error,
        r_output_tokens=health.output_tokens,
        r_score=score,
        r_reasoning_tokens=health.reasoning_tokens,
        r_thought_chars=health.thought_chars,
        r_answer_chars=health.answer_chars,
        r_in_thought=health.in_thought,
        r_metrics=r_metrics,
        n_duplicate_judgements=n_dup,
        n_unexpected=n_unexpected,
        n_duplicate_prompts=problems.n_duplicates,
    )


# --------------------------------------------------------------------------- the problems


@dataclass(frozen=True)
class _PromptColumns:
    """The prompt-record fields the table reads, one list each, in file order."""

    ids: list[Any]
    hashes: list[Any]
    clusters: list[Any]
    validated: bool
    """Every value has its schema type (the decoder checked them)."""
    given_order: list[int] | None
    """Positions sorted by problem id, from a writer that sorted them (validated columns only)."""
    lines: list[int] | None
    """1-based line of each record; ``None``: record ``i`` is on line ``i + 1``."""

    def line(self, i: int) -> int:
        return i + 1 if self.lines is None else self.lines[i]


def _prompt_columns(
    prompts: list[dict[str, Any]] | JsonlColumns, prompt_lines: list[int] | None
) -> _PromptColumns:
    """The problem id, content hash and cluster of every prompt record."""
    if isinstance(prompts, JsonlColumns):
        pc = prompts.columns
        return _PromptColumns(
            ids=pc["problem_id"],
            hashes=pc["content_hash"],
            clusters=pc["cluster"],
            validated=prompts.validated,
            given_order=prompts.order if prompts.validated else None,
            lines=prompts.lines if prompt_lines is None else prompt_lines,
        )
    return _PromptColumns(
        ids=[r.get("problem_id") for r in prompts],
        hashes=[r.get("content_hash") for r in prompts],
        clusters=[r.get("cluster") for r in prompts],
        validated=False,
        given_order=None,
        lines=prompt_lines,
    )


@dataclass(frozen=True)
class _Problems:
    """The task's problems in canonical order (sorted by id)."""

    ids: list[str]
    order: list[int] | range
    """Position of each problem's (first) prompt record."""
    n_duplicates: int
    """Prompt records repeating a problem with the same content (ignored)."""


def _canonical_problems(prompts: _PromptColumns, path: Any) -> _Problems:
    """The problems sorted by id; a record without an id, or two records of one problem
    with different content, is a :class:`DataError`."""
    if prompts.validated or all(type(pid) is str for pid in prompts.ids):
        found = _distinct_sorted_ids(prompts)
        if found is not None:
            order, ids = found
            return _Problems(ids, order, 0)
    return _first_record_of_each_problem(prompts, path)


def _distinct_sorted_ids(prompts: _PromptColumns) -> tuple[list[int] | range, list[str]] | None:
    """The common case, without a dict: every id a distinct non-empty string (sorted, no two
    neighbours equal), often already in order (then not sorted again). ``None`` otherwise."""
    p_ids = prompts.ids
    order: list[int] | range
    if prompts.given_order is None and all(map(operator.lt, p_ids, islice(p_ids, 1, None))):
        order, ids = range(len(p_ids)), list(p_ids)
    else:
        order = (
            prompts.given_order
            if prompts.given_order is not None
            else sorted(range(len(p_ids)), key=p_ids.__getitem__)
        )
        ids = list(map(p_ids.__getitem__, order))
        if any(map(operator.eq, ids, islice(ids, 1, None))):
            return None
    if ids and ids[0] == "":
        return None
    return order, ids


def _first_record_of_each_problem(prompts: _PromptColumns, path: Any) -> _Problems:
    """The general case: each problem's first prompt record, duplicates counted."""
    seen: dict[str, int] = {}  # problem id -> position of its first prompt record
    n_duplicates = 0
    for i, pid in enumerate(prompts.ids):
        if not isinstance(pid, str) or not pid:
            raise _bad(path, prompts.line(i), "prompt record has no 'problem_id' string")
        first = seen.setdefault(pid, i)
        if first != i:
            if prompts.hashes[first] != prompts.hashes[i]:
                raise _bad(
                    path,
                    prompts.line(i),
                    f"problem {pid!r} appears twice with different content; remove one of the records",
                )
            n_duplicates += 1
    ids = sorted(seen)
    return _Problems(ids, list(map(seen.__getitem__, ids)), n_duplicates)


# --------------------------------------------------------------------------- judgement columns


def _check_judgement_types(judgements: JsonlColumns, path: Any) -> None:
    """Every judgement field the table reads has its type (unless the decoder checked them)."""
    if judgements.validated:
        return
    for name, kinds, optional in _COLUMN_TYPES:
        if name in judgements.columns:
            _check_column(
                judgements.columns[name], kinds, name, path, judgements.line_of, optional=optional
            )


def _problem_positions(
    judgements: JsonlColumns,
    prompt_ids: list[Any],
    problems: _Problems,
    prompts_path: Any,
    judgements_path: Any,
) -> tuple[np.ndarray, bool]:
    """Each judgement's problem as its position in canonical order (int64), and whether the
    positions are a permutation (one judgement per prompt record, in the same order)."""
    nJ = judgements.n
    judged_ids = judgements.columns["problem_id"]
    if nJ and problems.n_duplicates == 0 and nJ == len(prompt_ids) and judged_ids == prompt_ids:
        # its problem's position is the rank of the prompt record
        pos = np.empty(nJ, np.int64)
        pos[np.asarray(problems.order, dtype=np.int64)] = np.arange(nJ, dtype=np.int64)
        return pos, True
    if not nJ:
        return np.zeros(0, np.int64), False
    pos_of = dict(zip(problems.ids, range(len(problems.ids))))
    pos = np.fromiter(map(pos_of.get, judged_ids, repeat(-1)), dtype=np.int64, count=nJ)
    if pos.min() < 0:
        i = int(np.argmin(pos))
        raise _bad(
            judgements_path,
            judgements.line_of(i),
            f"judgement for problem {judged_ids[i]!r}, which has no prompt record in {prompts_path}; "
            "the files do not belong together (regrade the run)",
        )
    return pos, False


# A column holding one value throughout (an import's rollout index 0, status "ok", no token
# counts, ...) becomes an array without converting each entry: list.count runs in C.


def _index_column(judgements: JsonlColumns, path: Any) -> np.ndarray:
    """The rollout index of each judgement (int64); a negative one is a :class:`DataError`."""
    nJ, column = judgements.n, judgements.columns["index"]
    if not nJ:
        return np.zeros(0, np.int64)
    idx = np.zeros(nJ, np.int64) if column.count(0) == nJ else np.array(column, dtype=np.int64)
    if idx.min() < 0:
        i = int(np.argmin(idx))
        raise _bad(path, judgements.line_of(i), f"'index' must be >= 0, got {int(idx[i])}")
    return idx


def _status_column(judgements: JsonlColumns, path: Any) -> np.ndarray:
    """The status of each judgement as its :data:`STATUS_CODES` code (int8)."""
    nJ, column = judgements.n, judgements.columns["status"]
    if not nJ:
        return np.zeros(0, np.int8)
    if column.count("ok") == nJ:
        return np.full(nJ, STATUS_CODES["ok"], np.int8)
    status = np.fromiter(map(STATUS_CODES.get, column, repeat(-1)), dtype=np.int8, count=nJ)
    if status.min() < 0:
        i = int(np.argmin(status))
        raise _bad(
            path,
            judgements.line_of(i),
            f"'status' must be one of {', '.join(ROLLOUT_STATUSES)}, got {column[i]!r}",
        )
    return status


# --------------------------------------------------------------------------- effective records


def _requested_per_problem(
    requested: int | None, n_problems: int, pos: np.ndarray, idx: np.ndarray
) -> np.ndarray:
    """Rollouts requested per problem (int64): ``requested``, or when ``None`` one more than
    the problem's largest index."""
    if requested is not None:
        return np.full(n_problems, int(requested), dtype=np.int64)
    req = np.zeros(n_problems, dtype=np.int64)
    if len(idx):
        np.maximum.at(req, pos, idx + 1)
    return req


def _effective_rows(
    pos: np.ndarray, idx: np.ndarray, req: np.ndarray, pos_is_permutation: bool
) -> tuple[np.ndarray, int, int]:
    """The effective judgements' positions in canonical order, with the counts of those left
    out: ``(rows, n_unexpected, n_duplicate)``. Effective: index below the problem's
    requested count, first record of each (problem, index)."""
    nJ = len(idx)
    keep = idx < req[pos] if nJ else np.zeros(0, bool)
    n_unexpected = int((~keep).sum())
    width = int(idx.max()) + 1 if nJ else 1
    if pos_is_permutation and width == 1 and n_unexpected == 0:
        # one rollout per problem, each once: canonical order is the inverse permutation
        rows = np.empty(nJ, np.int64)
        rows[pos] = np.arange(nJ, dtype=np.int64)
        return rows, n_unexpected, 0
    kept_rows = np.flatnonzero(keep)
    _, first = np.unique((pos * width + idx)[kept_rows], return_index=True)
    return kept_rows[first], n_unexpected, len(kept_rows) - len(first)


# --------------------------------------------------------------------------- per-rollout columns
# C-level conversions (map over operator functions; None becomes NaN in float arrays), taken
# at the effective rows.


@dataclass(frozen=True)
class _JudgementColumns:
    """What the grader decided about each effective rollout."""

    status: np.ndarray
    grader_error: np.ndarray
    gradable: np.ndarray
    correct: np.ndarray
    extracted: np.ndarray
    cluster: np.ndarray


def _judgement_columns(
    judgements: JsonlColumns, rows: np.ndarray, status: np.ndarray, path: Any
) -> _JudgementColumns:
    """Status, gradability and judgement of the effective rollouts; a gradable rollout without
    a judgement is a :class:`DataError`."""
    C, nJ = judgements.columns, judgements.n
    st = status[rows]
    grader_error = _present(C["grader_error"], nJ)[rows]
    gradable = (st == _OK) & ~grader_error
    missing_judgement = gradable & ~_present(C["correct"], nJ)[rows]
    if missing_judgement.any():
        i = int(rows[np.flatnonzero(missing_judgement)[0]])
        raise _bad(
            path,
            judgements.line_of(i),
            "judgement of an 'ok' rollout has no 'correct' and no 'grader_error'; regrade the run",
        )
    correct = _mask(map(operator.is_, C["correct"], repeat(True)), nJ)[rows] & gradable
    extracted = _present(C["extracted"], nJ)[rows] & gradable
    cluster = _cluster_column(C["cluster"], nJ)[rows]
    cluster[~extracted] = -1
    return _JudgementColumns(st, grader_error, gradable, correct, extracted, cluster)


def _cluster_column(column: list[Any], n: int) -> np.ndarray:
    """Answer-cluster labels as int64, -1 where none."""
    if n and column.count(0) == n:
        return np.zeros(n, np.int64)
    return np.nan_to_num(np.array(column, dtype=np.float64).reshape(n), nan=-1).astype(np.int64)


@dataclass(frozen=True)
class _HealthColumns:
    """How each effective rollout ended: truncation, token counts, thought sizes."""

    truncated: np.ndarray
    output_tokens: np.ndarray
    reasoning_tokens: np.ndarray
    thought_chars: np.ndarray
    answer_chars: np.ndarray
    in_thought: np.ndarray


def _health_columns(judgements: JsonlColumns, rows: np.ndarray) -> _HealthColumns:
    """Truncation, output tokens and the thought's health columns of the effective rollouts."""
    C, nJ = judgements.columns, judgements.n
    if nJ and C["finish_reason"].count(None) == nJ:
        truncated = np.zeros(len(rows), bool)
    else:
        truncated = _mask(map(operator.eq, C["finish_reason"], repeat("length")), nJ)[rows]
    in_thought_col = C.get("in_thought")
    if not nJ or in_thought_col is None or in_thought_col.count(None) == nJ:
        in_thought = np.zeros(len(rows), bool)
    else:
        in_thought = _mask(map(operator.is_, in_thought_col, repeat(True)), nJ)[rows]
    thought = {name: _float_column(C.get(name), nJ)[rows] for name in _THOUGHT_FLOATS}
    return _HealthColumns(
        truncated=truncated,
        output_tokens=_float_column(C["output_tokens"], nJ)[rows],
        reasoning_tokens=thought["reasoning_tokens"],
        thought_chars=thought["thought_chars"],
        answer_chars=thought["answer_chars"],
        in_thought=in_thought,
    )


def _score_column(
    judgements: JsonlColumns,
    score_key: str,
    rows: np.ndarray,
    outcome: _JudgementColumns,
    path: Any,
) -> np.ndarray:
    """The score ``score_key`` names, per effective rollout (float64, NaN = none); a gradable
    rollout without one is a :class:`DataError`."""
    if score_key == "correct":
        return outcome.correct.astype(np.float64)
    C = judgements.columns
    if score_key == "score":
        raw = C["score"]
    else:
        name = score_key.split(".", 1)[1]
        raw = [m.get(name) if isinstance(m, dict) else None for m in C["metrics"]]
    _check_column(raw, (int, float), score_key, path, judgements.line_of, optional=True)
    score: np.ndarray = np.array(
        [np.nan if v is None else float(v) for v in raw], dtype=np.float64
    )[rows]
    lacking = outcome.gradable & np.isnan(score)
    if lacking.any():
        i = int(rows[np.flatnonzero(lacking)[0]])
        raise _bad(
            path,
            judgements.line_of(i),
            f"score_key is {score_key!r} but this gradable judgement has no value for it",
        )
    return score


_THOUGHT_FLOATS = ("reasoning_tokens", "thought_chars", "answer_chars")


def _float_column(column: list[Any] | None, n: int) -> np.ndarray:
    """A numeric column as float64, ``None`` (or no column) as NaN; all-None in C speed."""
    if not n or column is None or column.count(None) == n:
        return np.full(n, np.nan)
    return np.array(column, dtype=np.float64).reshape(n)


def _metric_columns(
    raw: list[Any] | None, rows: np.ndarray, path: Any, line_of: Any
) -> dict[str, np.ndarray]:
    """One float column per metric name found in the effective judgements' ``metrics``."""
    if raw is None or raw.count(None) == len(raw):  # C-speed fast path: no metrics at all
        return {}
    kept = [raw[int(i)] for i in rows]
    names: set[str] = set()
    for i, m in zip(rows, kept):
        if m is None:
            continue
        if not isinstance(m, dict) or not all(
            isinstance(k, str) and type(v) in (int, float) for k, v in m.items()
        ):
            raise _bad(
                path,
                line_of(int(i)),
                f"'metrics' must map names to numbers, got {m!r}; regrade the run to rebuild judgements",
            )
        names.update(m)
    columns = {}
    for name in sorted(names):
        columns[name] = np.array(
            [np.nan if m is None or name not in m else float(m[name]) for m in kept],
            dtype=np.float64,
        )
    return columns


def _check_score_key(score_key: str) -> None:
    if score_key in ("correct", "score") or (
        score_key.startswith("metrics.") and len(score_key) > len("metrics.")
    ):
        return
    raise UsageError(f"unknown score_key {score_key!r}; use 'correct', 'score' or 'metrics.<name>'")


def load_task_table(task: TaskFiles, *, settings: dict[str, Any] | None = None) -> TaskTable:
    """Read a task's prompts and judgements from disk into a :class:`TaskTable`."""
    settings = task.read_task() if settings is None else settings
    score_key = settings.get("score_key", "correct")
    prompts = read_jsonl_columns(
        task.prompts, PromptRow, what="prompt records", fix="prompt records need these fields"
    )
    judgements = read_jsonl_columns(
        task.judgements,
        ScoredJudgementRow,  # metrics are always read: reports show every one
        what="judgement records",
        missing_ok=True,
        fix="regrade the run to rebuild judgements",
        presence=("extracted", "grader_error"),  # a report only asks whether they are there
    )
    table = build_task_table(
        prompts,
        judgements,
        requested=settings.get("n_rollouts"),
        prompts_path=task.prompts,
        judgements_path=task.judgements,
        score_key=score_key,
    )
    for name, content in (("prompts.jsonl", prompts), ("judgements.jsonl", judgements)):
        if content.torn_line is not None:
            table.torn_lines[name] = content.torn_line
    return table
