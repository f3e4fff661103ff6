"""The Python API behind the offline commands: report, regrade, show.

Each function does everything its CLI command does; the CLI only parses flags and prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DataError, UsageError
from .records import (
    JudgementRecord,
    PromptSet,
    RolloutRecord,
    RunReport,
    TaskSettings,
    make_judgement,
)
from .report import InferenceSettings, build_run_report, write_run_report
from .runlock import hold_run_lock
from .store import RunDir, collect_warnings
from .writer import RunWriter, TaskWriter

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
    rng: int = 0,
    write: bool = True,
    task_reports: dict[str, dict[str, Any]] | None = None,
) -> ReportResult:
    """Recompute a run's report from its stored judgements (zero model calls).

    ``rng`` is the bootstrap's seed (an int: it is recorded in the report as ``seed``; the
    CLI's ``--seed``). ``task_reports``: reports of tasks whose records a writer still holds
    in memory (:func:`rolleval.report.task_report_of_columns`), used instead of re-reading
    those tasks when computed with the same settings.

    Writes ``report.json`` (run level) and each task's ``report.json`` atomically unless
    ``write`` is false, holding the run's write lock while it reads and writes. The same run directory and settings always give the same bytes.
    """
    rd = run if isinstance(run, RunDir) else RunDir.open(run)
    inference = InferenceSettings(
        n_resamples=n_resamples, confidence_level=confidence_level, rng=rng
    )
    if not write:
        report, warns = build_run_report(rd, inference=inference, task_reports=task_reports)
        return ReportResult(report, warns, None)
    notes: list[str] = []
    with hold_run_lock(rd.path, command="report", on_note=notes.append):
        report, warns = build_run_report(rd, inference=inference, task_reports=task_reports)
        RunReport.model_validate(report)  # the envelope written is the model's
        write_run_report(rd, report)
    return ReportResult(report, notes + warns, rd.report_path)


@dataclass(frozen=True)
class RegradeResult:
    """Per task: how many rollouts were judged and how many verdicts changed."""

    tasks: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Regrade:
    """One task's regrade, read and checked before anything is written."""

    task: TaskWriter
    settings: TaskSettings
    grader: Any
    prompts: PromptSet
    by_problem: dict[str, list[RolloutRecord]]
    old: dict[tuple[str, int], JudgementRecord]


def _prepare_regrade(
    task: TaskWriter, grader_spec: dict[str, Any] | None, notes: list[str]
) -> _Regrade:
    from .grading import make_grader

    files = task.files
    settings = files.read_settings()
    spec = grader_spec or settings.grader
    if not isinstance(spec, dict):
        raise DataError(
            "task.json has no grader spec ('grader'); cannot regrade", path=files.task_json
        )
    grader = make_grader(spec)
    grader.check_available()
    prompts = files.read_prompts()
    if prompts.by_id and all(
        p.reference is None and p.reference_kind == "answer" for p in prompts.by_id.values()
    ):
        raise DataError(
            "no problem has a reference answer (a run imported from a source that does not "
            "store them); cannot regrade: keep the source's own verdicts",
            path=files.prompts,
        )
    rollouts = files.read_rollouts(missing_ok=False)
    for i, rec in enumerate(rollouts.records):
        if rec.problem_id not in prompts.by_id:
            line = rollouts.line_of(i)
            raise DataError(
                f"rollout for problem {rec.problem_id!r}, which has no prompt record; the files do not belong together",
                path=files.rollouts,
                line=line,
            )
    by_problem: dict[str, list[RolloutRecord]] = {}
    for key in sorted(rollouts.effective):
        by_problem.setdefault(key[0], []).append(rollouts.effective[key])
    try:
        old = files.read_judgements().effective
    except DataError as exc:  # the judgements are what regrade rebuilds
        notes.append(f"previous judgements not compared ({exc})")
        old = {}
    return _Regrade(task, settings, grader, prompts, by_problem, old)


