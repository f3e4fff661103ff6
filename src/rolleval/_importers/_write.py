"""Writing an imported run: the one place an importer touches the disk.

:func:`write_imported_run` writes through :class:`rolleval.rundir.RunWriter`, which builds
the run in a hidden partial directory beside ``out`` and renames it into place only when
every task was read, written, (re)graded and reported. A failure at any point removes the
partial directory: ``out`` is either absent or a complete run, never a partial one.
"""

from __future__ import annotations

import contextlib
import gc
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import orjson

from .._report._build import InferenceSettings, task_report_of_columns
from .._version import __version__
from ..errors import UsageError
from ..records import (
    DEFAULT_THINKING,
    RunManifest,
    RunSummary,
    TaskSettings,
)
from ..rundir._store import JSON_FILE_OPTIONS, JsonlColumns, validate_model
from ..rundir._table import JUDGEMENT_FIELDS, PromptRow
from ..rundir._writer import RunWriter, TaskWriter
from ._base import ImportedRun, ImportedTask, with_clusters

__all__ = ["ImportResult", "TaskImportResult", "write_imported_run"]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class TaskImportResult:
    """One imported task: an entry of :attr:`ImportResult.tasks`. Frozen.

    Attributes
    ----------
    problems, rollouts : int
        Problems and rollouts written to the run.
    correctness : {"source", "regraded"}
        Where the judgements came from: the source's own per-sample scores, or rolleval's
        grader (``regrade``).
    aligned_by : str
        ``"content_hash"`` (the prompt as sent and the reference) or ``"id"`` (the source
        has no prompt): how the task's problems align with another run's.
    unmapped : list of dict
        Every source field not carried over: ``field``, ``reason``, ``count`` (samples).
    notes : list of str
        Sentences about the source: repeats left out, failed samples, unfinished logs.
    source_metrics : dict
        The source's own aggregate numbers for the task (e.g. lm-eval's
        ``exact_match,<filter>``), as it reported them, for the round trip.
    """

    problems: int
    rollouts: int
    correctness: Literal["source", "regraded"]
    aligned_by: str
    unmapped: list[dict[str, Any]]
    notes: list[str]
    source_metrics: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the task's entry of the manifest's ``"import"``."""
        return {
            "problems": self.problems,
            "rollouts": self.rollouts,
            "correctness": self.correctness,
            "aligned_by": self.aligned_by,
            "unmapped": self.unmapped,
            "notes": self.notes,
            "source_metrics": self.source_metrics,
        }


@dataclass(frozen=True)
class ImportResult:
    """Result of :func:`rolleval.import_run`: what was imported, per task. Frozen.

    ``to_dict()`` is stored in the run's ``manifest.json`` under ``"import"``
    (``docs/importers.md``, "The import summary").

    Attributes
    ----------
    format : str
        The source's format (``"lm-eval"``, ``"inspect"``, ``"lighteval"``,
        ``"tracelens"``, ``"sieval"``).
    source : str
        The file or folder imported, as an absolute path.
    correctness : {"source", "regraded"}
        Where every task's judgements came from (see :class:`TaskImportResult`).
    regrade_grader : dict or None
        The grader spec of the regrade (None: the source's scores).
    tasks : dict of str to TaskImportResult
        Per rolleval task name, in the order imported.
    totals : dict of str to int
        ``tasks``, ``problems`` and ``rollouts`` summed over ``tasks`` (a property).
    """

    format: str
    source: str
    correctness: Literal["source", "regraded"]
    regrade_grader: dict[str, Any] | None
    tasks: dict[str, TaskImportResult]

    @property
    def totals(self) -> dict[str, int]:
        """Tasks, problems and rollouts over every task."""
        return {
            "tasks": len(self.tasks),
            "problems": sum(t.problems for t in self.tasks.values()),
            "rollouts": sum(t.rollouts for t in self.tasks.values()),
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the manifest's ``"import"``."""
        return {
            "format": self.format,
            "source": self.source,
            "correctness": self.correctness,
            "regrade_grader": self.regrade_grader,
            "tasks": {name: t.to_dict() for name, t in self.tasks.items()},
            "totals": self.totals,
        }


def _dir_name(name: str) -> str:
    """A source task name as a directory name that stays inside ``tasks/``."""
    safe = _UNSAFE.sub("_", name).strip(".") or "task"
    return safe


@dataclass
class _Written:
    """What writing a task's records found: counts, content hashes by problem, whether any
    reference exists, and (streamed tasks) the columns its report reads, so the report is
    computed from them instead of re-reading the files just written."""

    problems: int = 0
    rollouts: int = 0
    hashes: dict[str, str] = field(default_factory=dict)
    any_reference: bool = False
    columns: tuple[JsonlColumns, JsonlColumns] | None = None
    hash_columns: tuple[list[str], list[str | None], list[int]] | None = None
    """(Streamed tasks) problem ids, content hashes and the positions sorted by id, instead
    of ``hashes``: task.json's map is written from them (:func:`_task_json`), without a
    dict of a million entries."""


_PROMPT_COLUMNS = list(PromptRow.__struct_fields__)


def _write_records(tw: TaskWriter, task: ImportedTask) -> _Written:
    """Write the task's prompts, rollouts and judgements into the run.

    A streaming task is written batch by batch as the reader yields them (a batch is the
    records of many problems, as encoded lines plus their report columns: a
    :class:`~._batch.LineBatch`), so memory
    stays bounded by a batch of records plus the task's report columns; a task of lists is
    written as it is (its prompts sorted by problem id).
    """
    out = _Written()
    if task.stream is None:
        for p in task.prompts:
            out.problems += 1
            out.any_reference = out.any_reference or p.reference is not None
            if p.content_hash:
                out.hashes[p.problem_id] = p.content_hash
        tw.write_prompts(task.prompts)
        tw.add_rollouts(task.rollouts)
        tw.add_judgements(with_clusters(task.judgements))
        out.rollouts = len(task.rollouts)
        return out

    files = tw.files
    task.record_files = (files.prompts, files.rollouts, files.judgements)
    pcols: dict[str, list[Any]] = {f: [] for f in _PROMPT_COLUMNS}
    jcols: dict[str, list[Any]] = {f: [] for f in JUDGEMENT_FIELDS}
    for batch in task.stream:
        tw.add_encoded_lines(batch.prompts, batch.rollouts, batch.judgements)
        out.problems += batch.n_problems
        out.rollouts += batch.n_rollouts
        out.any_reference = out.any_reference or batch.any_reference
        for cols, more in ((pcols, batch.pcols), (jcols, batch.jcols)):
            for f, col in cols.items():
                col.extend(more[f])
    ids = pcols["problem_id"]
    # sorted once, for task.json's map and for the report's table
    order = sorted(range(len(ids)), key=ids.__getitem__)
    out.hash_columns = (ids, pcols["content_hash"], order)
    out.columns = (
        JsonlColumns(pcols, len(ids), validated=True, order=order),
        JsonlColumns(jcols, len(jcols["problem_id"]), validated=True),
    )
    return out


_MEMBER = b'\n  "problem_hashes": '


def _task_json(
    dumped: dict[str, Any], ids: list[str], hashes: list[str | None], order: list[int]
) -> list[bytes]:
    """The bytes :func:`~rolleval.rundir._store.atomic_write_json` writes for ``dumped`` with
    ``problem_hashes`` = ``{id: hash}`` over the two columns (ids distinct; None hashes left
    out), without having orjson sort the whole file's keys: the members are put in the order
    orjson sorts keys (by code point, which is Python's string order: ``order``, the
    positions sorted by id, shared with the report's table) and dumped apart from the rest.
    Returned as pieces of the file, not copied into one."""
    text = orjson.dumps({**dumped, "problem_hashes": {}}, option=JSON_FILE_OPTIONS)
    placeholder = _MEMBER + b"{}"
    assert text.count(placeholder) == 1  # a top-level key: its indentation is unique
    members = {ids[i]: hashes[i] for i in order if hashes[i] is not None}
    body = orjson.dumps(members, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ")
    head, tail = text.split(placeholder)
    return [head, _MEMBER, body, tail]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while an import runs: it creates millions of
    short-lived acyclic objects (freed by reference counting) beside a growing set of
    long-lived report columns, which the collector would otherwise re-scan over and over
    (about a fifth of the import's time). Restored, on the way out."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
    on_task: Callable[[ImportedTask, TaskImportResult], None] | None = None,
) -> ImportResult:
    """Write ``run`` as a rolleval run directory at ``out`` and return what was imported.

    ``regrade`` is a grader spec: each task's stored rollouts are re-judged with it (the
    source's own judgements stay beside them as ``judgements.prev.jsonl``). The summary is
    stored in ``manifest.json`` under ``"import"``. ``on_task(task, entry)`` is called after
    each task is written (for progress output).
    """
    from .._report._api import report_run

    out = Path(out)
    _check_out(out)
    correctness: Literal["source", "regraded"] = "regraded" if regrade else "source"
    imported: dict[str, TaskImportResult] = {}
    with _gc_paused(), RunWriter.create(out, _manifest(run), command="import") as writer:
        task_reports: dict[str, dict[str, Any]] = {}
        for task in run.tasks:
            task.name = _dir_name(task.name)
            if task.name in imported:
                raise UsageError(
                    f"{run.source}: two source tasks map to the rolleval task {task.name!r}; "
                    "import them separately"
                )
            imported[task.name] = _import_task(writer, run, task, regrade, task_reports)
            entry = imported[task.name]
            if on_task is not None:
                on_task(task, entry)
            del task
        if not imported:
            raise UsageError(f"{run.source}: no task found to import")
        # Absolute: the re-import command a refusal prints must work from any directory.
        source = str(Path(run.source).resolve())
        summary = ImportResult(run.format, source, correctness, regrade, imported)
        writer.write_manifest(
            writer.manifest.model_copy(
                update={"config": RunSummary(model=run.model), "import_": summary.to_dict()}
            )
        )
        report_run(writer.run, task_reports=task_reports)
        _check_out(out)
        writer.finish()
    return summary


def _manifest(run: ImportedRun) -> RunManifest:
    """The imported run's manifest before its tasks are read (model and summary come after)."""
    return RunManifest(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        rolleval_version=__version__,
        status="completed",
        config=RunSummary(model=run.model),
        provenance={"imported": run.provenance},
    )


def _import_task(
    writer: RunWriter,
    run: ImportedRun,
    task: ImportedTask,
    regrade: dict[str, Any] | None,
    task_reports: dict[str, dict[str, Any]],
) -> TaskImportResult:
    """Write one source task (records, then task.json), regrade it when asked, and return its
    summary entry. A streamed task's report, computed from the columns just written, is put
    in ``task_reports`` (unless it is regraded: the report is then of the new judgements)."""
    tw = writer.add_task(TaskSettings(name=task.name), [])
    written = _write_records(tw, task)
    tw.close()
    if run.model is None and isinstance(task.settings.get("source"), dict):
        run.model = task.settings["source"].get("model")
    dumped = _write_settings(tw, run, task, written)
    if regrade is None and written.columns is not None:
        # as read back from task.json: the keys the file holds (None left out)
        task_reports[task.name] = task_report_of_columns(
            tw.files, dumped, *written.columns, InferenceSettings()
        )
    written.columns = None
    if regrade is not None:
        _regrade(writer, run, task, written, regrade)
    return TaskImportResult(
        problems=written.problems,
        rollouts=written.rollouts,
        correctness="regraded" if regrade else "source",
        aligned_by=task.aligned_by,
        unmapped=task.unmapped.as_list(),
        notes=task.notes,
        source_metrics=task.source_metrics,
    )


def _write_settings(
    tw: TaskWriter, run: ImportedRun, task: ImportedTask, written: _Written
) -> dict[str, Any]:
    """Validate the task's settings, write its task.json with the problem hashes, and return
    what the file holds (the settings as dumped)."""
    settings = validate_model(
        {
            "name": task.name,
            "n_rollouts": None,
            "denominator_policy": "judged",
            "score_key": "correct",
            # a new task's delimiters (docs/importers.md): without them the settings read
            # as a task.json before schema 4, graded whole
            "thinking": list(DEFAULT_THINKING),
            **task.settings,
            "n_problems": written.problems,
        },
        TaskSettings,
        path=run.source,
        what=f"settings of source task {task.name!r}",
        fix="the source's settings are not what its format promises",
    )
    # the problem hashes (one per problem, str -> str, built here from validated
    # records) are set after validation and dumped once, for task.json and the report
    dumped = settings.model_dump(mode="json", exclude_none=True)
    if written.hash_columns is not None:
        dumped["problem_hashes"] = {}  # the report does not read them
        tw.write_settings(settings, data=_task_json(dumped, *written.hash_columns))
    else:
        dumped["problem_hashes"] = written.hashes
        settings = settings.model_copy(update={"problem_hashes": written.hashes})
        tw.write_settings(settings, dumped=dumped)
    return dumped


def _regrade(
    writer: RunWriter,
    run: ImportedRun,
    task: ImportedTask,
    written: _Written,
    regrade: dict[str, Any],
) -> None:
    """Re-judge the task's stored rollouts with the ``regrade`` grader spec."""
    from .._runner._regrade import regrade_run

    if not written.any_reference:
        raise UsageError(
            f"{run.source}: --regrade needs the reference answers, which this "
            f"{run.format} source does not carry (task {task.name!r}); import it "
            "without --regrade to keep the source's own judgements"
        )
    # The writer holds the partial directory's lock; regrade takes it again
    # (re-entrant within this process).
    regrade_run(writer.run.path, task=task.name, grader_spec=regrade, workers=0)
