"""The Python API behind the offline commands: report, regrade, show.

Each function does everything its CLI command does; the CLI only parses flags and prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .errors import DataError, UsageError
from .records import effective_rollouts, make_judgement
from .report import InferenceSettings, build_run_report, write_run_report
from .store import (
    RunDir,
    TaskFiles,
    atomic_write_bytes,
    atomic_write_json,
    collect_warnings,
    read_jsonl,
)

__all__ = ["RegradeResult", "ReportResult", "regrade_run", "report_run", "show_records"]


@dataclass(frozen=True)
class ReportResult:
    """What :func:`report_run` computed and where it wrote it."""

    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None


def report_run(
    run: str | os.PathLike[str] | RunDir,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    write: bool = True,
) -> ReportResult:
    """Recompute a run's report from its stored judgements (zero model calls).

    Writes ``report.json`` (run level) and each task's ``report.json`` atomically unless
    ``write`` is false. The same run directory and settings always give the same bytes.
    """
    rd = run if isinstance(run, RunDir) else RunDir.open(run)
    inference = InferenceSettings(
        n_resamples=n_resamples, confidence_level=confidence_level, seed=seed
    )
    report, warns = build_run_report(rd, inference=inference)
    if write:
        write_run_report(rd, report)
    return ReportResult(report, warns, rd.report_path if write else None)


@dataclass(frozen=True)
class RegradeResult:
    """Per task: how many rollouts were judged and how many verdicts changed."""

    tasks: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)


def _references(task: TaskFiles) -> dict[str, Any]:
    content = read_jsonl(task.prompts, what="prompt records")
    refs: dict[str, Any] = {}
    for rec, ln in zip(content.records, content.lines):
        pid = rec.get("problem_id")
        if not isinstance(pid, str):
            raise DataError("prompt record has no 'problem_id' string", path=task.prompts, line=ln)
        refs.setdefault(pid, rec.get("reference"))
    return refs


def regrade_task(
    task: TaskFiles,
    *,
    workers: int | None = None,
    grader_spec: dict[str, Any] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, int]:
    """Rebuild one task's judgements from its stored rollouts with the current grader.

    ``on_progress(task, problems_done, problems_total)`` is called after each problem.
    """
    from .grading import grade_problems, make_grader

    settings = task.read_task()
    spec = grader_spec or settings.get("grader")
    if not isinstance(spec, dict):
        raise DataError(
            "task.json has no grader spec ('grader'); cannot regrade", path=task.task_json
        )
    grader = make_grader(spec)
    grader.check_available()
    refs = _references(task)
    content = read_jsonl(task.rollouts, what="rollout records")
    for rec, ln in zip(content.records, content.lines):
        index = rec.get("index")
        if (
            not isinstance(rec.get("problem_id"), str)
            or isinstance(index, bool)
            or not isinstance(index, int)
            or index < 0
        ):
            raise DataError(
                "rollout record needs 'problem_id' (string) and 'index' (integer >= 0)",
                path=task.rollouts,
                line=ln,
            )
        if rec["problem_id"] not in refs:
            raise DataError(
                f"rollout for problem {rec['problem_id']!r}, which has no prompt record; the files do not belong together",
                path=task.rollouts,
                line=ln,
            )
    chosen, _dups = effective_rollouts(content.records)
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(chosen):
        by_problem.setdefault(key[0], []).append(chosen[key])
    pids = sorted(by_problem)
    items = [
        (
            refs[pid],
            [(r["index"], r.get("text") or "") for r in by_problem[pid] if r.get("status") == "ok"],
        )
        for pid in pids
    ]
    old = {}
    if task.judgements.exists():
        prev = read_jsonl(task.judgements, what="judgement records")
        for rec in prev.records:
            old.setdefault((rec.get("problem_id"), rec.get("index")), rec)
    lines: list[bytes] = []
    changed = 0
    judged = 0
    for done, (pid, verdicts) in enumerate(
        zip(pids, grade_problems(grader, items, workers=workers)), 1
    ):
        if on_progress is not None:
            on_progress(task.name, done, len(pids))
        for r in by_problem[pid]:
            v = verdicts.get(r["index"]) if r.get("status") == "ok" else None
            rec = make_judgement(r, v, grader.identity)
            judged += v is not None
            before = old.get((pid, r["index"]))
            if before is not None and (before.get("correct"), before.get("extracted")) != (
                rec.get("correct"),
                rec.get("extracted"),
            ):
                changed += 1
            lines.append(orjson.dumps(rec) + b"\n")
    if task.judgements.exists():
        backup = task.judgements.with_name("judgements.prev.jsonl")
        atomic_write_bytes(backup, task.judgements.read_bytes())
    atomic_write_bytes(task.judgements, b"".join(lines))
    settings["grader"] = grader.spec
    settings["grader_identity"] = grader.identity
    atomic_write_json(task.task_json, settings)
    return {"rollouts": len(lines), "judged": judged, "changed": changed}


def regrade_run(
    run: str | os.PathLike[str] | RunDir,
    *,
    task: str | None = None,
    workers: int | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> RegradeResult:
    """Re-judge every stored rollout with each task's current grader (zero model calls).

    The previous judgements are kept as ``judgements.prev.jsonl``; the new file replaces the
    old atomically. Run :func:`report_run` afterwards to refresh the reports.
    """
    rd = run if isinstance(run, RunDir) else RunDir.open(run)
    tasks = [rd.require_task(task)] if task else list(rd.tasks())
    out: dict[str, dict[str, int]] = {}
    with collect_warnings() as caught:
        for tf in tasks:
            out[tf.name] = regrade_task(tf, workers=workers, on_progress=on_progress)
    return RegradeResult(out, [str(w.message) for w in caught])


def _keyed(path: Path, what: str, *, indexed: bool = True) -> list[dict[str, Any]]:
    """Records of a JSONL file whose ``problem_id`` (and ``index``) have the right types;
    a record without them is a :class:`DataError` naming the file and line."""
    content = read_jsonl(path, what=what, missing_ok=indexed)
    for rec, line in zip(content.records, content.lines):
        index = rec.get("index")
        pid = rec.get("problem_id")
        bad_pid = not isinstance(pid, str) or not pid
        if bad_pid or (
            indexed and (isinstance(index, bool) or not isinstance(index, int) or index < 0)
        ):
            field = "problem_id" if bad_pid else "index"
            kind = "a non-empty string" if field == "problem_id" else "an integer >= 0"
            raise DataError(
                f"{field} must be {kind}, got {rec.get(field)!r:.40}; restore the file or rerun",
                path=path,
                line=line,
            )
    return content.records


def show_records(
    run: str | os.PathLike[str] | RunDir,
    *,
    task: str | None = None,
    problem: str | None = None,
    failures: bool = False,
    unextracted: bool = False,
) -> list[dict[str, Any]]:
    """Joined records for reading: one dict per problem with its prompt, reference and rollouts.

    Each rollout carries the raw text and its judgement. ``failures`` keeps rollouts that are
    not correct (wrong, unextracted, infra or grader errors); ``unextracted`` keeps gradable
    rollouts with no extracted answer. Problems with no rollout left are dropped.
    """
    rd = run if isinstance(run, RunDir) else RunDir.open(run)
    names = [task] if task else rd.task_names()
    out: list[dict[str, Any]] = []
    found = False
    with collect_warnings():
        for name in names:
            tf = rd.require_task(name)
            prompts = {
                r["problem_id"]: r
                for r in _keyed(tf.prompts, "prompt records", indexed=False)
                if "problem_id" in r
            }
            if problem is not None and problem not in prompts:
                continue
            found = True
            rolls, _ = effective_rollouts(
                [
                    r
                    for r in _keyed(tf.rollouts, "rollout records")
                    if problem is None or r.get("problem_id") == problem
                ]
            )
            judg: dict[tuple[str, int], dict[str, Any]] = {}
            for r in _keyed(tf.judgements, "judgement records"):
                if problem is None or r.get("problem_id") == problem:
                    judg.setdefault((r.get("problem_id"), r.get("index")), r)
            keys = sorted(set(rolls) | set(judg))
            per: dict[str, list[dict[str, Any]]] = {}
            for key in keys:
                j = judg.get(key, {})
                r = rolls.get(key, {})
                item = {
                    "index": key[1],
                    "status": r.get("status", j.get("status")),
                    "text": r.get("text"),
                    "finish_reason": r.get("finish_reason", j.get("finish_reason")),
                    "error": r.get("error"),
                    "extracted": j.get("extracted"),
                    "correct": j.get("correct"),
                    "cluster": j.get("cluster"),
                    "grader_error": j.get("grader_error"),
                }
                gradable = item["status"] == "ok" and item["grader_error"] is None and j
                if failures and item["correct"] is True:
                    continue
                if unextracted and not (gradable and item["extracted"] is None):
                    continue
                per.setdefault(key[0], []).append(item)
            for pid in sorted(
                per
                if (failures or unextracted)
                else set(per) | ({problem} if problem else set(prompts))
            ):
                p = prompts.get(pid, {})
                out.append(
                    {
                        "task": name,
                        "problem_id": pid,
                        "prompt": p.get("prompt"),
                        "reference": p.get("reference"),
                        "rollouts": per.get(pid, []),
                    }
                )
    if problem is not None and not found:
        raise UsageError(f"no problem {problem!r} in {rd.path} (tasks: {', '.join(names)})")
    return out
