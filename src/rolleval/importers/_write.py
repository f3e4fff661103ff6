"""Writing an imported run: the one place an importer touches the disk.

:func:`write_imported_run` builds the whole run directory in a temporary folder beside
``out`` and renames it into place only when every task was read, written, (re)graded and
reported. A failure at any point removes the temporary folder: ``out`` is either absent or
a complete run, never a partial one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .._version import __version__
from ..errors import UsageError
from ..records import JudgementRecord, dump_record
from ..store import RunDir, TaskFiles, atomic_write_json
from ._base import ImportedRun, ImportedTask

__all__ = ["write_imported_run"]


def _line(record: BaseModel) -> bytes:
    # Imported prompts may lack the prompt text (PromptRecord.model_construct): no warnings.
    return dump_record(record.model_dump(exclude_none=True, warnings=False))


def _judgement_lines(judgements: list[JudgementRecord]) -> bytes:
    """Judgement lines, filling in maj@n answer clusters the source did not give: rollouts
    of one problem whose extracted answers are the same string share the lowest such index."""
    lowest: dict[tuple[str, str], int] = {}
    for j in judgements:
        if j.cluster is None and j.extracted is not None and j.gradable:
            key = (j.problem_id, j.extracted)
            lowest[key] = min(lowest.get(key, j.index), j.index)
    out = []
    for j in judgements:
        data = j.model_dump(exclude_none=True)
        if j.cluster is None and j.extracted is not None and j.gradable:
            data["cluster"] = lowest[(j.problem_id, j.extracted)]
        out.append(dump_record(data))
    return b"".join(out)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _dir_name(name: str) -> str:
    """A source task name as a directory name that stays inside ``tasks/``."""
    safe = _UNSAFE.sub("_", name).strip(".") or "task"
    return safe


def _write_records(tf: TaskFiles, task: ImportedTask) -> tuple[int, int, dict[str, str], bool]:
    """Write the task's three record files (inside the temporary run, so plain writes);
    return (problems, rollouts, content hashes by problem, whether any reference exists).

    A streaming task is consumed problem by problem, so memory stays bounded by one
    problem's records; a task of lists is written as it is.
    """
    hashes: dict[str, str] = {}
    n_problems = n_rollouts = 0
    any_reference = False
    chunks = task.stream if task.stream is not None else [(None, task.rollouts, task.judgements)]
    with (
        open(tf.prompts, "wb") as fp,
        open(tf.rollouts, "wb") as fr,
        open(tf.judgements, "wb") as fj,
    ):
        if task.stream is None:
            for p in task.prompts:
                fp.write(_line(p))
                n_problems += 1
                any_reference = any_reference or p.reference is not None
                if p.content_hash:
                    hashes[p.problem_id] = p.content_hash
        for prompt, rollouts, judgements in chunks:
            if prompt is not None:
                fp.write(_line(prompt))
                n_problems += 1
                any_reference = any_reference or prompt.reference is not None
                if prompt.content_hash:
                    hashes[prompt.problem_id] = prompt.content_hash
            fr.write(b"".join(_line(r) for r in rollouts))
            n_rollouts += len(rollouts)
            fj.write(_judgement_lines(judgements))
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
    from ..api import regrade_task, report_run

    out = Path(out)
    _check_out(out)
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".{out.name}.importing-{uuid.uuid4().hex[:8]}"
    summary: dict[str, Any] = {
        "format": run.format,
        "source": str(run.source),
        "correctness": "regraded" if regrade else "source",
        "regrade_grader": regrade,
        "tasks": {},
        "totals": {"tasks": 0, "problems": 0, "rollouts": 0},
    }
    try:
        rd = RunDir.create(
            tmp,
            {
                "run_id": uuid.uuid4().hex,
                "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "rolleval_version": __version__,
                "status": "completed",
                "config": {"model": run.model, "n_rollouts": None, "seed": None},
                "tasks": [],
                "provenance": {"imported": run.provenance},
            },
        )
        names: list[str] = []
        for task in run.tasks:
            task.name = _dir_name(task.name)
            if task.name in names:
                raise UsageError(
                    f"{run.source}: two source tasks map to the rolleval task {task.name!r}; "
                    "import them separately"
                )
            names.append(task.name)
            tf = rd.task(task.name)
            tf.dir.mkdir(parents=True)
            n_problems, n_rollouts, hashes, any_reference = _write_records(tf, task)
            if run.model is None and isinstance(task.settings.get("source"), dict):
                run.model = task.settings["source"].get("model")
            settings = {
                "name": task.name,
                "n_rollouts": None,
                "denominator_policy": "judged",
                "score_key": "correct",
                **task.settings,
                "n_problems": n_problems,
                "problem_hashes": hashes,
            }
            atomic_write_json(tf.task_json, settings)
            if regrade is not None:
                if not any_reference:
                    raise UsageError(
                        f"{run.source}: --regrade needs the reference answers, which this "
                        f"{run.format} source does not carry (task {task.name!r}); import it "
                        "without --regrade to keep the source's own verdicts"
                    )
                regrade_task(tf, grader_spec=regrade, workers=0)
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
        rd.manifest["tasks"] = names
        rd.manifest["config"]["model"] = run.model
        rd.manifest["import"] = summary
        rd.write_manifest()
        report_run(rd)
        _check_out(out)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
    return summary