def _regrade(
    job: _Regrade,
    *,
    workers: int | None,
    on_progress: Callable[[str, int, int], None] | None,
) -> dict[str, int]:
    from .grading import grade_problems, grading_reference

    name = job.task.name
    pids = sorted(job.by_problem)
    items = [
        (
            grading_reference(job.grader, job.prompts.by_id[pid]),
            [(r.index, r.grader_input()) for r in job.by_problem[pid] if r.status == "ok"],
        )
        for pid in pids
    ]
    records: list[JudgementRecord] = []
    changed = 0
    judged = 0
    for done, (pid, verdicts) in enumerate(
        zip(
            pids,
            grade_problems(
                job.grader,
                items,
                workers=workers,
                timeout=job.grader.problem_timeout_s,
            ),
        ),
        1,
    ):
        if on_progress is not None:
            on_progress(name, done, len(pids))
        for r in job.by_problem[pid]:
            v = verdicts.get(r.index) if r.status == "ok" else None
            rec = make_judgement(r, v, job.grader.identity)
            judged += v is not None
            before = job.old.get((pid, r.index))
            if before is not None and (before.correct, before.extracted) != (
                rec.correct,
                rec.extracted,
            ):
                changed += 1
            records.append(rec)
    job.task.replace_judgements(records, backup=True)
    job.task.write_settings(
        job.settings.model_copy(
            update={"grader": job.grader.spec, "grader_identity": job.grader.identity}
        )
    )
    return {"rollouts": len(records), "judged": judged, "changed": changed}


def regrade_run(
    run: str | os.PathLike[str] | RunDir,
    *,
    task: str | None = None,
    workers: int | None = None,
    grader_spec: dict[str, Any] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> RegradeResult:
    """Re-judge every stored rollout with each task's current grader (zero model calls).

    Holds the run's write lock throughout. Every task's files are read and checked before
    any is rewritten. The previous judgements are kept as ``judgements.prev.jsonl``; the new
    file replaces the old atomically. Run :func:`report_run` afterwards to refresh the
    reports. ``grader_spec`` replaces the stored grader spec of every task regraded.
    """
    path = run.path if isinstance(run, RunDir) else Path(run)
    notes: list[str] = []
    out: dict[str, dict[str, int]] = {}
    with (
        RunWriter.resume(path, command="regrade", on_note=notes.append) as writer,
        collect_warnings() as caught,
    ):
        names = [writer.run.require_task(task).name] if task else writer.run.task_names()
        jobs = [_prepare_regrade(writer.task(n), grader_spec, notes) for n in names]
        for job in jobs:
            out[job.task.name] = _regrade(job, workers=workers, on_progress=on_progress)
    return RegradeResult(out, notes + [str(w.message) for w in caught])


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
            prompts = tf.read_prompts().by_id
            if problem is not None and problem not in prompts:
                continue
            found = True
            rolls = tf.read_rollouts().effective
            judg = tf.read_judgements().effective
            if problem is not None:
                rolls = {k: v for k, v in rolls.items() if k[0] == problem}
                judg = {k: v for k, v in judg.items() if k[0] == problem}
            keys = sorted(set(rolls) | set(judg))
            per: dict[str, list[dict[str, Any]]] = {}
            for key in keys:
                jr = judg.get(key)
                rr = rolls.get(key)
                item = {
                    "index": key[1],
                    "status": rr.status if rr is not None else jr.status if jr else None,
                    "text": rr.text if rr is not None else None,
                    "finish_reason": (
                        rr.finish_reason
                        if rr is not None and rr.finish_reason is not None
                        else jr.finish_reason
                        if jr is not None
                        else None
                    ),
                    "error": rr.error if rr is not None else None,
                    "extracted": jr.extracted if jr is not None else None,
                    "correct": jr.correct if jr is not None else None,
                    "cluster": jr.cluster if jr is not None else None,
                    "grader_error": jr.grader_error if jr is not None else None,
                    "metrics": dict(jr.metrics) if jr is not None and jr.metrics else {},
                    "judge_raw": jr.judge_raw if jr is not None else None,
                }
                gradable = item["status"] == "ok" and item["grader_error"] is None and jr
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
                p = prompts.get(pid)
                out.append(
                    {
                        "task": name,
                        "problem_id": pid,
                        "prompt": p.model_dump()["prompt"] if p is not None else None,
                        "reference": p.reference if p is not None else None,
                        "rollouts": per.get(pid, []),
                    }
                )
    if problem is not None and not found:
        raise UsageError(f"no problem {problem!r} in {rd.path} (tasks: {', '.join(names)})")
    return out
