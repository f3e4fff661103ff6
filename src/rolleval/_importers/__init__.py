"""Importing other harnesses' logs as rolleval runs.

``import_run(format, source, out)`` reads what lm-evaluation-harness, Inspect AI, lighteval,
TraceLens or SiEval wrote and writes a rolleval run directory, so ``report``, ``show``,
``compare``, ``gate`` and ``baseline save`` work on it unchanged. Each format is one module
with a reader (:class:`~._base.Reader`); all of them produce the same typed records and are
written by one function (:func:`._write.write_imported_run`). ``docs/importers.md`` maps
every field of every format.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import DataError, UsageError
from ._base import ImportedRun, ImportedTask, Reader
from ._inspect import InspectReader
from ._io import DEFAULT_MAX_UNZIPPED_BYTES
from ._lighteval import LightevalReader
from ._sieval import SiEvalReader
from ._tracelens import TraceLensReader
from ._write import ImportResult, TaskImportResult, write_imported_run
from .lmeval._samples import LmEvalReader

__all__ = [
    "FORMATS",
    "ImportResult",
    "ImportedRun",
    "ImportedTask",
    "TaskImportResult",
    "detect_format",
    "import_run",
]

_READERS: dict[str, Reader] = {
    r.name: r
    for r in (LmEvalReader(), InspectReader(), LightevalReader(), TraceLensReader(), SiEvalReader())
}
#: The FORMAT names ``rolleval import`` accepts.
FORMATS: tuple[str, ...] = tuple(_READERS)


def detect_format(source: str | os.PathLike[str]) -> str | None:
    """The format ``source`` looks like (from names and first bytes), or ``None``."""
    path = Path(source)
    for name, reader in _READERS.items():
        if reader.looks_like(path):
            return name
    return None


def import_run(
    format: str,
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    regrade: str | dict[str, Any] | None = None,
    max_unzipped_bytes: int = DEFAULT_MAX_UNZIPPED_BYTES,
    on_task: Callable[[ImportedTask, TaskImportResult], None] | None = None,
    task_name: str | list[str] | dict[str, str] | None = None,
) -> ImportResult:
    """Import ``source`` (written by the tool ``format``) as a rolleval run at ``out``.

    ``regrade`` re-judges every stored rollout with rolleval's grader of that type (a type
    name such as ``"short_answer"``, or a full grader spec); by default judgements come from
    the source's own per-sample scores. Returns what was imported, per task
    (:class:`ImportResult`; its ``to_dict()`` is stored in the run's ``manifest.json`` under
    ``"import"``). ``on_task(task, result)`` is called as each task is written. Nothing is
    left at ``out`` on failure.

    ``task_name`` names the imported task(s): a name (the source must hold one task), or
    ``OLD=NEW`` renames (a list, or a mapping), e.g. so that imports from two harnesses
    share a task name for ``compare``.
    """
    if format not in _READERS:
        raise UsageError(f"unknown import format {format!r}; accepted: {', '.join(FORMATS)}")
    path = Path(source)
    if not path.exists():
        raise DataError("source not found; pass the file or folder the tool wrote", path=path)
    reader = InspectReader(max_unzipped_bytes) if format == "inspect" else _READERS[format]
    if not reader.looks_like(path):
        guess = detect_format(path)
        if guess is not None:
            raise UsageError(
                f"{path}: looks like {guess} output, not {format}; run: rolleval import {guess} {path} --out {out}"
            )
        raise DataError(
            f"not recognisable as {format} output (nor as any format rolleval imports: {', '.join(FORMATS)}); "
            "pass the file or folder the tool wrote",
            path=path,
        )
    spec: dict[str, Any] | None
    if regrade is None:
        spec = None
    else:
        from ..grading import make_grader

        spec = {"type": regrade} if isinstance(regrade, str) else dict(regrade)
        grader = make_grader(spec)
        grader.check_available()
        spec = grader.spec
    run = reader.read(path, regrade=spec["type"] if spec else None)
    if task_name:
        run.tasks = _renamed(run.tasks, task_name, path)
    return write_imported_run(Path(out), run, regrade=spec, on_task=on_task)


def _renamed(
    tasks: Iterator[ImportedTask], task_name: str | list[str] | dict[str, str], path: Path
) -> Iterator[ImportedTask]:
    """The source's tasks under the names ``task_name`` gives (see :func:`import_run`)."""
    items = [task_name] if isinstance(task_name, str) else task_name
    if isinstance(items, dict):
        renames, single = dict(items), None
    else:
        plain = [i for i in items if "=" not in i]
        if plain and len(items) > 1:
            raise UsageError(
                f"--task-name: give one NAME, or OLD=NEW renames, not both ({', '.join(items)})"
            )
        single = plain[0].strip() if plain else None
        renames = dict(i.split("=", 1) for i in items if "=" in i)
        renames = {k.strip(): v.strip() for k, v in renames.items()}
    seen: list[str] = []
    for task in tasks:
        seen.append(task.name)
        if single is not None:
            if len(seen) > 1:
                raise UsageError(
                    f"{path}: --task-name {single} names one task, but the source holds several "
                    f"({', '.join(seen)}, ...); rename each with --task-name OLD=NEW"
                )
            task.name = single
        elif task.name in renames:
            task.name = renames.pop(task.name)
        yield task
    if renames:
        raise UsageError(
            f"{path}: --task-name renames task(s) {', '.join(renames)} the source does not hold "
            f"(it holds: {', '.join(seen) or 'none'})"
        )
