"""The Python API behind ``rolleval regrade``: every stored rollout judged again offline.

The function does everything its CLI command does; the CLI only parses flags and prints.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..records import JudgementRecord, PromptSet, RolloutRecord, TaskSettings, make_judgement
from ..rundir._store import RunDir, collect_warnings
from ..rundir._writer import RunWriter, TaskWriter

__all__ = ["RegradeResult", "regrade_run"]


@dataclass(frozen=True)
class RegradeResult:
    """Per task: how many rollouts were graded (status ``ok``) and how many judgements changed."""

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
    thinking: tuple[str, str] | None = None
    """The thinking delimiters the texts are split by (``None``: graded whole)."""


def _reimport_hint(manifest: Mapping[str, Any]) -> str:
    """For an import that kept its source's judgements: the command that re-imports it with
    rolleval's grader (an import's texts are regraded at import, where every repeat is read)."""
    imp = manifest.get("import")
    if not isinstance(imp, dict) or imp.get("correctness") != "source":
        return ""
    src = shlex.quote(str(imp.get("source") or "SOURCE"))
    return (
        f"; the run was imported with its source's own judgements: re-import it with one of "
        f"rolleval's graders, `rolleval import {imp.get('format') or 'FORMAT'} {src} --out NEW "
        "--regrade TYPE` (TYPE: math, mcq, short_answer)"
    )


def _prepare_regrade(
    task: TaskWriter,
    grader_spec: dict[str, Any] | None,
    notes: list[str],
    thinking: Any = None,
    hint: str = "",
) -> _Regrade:
    from ..grading import check_thinking, make_grader, thinking_of

    files = task.files
    settings = files.read_settings()
    if thinking is not None:
        pair = check_thinking(thinking)
        settings = settings.model_copy(update={"thinking": pair if pair is not None else "none"})
    spec = grader_spec or settings.grader
    if not isinstance(spec, dict):
        raise DataError(
            f"task.json has no grader spec ('grader'); cannot regrade{hint}", path=files.task_json
        )
    grader = make_grader(spec)
    grader.check_available()
    prompts = files.read_prompts()
    if prompts.by_id and all(
        p.reference is None and p.reference_kind == "answer" for p in prompts.by_id.values()
    ):
        raise DataError(
            "no problem has a reference answer (a run imported from a source that does not "
            "store them); cannot regrade: keep the source's own judgements",
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
    return _Regrade(task, settings, grader, prompts, by_problem, old, thinking_of(settings))


def _regrade(
    job: _Regrade,
    *,
    workers: int | None,
    on_progress: Callable[[str, int, int], None] | None,
) -> dict[str, int]:
    from ..grading import grade_problems, grading_inputs, grading_reference, judgement_of

    name = job.task.name
    pids = sorted(job.by_problem)
    inputs = [grading_inputs(job.by_problem[pid], job.thinking) for pid in pids]
    items = [
        (grading_reference(job.grader, job.prompts.by_id[pid]), graded)
        for pid, (graded, _) in zip(pids, inputs)
    ]
    records: list[JudgementRecord] = []
    changed = 0
    graded = 0
    for done, (pid, (_, splits), judgements) in enumerate(
        zip(
            pids,
            inputs,
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
            v = judgement_of(r.index, judgements, splits) if r.status == "ok" else None
            rec = make_judgement(r, v, job.grader.identity, splits.get(r.index))
            graded += v is not None
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
    return {"rollouts": len(records), "graded": graded, "changed": changed}


def regrade_run(
    run: str | os.PathLike[str] | RunDir,
    *,
    task: str | None = None,
    workers: int | None = None,
    grader_spec: dict[str, Any] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    thinking: tuple[str, str] | list[str] | str | None = None,
) -> RegradeResult:
    """Re-judge every stored rollout with each task's current grader (zero model calls).

    Holds the run's write lock throughout. Every task's files are read and checked before
    any is rewritten. The previous judgements are kept as ``judgements.prev.jsonl``; the new
    file replaces the old atomically. Run :func:`report_run` afterwards to refresh the
    reports. ``grader_spec`` replaces the stored grader spec of every task regraded;
    ``thinking`` (``[open, close]`` or ``"none"``) replaces its thinking delimiters (the
    texts are split again: a delimiter fix costs a regrade, never a re-run).
    """
    path = run.path if isinstance(run, RunDir) else Path(run)
    notes: list[str] = []
    out: dict[str, dict[str, int]] = {}
    with (
        RunWriter.resume(path, command="regrade", on_note=notes.append) as writer,
        collect_warnings() as caught,
    ):
        names = [writer.run.require_task(task).name] if task else writer.run.task_names()
        hint = _reimport_hint(writer.run.manifest)
        jobs = [_prepare_regrade(writer.task(n), grader_spec, notes, thinking, hint) for n in names]
        for job in jobs:
            out[job.task.name] = _regrade(job, workers=workers, on_progress=on_progress)
    return RegradeResult(out, notes + [str(w.message) for w in caught])
