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
#: be added to a row above or listed here (``tests/test_record_contract.py`` checks it).
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
    """
    p_validated = False
    if isinstance(prompts, JsonlColumns):
        pc = prompts.columns
        p_ids, p_hashes, p_clusters = pc["problem_id"], pc["content_hash"], pc["cluster"]
        p_validated = prompts.validated
        if prompt_lines is None:
            prompt_lines = prompts.lines  # None: record i is on line i + 1
    else:
        p_ids = [r.get("problem_id") for r in prompts]
        p_hashes = [r.get("content_hash") for r in prompts]
        p_clusters = [r.get("cluster") for r in prompts]

    def p_line(i: int) -> int:
        return i + 1 if prompt_lines is None else prompt_lines[i]

    _check_score_key(score_key)
    fields = JUDGEMENT_FIELDS
    if not isinstance(judgements, JsonlColumns):
        judgements = JsonlColumns(
            {f: [r.get(f) for r in judgements] for f in fields}, len(judgements)
        )
    C = judgements.columns
    line_of = judgements.line_of
    nJ = judgements.n

    # --- problems, canonical order ---
    nP = len(p_ids)
    # the common case, without a dict: every id a distinct non-empty string (sorted, no two
    # neighbours equal), often already in order (then not sorted again)
    order: list[int] | range | None = None  # prompt positions in canonical order
    given = prompts.order if isinstance(prompts, JsonlColumns) and p_validated else None
    if p_validated or all(type(pid) is str for pid in p_ids):
        if given is None and all(map(operator.lt, p_ids, islice(p_ids, 1, None))):
            order, problem_ids = range(nP), list(p_ids)
        else:
            order = given if given is not None else sorted(range(nP), key=p_ids.__getitem__)
            problem_ids = list(map(p_ids.__getitem__, order))
            if any(map(operator.eq, problem_ids, islice(problem_ids, 1, None))):
                order = None
        if order is not None and nP and problem_ids[0] == "":
            order = None
    n_dup_prompts = 0
    if order is None:
        seen: dict[str, int] = {}  # problem id -> position of its first prompt record
        for i, pid in enumerate(p_ids):
            if not isinstance(pid, str) or not pid:
                raise _bad(prompts_path, p_line(i), "prompt record has no 'problem_id' string")
            first = seen.setdefault(pid, i)
            if first != i:
                if p_hashes[first] != p_hashes[i]:
                    raise _bad(
                        prompts_path,
                        p_line(i),
                        f"problem {pid!r} appears twice with different content; remove one of the records",
                    )
                n_dup_prompts += 1
        problem_ids = sorted(seen)
        order = list(map(seen.__getitem__, problem_ids))
    clusters = list(map(p_clusters.__getitem__, order))
    hashes = list(map(p_hashes.__getitem__, order))
    T = len(problem_ids)

    # --- judgement columns: validate types (unless the decoder did), then convert ---
    pos_is_permutation = False
    if not judgements.validated:
        for name, kinds, optional in _COLUMN_TYPES:
            if name in C:
                _check_column(C[name], kinds, name, judgements_path, line_of, optional=optional)
    if nJ and n_dup_prompts == 0 and nJ == nP and C["problem_id"] == p_ids:
        # one judgement per prompt record, in the same order: its problem's position is the
        # rank of the prompt record
        pos = np.empty(nJ, np.int64)
        pos[np.asarray(order, dtype=np.int64)] = np.arange(nJ, dtype=np.int64)
        pos_is_permutation = True
    elif nJ:
        pos_of = dict(zip(problem_ids, range(T)))
        pos = np.fromiter(map(pos_of.get, C["problem_id"], repeat(-1)), dtype=np.int64, count=nJ)
    else:
        pos = np.zeros(0, np.int64)
    if nJ and not pos_is_permutation and pos.min() < 0:
        i = int(np.argmin(pos))
        raise _bad(
            judgements_path,
            line_of(i),
            f"judgement for problem {C['problem_id'][i]!r}, which has no prompt record in {prompts_path}; "
            "the files do not belong together (regrade the run)",
        )
    # a column holding one value throughout (an import's rollout index 0, status "ok", no
    # token counts, ...) becomes an array without converting each entry: list.count runs in C
    if nJ and C["index"].count(0) == nJ:
        idx = np.zeros(nJ, np.int64)
    else:
        idx = np.array(C["index"], dtype=np.int64) if nJ else np.zeros(0, np.int64)
    if nJ and idx.min() < 0:
        i = int(np.argmin(idx))
        raise _bad(judgements_path, line_of(i), f"'index' must be >= 0, got {int(idx[i])}")
    if nJ and C["status"].count("ok") == nJ:
        status = np.full(nJ, STATUS_CODES["ok"], np.int8)
    else:
        status = (
            np.fromiter(map(STATUS_CODES.get, C["status"], repeat(-1)), dtype=np.int8, count=nJ)
            if nJ
            else np.zeros(0, np.int8)
        )
    if nJ and status.min() < 0:
        i = int(np.argmin(status))
        raise _bad(
            judgements_path,
            line_of(i),
            f"'status' must be one of {', '.join(ROLLOUT_STATUSES)}, got {C['status'][i]!r}",
        )

    # requested per problem
    if requested is None:
        req = np.zeros(T, dtype=np.int64)
        if nJ:
            np.maximum.at(req, pos, idx + 1)
    else:
        req = np.full(T, int(requested), dtype=np.int64)

    # keep indices < requested, first record per (problem, index), canonical order
    keep = idx < req[pos] if nJ else np.zeros(0, bool)
    n_unexpected = int((~keep).sum())
    width = int(idx.max()) + 1 if nJ else 1
    kept_rows = np.flatnonzero(keep)
    if pos_is_permutation and width == 1 and n_unexpected == 0:
        # one rollout per problem, each once: canonical order is the inverse permutation
        rows = np.empty(nJ, np.int64)
        rows[pos] = np.arange(nJ, dtype=np.int64)
        n_dup = 0
    else:
        _, first = np.unique((pos * width + idx)[kept_rows], return_index=True)
        n_dup = len(kept_rows) - len(first)
        rows = kept_rows[first]

    # C-level conversions (map over operator functions; None becomes NaN in float arrays)
    correct_all = _mask(map(operator.is_, C["correct"], repeat(True)), nJ)
    has_verdict = _present(C["correct"], nJ)
    grader_error_all = _present(C["grader_error"], nJ)
    extracted_all = _present(C["extracted"], nJ)
    if nJ and C["finish_reason"].count(None) == nJ:
        truncated_all = np.zeros(nJ, bool)
    else:
        truncated_all = _mask(map(operator.eq, C["finish_reason"], repeat("length")), nJ)
    if nJ and C["cluster"].count(0) == nJ:
        cluster_all = np.zeros(nJ, np.int64)
    else:
        cluster_all = np.nan_to_num(
            np.array(C["cluster"], dtype=np.float64).reshape(nJ), nan=-1
        ).astype(np.int64)
    if nJ and C["output_tokens"].count(None) == nJ:
        tokens_all = np.full(nJ, np.nan)
    else:
        tokens_all = np.array(C["output_tokens"], dtype=np.float64).reshape(nJ)

    thought_columns = {name: _float_column(C.get(name), nJ)[rows] for name in _THOUGHT_FLOATS}
    in_thought_col = C.get("in_thought")
    if not nJ or in_thought_col is None or in_thought_col.count(None) == nJ:
        in_thought = np.zeros(len(rows), bool)
    else:
        in_thought = _mask(map(operator.is_, in_thought_col, repeat(True)), nJ)[rows]

    st = status[rows]
    grader_error = grader_error_all[rows]
    gradable = (st == _OK) & ~grader_error
    missing_verdict = gradable & ~has_verdict[rows]
    if missing_verdict.any():
        i = int(rows[np.flatnonzero(missing_verdict)[0]])
        raise _bad(
            judgements_path,
            line_of(i),
            "judgement of an 'ok' rollout has no 'correct' and no 'grader_error'; regrade the run",
        )
    correct = correct_all[rows] & gradable
    extracted = extracted_all[rows] & gradable
    cluster = cluster_all[rows]
    cluster[~extracted] = -1

    if score_key == "correct":
        score = correct.astype(np.float64)
    else:
        if score_key == "score":
            raw = C["score"]
        else:
            name = score_key.split(".", 1)[1]
            raw = [m.get(name) if isinstance(m, dict) else None for m in C["metrics"]]
        _check_column(raw, (int, float), score_key, judgements_path, line_of, optional=True)
        score = np.array([np.nan if v is None else float(v) for v in raw], dtype=np.float64)[rows]
        lacking = gradable & np.isnan(score)
        if lacking.any():
            i = int(rows[np.flatnonzero(lacking)[0]])
            raise _bad(
                judgements_path,
                line_of(i),
                f"score_key is {score_key!r} but this gradable judgement has no value for it",
            )

    r_metrics = _metric_columns(C.get("metrics"), rows, judgements_path, line_of)

    return TaskTable(
        problem_ids=problem_ids,
        clusters=clusters,
        content_hashes=hashes,
        requested=req,
        r_problem=pos[rows],
        r_index=idx[rows],
        r_status=st,
        r_gradable=gradable,
        r_correct=correct,
        r_extracted=extracted,
        r_cluster=cluster,
        r_truncated=truncated_all[rows],
        r_grader_error=grader_error,
        r_output_tokens=tokens_all[rows],
        r_score=score,
        r_reasoning_tokens=thought_columns["reasoning_tokens"],
        r_thought_chars=thought_columns["thought_chars"],
        r_answer_chars=thought_columns["answer_chars"],
        r_in_thought=in_thought,
        r_metrics=r_metrics,
        n_duplicate_judgements=int(n_dup),
        n_unexpected=n_unexpected,
        n_duplicate_prompts=n_dup_prompts,
    )


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
