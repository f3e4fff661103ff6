"""Writing an imported run: the one place an importer touches the disk.

:func:`write_imported_run` writes through :class:`rolleval.writer.RunWriter`, which builds
the run in a hidden partial directory beside ``out`` and renames it into place only when
every task was read, written, (re)graded and reported. A failure at any point removes the
partial directory: ``out`` is either absent or a complete run, never a partial one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import UsageError
from ..records import (
    JudgementRecord,
    PromptRecord,
    RolloutRecord,
    RunManifest,
    RunSummary,
    TaskSettings,
)
from ..store import validate_model
from ..writer import RunWriter, TaskWriter
from ._base import ImportedRun, ImportedTask

__all__ = ["write_imported_run"]


def _with_clusters(judgements: list[JudgementRecord]) -> list[JudgementRecord]:
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


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _dir_name(name: str) -> str:
    """A source task name as a directory name that stays inside ``tasks/``."""
    safe = _UNSAFE.sub("_", name).strip(".") or "task"
    return safe


_BATCH = 512
"""Problems buffered between writes of a streaming task (fewer flushes, bounded memory)."""


def _write_records(tw: TaskWriter, task: ImportedTask) -> tuple[int, int, dict[str, str], bool]:
    """Write the task's prompts, rollouts and judgements into the run; return (problems,
    rollouts, content hashes by problem, whether any reference exists).

    A streaming task is consumed problem by problem and written every :data:`_BATCH`
    problems, so memory stays bounded by a batch of problems' records; a task of lists is
    written as it is (its prompts sorted by problem id).
    """
    hashes: dict[str, str] = {}
    n_problems = n_rollouts = 0
    any_reference = False

    def note(p: PromptRecord) -> None:
        nonlocal n_problems, any_reference
        n_problems += 1
        any_reference = any_reference or p.reference is not None
        if p.content_hash:
            hashes[p.problem_id] = p.content_hash

    if task.stream is None:
        for p in task.prompts:
            note(p)
        tw.write_prompts(task.prompts)
        tw.add_rollouts(task.rollouts)
        tw.add_judgements(_with_clusters(task.judgements))
        return n_problems, len(task.rollouts), hashes, any_reference

    prompts: list[PromptRecord] = []
    rollouts: list[RolloutRecord] = []
    judgements: list[JudgementRecord] = []

    def flush() -> None:
        tw.add_prompts(prompts)
        tw.add_rollouts(rollouts)
        tw.add_judgements(judgements)
        prompts.clear()
        rollouts.clear()
        judgements.clear()

    for prompt, chunk_rollouts, chunk_judgements in task.stream:
        note(prompt)
        prompts.append(prompt)
        rollouts.extend(chunk_rollouts)
        judgements.extend(_with_clusters(chunk_judgements))
        n_rollouts += len(chunk_rollouts)
        if len(prompts) >= _BATCH:
            flush()
    flush()
    return n_problems, n_rollouts, hashes, any_reference


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(
            f"{out}: already exists; choose another --out (an import never overwrites)"
        )


def write_imported_run(
    out: Path,
    run: ImportedRun,
    *,
    regrade: dict[str, Any] | None,
    on_task: Callable[[ImportedTask, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Write ``run`` as a rolleval run directory at ``out`` and return the import summary.

    ``regrade`` is a grader spec: each task's stored rollouts are re-judged with it (the
    source's own verdicts stay beside them as ``judgements.prev.jsonl``). The summary is
    stored in ``manifest.json`` under ``"import"``. ``on_task(task, entry)`` is called after
    each task is written (for progress output).
    """
    from ..api import regrade_run, report_run

    out = Path(out)
    _check_out(out)
    summary: dict[str, Any] = {
        "format": run.format,
        "source": str(run.source),
        "correctness": "regraded" if regrade else "source",
        "regrade_grader": regrade,
        "tasks": {},
        "totals": {"tasks": 0, "problems": 0, "rollouts": 0},
    }
    manifest = RunManifest(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        rolleval_version=__version__,
        status="completed",
        config=RunSummary(model=run.model),
        provenance={"imported": run.provenance},
    )
    with RunWriter.create(out, manifest, command="import") as writer:
        names: list[str] = []
        for task in run.tasks:
            task.name = _dir_name(task.name)
            if task.name in names:
                raise UsageError(
                    f"{run.source}: two source tasks map to the rolleval task {task.name!r}; "
                    "import them separately"
                )
            names.append(task.name)
            tw = writer.add_task(TaskSettings(name=task.name), [])
            n_problems, n_rollouts, hashes, any_reference = _write_records(tw, task)
            tw.close()
            if run.model is None and isinstance(task.settings.get("source"), dict):
                run.model = task.settings["source"].get("model")
            tw.write_settings(
                validate_model(
                    {
                        "name": task.name,
                        "n_rollouts": None,
                        "denominator_policy": "judged",
                        "score_key": "correct",
                        **task.settings,
                        "n_problems": n_problems,
                        "problem_hashes": hashes,
                    },
                    TaskSettings,
                    path=run.source,
                    what=f"settings of source task {task.name!r}",
                    fix="the source's settings are not what its format promises",
                )
            )
            if regrade is not None:
                if not any_reference:
                    raise UsageError(
                        f"{run.source}: --regrade needs the reference answers, which this "
                        f"{run.format} source does not carry (task {task.name!r}); import it "
                        "without --regrade to keep the source's own verdicts"
                    )
                # The writer holds the partial directory's lock; regrade takes it again
                # (re-entrant within this process).
                regrade_run(writer.run.path, task=task.name, grader_spec=regrade, workers=0)
            entry = {
                "problems": n_problems,
                "rollouts": n_rollouts,
                "correctness": "regraded" if regrade else "source",
                "aligned_by": task.aligned_by,
                "unmapped": task.unmapped.as_list(),
                "notes": task.notes,
                "source_metrics": task.source_metrics,
            }
            summary["tasks"][task.name] = entry
            summary["totals"]["tasks"] += 1
            summary["totals"]["problems"] += n_problems
            summary["totals"]["rollouts"] += n_rollouts
            if on_task is not None:
                on_task(task, entry)
            del task
        if not names:
            raise UsageError(f"{run.source}: no task found to import")
        writer.write_manifest(
            writer.manifest.model_copy(
                update={"config": RunSummary(model=run.model), "import_": summary}
            )
        )
        report_run(writer.run)
        _check_out(out)
        writer.finish()
    return summary
