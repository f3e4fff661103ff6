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
from ..records import JudgementRecord, PromptRecord, RunManifest, RunSummary, TaskSettings
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


def _write_records(tw: TaskWriter, task: ImportedTask) -> tuple[list[PromptRecord], int]:
    """Stream the task's rollouts and judgements into the run; return its prompts (one per
    problem, written by the caller at the end) and the number of rollouts.

    A streaming task is consumed problem by problem, so memory stays bounded by one
    problem's rollouts plus the prompts; a task of lists is written as it is.
    """
    prompts: list[PromptRecord] = list(task.prompts) if task.stream is None else []
    n_rollouts = 0
    chunks = task.stream if task.stream is not None else [(None, task.rollouts, task.judgements)]
    for prompt, rollouts, judgements in chunks:
        if prompt is not None:
            prompts.append(prompt)
        tw.add_rollouts(rollouts)
        n_rollouts += len(rollouts)
        tw.add_judgements(_with_clusters(judgements))
    return prompts, n_rollouts


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
            prompts, n_rollouts = _write_records(tw, task)
            n_problems = tw.write_prompts(prompts)
            tw.close()
            any_reference = any(p.reference is not None for p in prompts)
            hashes = {p.problem_id: p.content_hash for p in prompts if p.content_hash}
            del prompts
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
