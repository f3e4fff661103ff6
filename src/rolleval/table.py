"""Columnar view of one task's stored records: the input of every report and comparison.

:func:`load_task_table` reads ``prompts.jsonl`` and ``judgements.jsonl`` once and returns a
:class:`TaskTable`: per-problem counts in canonical order (problems sorted by id) and flat
per-rollout columns (sorted by problem, then rollout index). Reading order, write order and
resume history never change it.

Effective-record rules (``docs/run-format.md``):

* judgements: the first record for a (problem, index) wins; later ones are counted in
  ``n_duplicate_judgements`` and ignored;
* a judgement for a problem that has no prompt record is a :class:`DataError`;
* rollout indices at or beyond the requested ``n`` are counted (``n_unexpected``) and ignored;
* a requested index with no judgement is *missing* (a harness failure, like an infra error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import DataError
from .records import ROLLOUT_STATUSES
from .store import TaskFiles, read_jsonl

__all__ = ["STATUS_CODES", "TaskTable", "build_task_table", "load_task_table"]

STATUS_CODES = {s: i for i, s in enumerate(ROLLOUT_STATUSES)}
_OK, _TIMEOUT, _INFRA, _SKIPPED = (STATUS_CODES[s] for s in ("ok", "timeout", "infra_error", "skipped"))


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


def _bad(path: Any, line: int, message: str) -> DataError:
    return DataError(message, path=path, line=line)


def _check_column(values: list[Any], kind: type | tuple[type, ...], name: str, path: Any, lines: list[int], *, optional: bool) -> None:
    """Raise a DataError naming the first record whose ``name`` has the wrong type."""
    for v, ln in zip(values, lines):
        if v is None:
            if not optional:
                raise _bad(path, ln, f"record has no {name!r}; every judgement needs it (regrade the run to rebuild judgements)")
        elif not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise _bad(path, ln, f"{name!r} must be {getattr(kind, '__name__', kind)}, got {v!r}; regrade the run to rebuild judgements")


def build_task_table(
    prompts: list[dict[str, Any]],
    judgements: list[dict[str, Any]],
    *,
    requested: int | None,
    prompts_path: Any = "prompts.jsonl",
    prompt_lines: list[int] | None = None,
    judgements_path: Any = "judgements.jsonl",
    judgement_lines: list[int] | None = None,
    score_key: str = "correct",
) -> TaskTable:
    """Build a :class:`TaskTable` from parsed prompt and judgement records.

    ``requested`` is the number of rollouts asked per problem; ``None`` (imported runs with no
    declared ``n``) takes, per problem, one more than the largest index present.
    """
    if prompt_lines is None:
        prompt_lines = list(range(1, len(prompts) + 1))
    if judgement_lines is None:
        judgement_lines = list(range(1, len(judgements) + 1))

    # --- problems, canonical order ---
    seen: dict[str, dict[str, Any]] = {}
    n_dup_prompts = 0
    for rec, ln in zip(prompts, prompt_lines):
        pid = rec.get("problem_id")
        if not isinstance(pid, str) or not pid:
            raise _bad(prompts_path, ln, "prompt record has no 'problem_id' string")
        if pid in seen:
            if seen[pid].get("content_hash") != rec.get("content_hash"):
                raise _bad(prompts_path, ln, f"problem {pid!r} appears twice with different content; remove one of the records")
            n_dup_prompts += 1
            continue
        seen[pid] = rec
    problem_ids = sorted(seen)
    pos_of = {pid: i for i, pid in enumerate(problem_ids)}
    clusters = [seen[p].get("cluster") for p in problem_ids]
    hashes = [seen[p].get("content_hash") for p in problem_ids]
    T = len(problem_ids)

    # --- judgement columns ---
    J = judgements
    pids = [r.get("problem_id") for r in J]
    pos_list = [pos_of.get(p, -1) for p in pids]  # type: ignore[arg-type]
    pos = np.array(pos_list, dtype=np.int64) if J else np.zeros(0, np.int64)
    if J and pos.min() < 0:
        i = int(np.argmin(pos))
        raise _bad(
            judgements_path, judgement_lines[i],
            f"judgement for problem {pids[i]!r}, which has no prompt record in {prompts_path}; "
            "the files do not belong together (regrade the run)",
        )
    idx_list = [r.get("index") for r in J]
    try:
        idx = np.array(idx_list, dtype=np.int64) if J else np.zeros(0, np.int64)
        bad_idx = bool(J) and (idx.min() < 0 or any(type(v) is not int for v in idx_list))
    except (TypeError, ValueError):
        bad_idx = True
    if bad_idx:
        _check_column(idx_list, int, "index", judgements_path, judgement_lines, optional=False)
        i = next(i for i, v in enumerate(idx_list) if v < 0)
        raise _bad(judgements_path, judgement_lines[i], f"'index' must be >= 0, got {idx_list[i]}")
    status_list = [STATUS_CODES.get(r.get("status"), -1) for r in J]  # type: ignore[arg-type]
    status = np.array(status_list, dtype=np.int8) if J else np.zeros(0, np.int8)
    if J and status.min() < 0:
        i = int(np.argmin(status))
        raise _bad(
            judgements_path, judgement_lines[i],
            f"'status' must be one of {', '.join(ROLLOUT_STATUSES)}, got {J[i].get('status')!r}",
        )

    # requested per problem
    if requested is None:
        req = np.zeros(T, dtype=np.int64)
        if J:
            np.maximum.at(req, pos, idx + 1)
    else:
        req = np.full(T, int(requested), dtype=np.int64)

    # keep indices < requested, first record per (problem, index)
    keep = idx < req[pos] if J else np.zeros(0, bool)
    n_unexpected = int((~keep).sum())
    width = int(idx.max()) + 1 if J else 1
    keys = pos * width + idx
    kept_rows = np.flatnonzero(keep)
    _, first = np.unique(keys[kept_rows], return_index=True)
    n_dup = len(kept_rows) - len(first)
    rows = kept_rows[first]  # sorted by key = (problem, index): canonical order

    def col(name: str) -> list[Any]:
        return [J[i].get(name) for i in rows.tolist()]

    correct_raw = col("correct")
    grader_error_raw = col("grader_error")
    extracted_raw = col("extracted")
    cluster_raw = col("cluster")
    finish_raw = col("finish_reason")
    tokens_raw = col("output_tokens")
    sub_lines = [judgement_lines[i] for i in rows.tolist()]
    _check_column(correct_raw, bool, "correct", judgements_path, sub_lines, optional=True)
    _check_column(cluster_raw, int, "cluster", judgements_path, sub_lines, optional=True)
    _check_column(extracted_raw, str, "extracted", judgements_path, sub_lines, optional=True)
    _check_column(tokens_raw, (int, float), "output_tokens", judgements_path, sub_lines, optional=True)

    st = status[rows]
    grader_error = np.array([g is not None for g in grader_error_raw], dtype=bool)
    gradable = (st == _OK) & ~grader_error
    correct = np.array([v is True for v in correct_raw], dtype=bool) & gradable
    # A gradable rollout must have a verdict.
    missing_verdict = gradable & np.array([v is None for v in correct_raw], dtype=bool)
    if missing_verdict.any():
        i = int(np.flatnonzero(missing_verdict)[0])
        raise _bad(
            judgements_path, sub_lines[i],
            "judgement of an 'ok' rollout has no 'correct' and no 'grader_error'; regrade the run",
        )
    extracted = np.array([v is not None for v in extracted_raw], dtype=bool) & gradable
    cluster = np.array([-1 if v is None else v for v in cluster_raw], dtype=np.int64)
    cluster[~extracted] = -1
    truncated = np.array([f == "length" for f in finish_raw], dtype=bool)
    tokens = np.array([np.nan if t is None else t for t in tokens_raw], dtype=np.float64)

    if score_key == "correct":
        score = correct.astype(np.float64)
    elif score_key == "score":
        raw = col("score")
        _check_column(raw, (int, float), "score", judgements_path, sub_lines, optional=True)
        score = np.array([np.nan if v is None else float(v) for v in raw], dtype=np.float64)
        lacking = gradable & np.isnan(score)
        if lacking.any():
            i = int(np.flatnonzero(lacking)[0])
            raise _bad(judgements_path, sub_lines[i], "score_key is 'score' but this gradable judgement has no 'score'")
    elif score_key.startswith("metrics."):
        name = score_key.split(".", 1)[1]
        vals = [(J[i].get("metrics") or {}).get(name) for i in rows.tolist()]
        _check_column(vals, (int, float), score_key, judgements_path, sub_lines, optional=True)
        score = np.array([np.nan if v is None else float(v) for v in vals], dtype=np.float64)
    else:
        raise DataError(
            f"unknown score_key {score_key!r}; use 'correct', 'score' or 'metrics.<name>'",
            path=judgements_path,
        )

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
        r_truncated=truncated,
        r_grader_error=grader_error,
        r_output_tokens=tokens,
        r_score=score,
        n_duplicate_judgements=int(n_dup),
        n_unexpected=n_unexpected,
        n_duplicate_prompts=n_dup_prompts,
    )


def load_task_table(task: TaskFiles, *, settings: dict[str, Any] | None = None) -> TaskTable:
    """Read a task's prompts and judgements from disk into a :class:`TaskTable`."""
    settings = task.read_task() if settings is None else settings
    prompts = read_jsonl(task.prompts, what="prompt records")
    judgements = read_jsonl(task.judgements, what="judgement records", missing_ok=True)
    table = build_task_table(
        prompts.records,
        judgements.records,
        requested=settings.get("n_rollouts"),
        prompts_path=task.prompts,
        prompt_lines=prompts.lines,
        judgements_path=task.judgements,
        judgement_lines=judgements.lines,
        score_key=settings.get("score_key", "correct"),
    )
    for name, content in (("prompts.jsonl", prompts), ("judgements.jsonl", judgements)):
        if content.torn_line is not None:
            table.torn_lines[name] = content.torn_line
    return table
