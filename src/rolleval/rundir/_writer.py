"""The run writer: the one way records get into a run directory.

The runner, ``regrade``, :mod:`rolleval.testing._synthetic` and importers all write through
:class:`RunWriter` and its :class:`TaskWriter` s, which take only :mod:`rolleval.records`
models (never dicts), hold the directory's write lock (:mod:`rolleval.rundir._lock`) for their
whole life, and create a new run atomically::

    from rolleval.records import RunManifest, TaskSettings, PromptRecord, RolloutRecord
    from rolleval.rundir import RunWriter

    with RunWriter.create("runs/imported", RunManifest(run_id="abc", status="completed")) as w:
        t = w.add_task(TaskSettings(name="gsm8k", n_rollouts=4), prompts)  # PromptRecords
        t.add_rollouts(rollouts)  # RolloutRecords
        t.add_judgements(judgements)  # JudgementRecords
        w.finish()  # renamed into place: the run appears complete, or not at all

A new run is built in a hidden directory beside the target (``.<name>.partial-<pid>-<hex>``)
and renamed into place by :meth:`RunWriter.commit` (:meth:`~RunWriter.finish` commits too).
Until then nothing exists at the target; if the writer is left by an exception, the
partial directory is removed. Two writers racing for the same new target: one rename wins,
the other gets exit 2 and leaves nothing behind. The runner commits as soon as the manifest,
``task.json`` and ``prompts.jsonl`` are complete, before its first request, so a crash at any
later moment leaves a directory ``--resume`` continues.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import UsageError
from ..records import (
    JudgementRecord,
    Profile,
    PromptRecord,
    RolloutRecord,
    RunManifest,
    RunStatus,
    TaskSettings,
    dump_record,
)
from ..records._lines import JudgementLine, PromptLine, RolloutLine, encode_lines
from ._lock import LOCK_NAME, RunLock, _pid_alive
from ._store import (
    JsonlAppender,
    RunDir,
    TaskFiles,
    atomic_write_bytes,
    atomic_write_json,
    validate_model,
    write_model,
)

__all__ = ["RunWriter", "TaskWriter"]

R = TypeVar("R", bound=BaseModel)


def _check(record: Any, model: type[R]) -> R:
    if not isinstance(record, model):
        raise TypeError(
            f"the run writer takes {model.__name__} objects (rolleval.records), "
            f"got {type(record).__name__}"
        )
    return record


def _exists_error(path: Path) -> UsageError:
    return UsageError(
        f"{path}: run directory exists; pass --resume to continue it, or choose another --out"
    )


def _remove_abandoned(target: Path, on_note: Callable[[str], None] | None) -> None:
    """Delete partial directories of ``target`` whose builder died (their lock is free)."""
    prefix = f".{target.name}.partial-"
    for partial in target.parent.glob(f"{glob.escape(prefix)}*"):
        pid = partial.name[len(prefix) :].split("-")[0]
        if not pid.isdigit() or _pid_alive(int(pid)) or not (partial / LOCK_NAME).exists():
            continue
        lock = RunLock(partial, command="cleanup")
        try:
            lock.acquire()
        except UsageError:
            continue  # another process is building it right now
        try:
            shutil.rmtree(partial, ignore_errors=True)
        finally:
            lock.release()
        if on_note is not None:
            on_note(f"{partial}: removed a run directory left half-built by a process that died")


def _occupied(path: Path) -> bool:
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


class TaskWriter:
    """Writes one task's files: settings, prompts, and appends rollouts and judgements."""

    def __init__(self, run: RunWriter, name: str):
        self._run = run
        self.name = name
        self._prompts: JsonlAppender | None = None
        self._rollouts: JsonlAppender | None = None
        self._judgements: JsonlAppender | None = None
        self.closed = False

    def _appender(self, which: str) -> JsonlAppender:
        if self.closed:
            raise RuntimeError(f"task writer {self.name!r} is closed")
        app: JsonlAppender | None = getattr(self, which)
        if app is None:
            path = {
                "_prompts": self.files.prompts,
                "_rollouts": self.files.rollouts,
                "_judgements": self.files.judgements,
            }[which]
            app = JsonlAppender(path)
            setattr(self, which, app)
        return app

    @property
    def files(self) -> TaskFiles:
        """The task's paths (inside the partial directory until the run is committed)."""
        return self._run.run.task(self.name)

    def write_settings(
        self,
        settings: TaskSettings,
        *,
        dumped: dict[str, Any] | None = None,
        data: bytes | list[bytes] | None = None,
    ) -> None:
        """Replace ``task.json`` atomically. ``dumped``: the caller's own
        ``settings.model_dump(mode="json", exclude_none=True)`` (a task of a million problems
        dumps its problem hashes once, for this file and its report); ``data``: the file's
        bytes (or pieces of them), as ``atomic_write_json`` would write ``dumped`` (an importer builds the
        problem hashes' part of a large task from its columns)."""
        _check(settings, TaskSettings)
        if settings.name != self.name:
            raise ValueError(f"settings name {settings.name!r} is not task {self.name!r}")
        if data is not None:
            atomic_write_bytes(self.files.task_json, data)
        elif dumped is None:
            write_model(self.files.task_json, settings)
        else:
            atomic_write_json(self.files.task_json, dumped)

    def write_prompts(self, prompts: Iterable[PromptRecord]) -> int:
        """Write ``prompts.jsonl`` atomically, sorted by problem id; returns the count."""
        recs = sorted((_check(p, PromptRecord) for p in prompts), key=lambda p: p.problem_id)
        if self._prompts is not None:
            self._prompts.close()
            self._prompts = None
        atomic_write_bytes(self.files.prompts, b"".join(dump_record(p) for p in recs))
        return len(recs)

    def add_prompts(self, records: Iterable[PromptRecord]) -> None:
        """Append prompt records in one write, in the order given (importers streaming a
        large source, so memory stays bounded; :meth:`write_prompts` writes them sorted)."""
        lines = [dump_record(_check(p, PromptRecord)) for p in records]
        self._appender("_prompts").write_many(lines)

    def add_lines(
        self,
        prompts: list[PromptLine],
        rollouts: list[RolloutLine],
        judgements: list[JudgementLine],
    ) -> None:
        """Append records given as their line structs (:mod:`rolleval.records._lines`,
        the fast serializer of the record models), one write per stream; for writers of very
        many records (importers streaming a large source). Prompts keep the order given."""
        for lines, kind in (
            (prompts, PromptLine),
            (rollouts, RolloutLine),
            (judgements, JudgementLine),
        ):
            if not set(map(type, lines)) <= {kind}:
                raise TypeError(
                    f"add_lines takes {kind.__name__} objects (rolleval.records._lines)"
                )
        self.add_encoded_lines(
            *(encode_lines(lines) if lines else b"" for lines in (prompts, rollouts, judgements))
        )

    def add_encoded_lines(
        self,
        prompts: bytes | list[bytes],
        rollouts: bytes | list[bytes],
        judgements: bytes | list[bytes],
    ) -> None:
        """Append records already encoded as JSONL lines (newline-terminated) by the line
        structs of :mod:`rolleval.records._lines` (or to the same bytes), given per stream
        as bytes or as a list of pieces of whole lines (written without joining them first);
        for writers of very many records that build the lines themselves (the lm-eval
        importer's column path). Nothing is checked here: the caller owns the encoding."""
        for which, data in (
            ("_prompts", prompts),
            ("_rollouts", rollouts),
            ("_judgements", judgements),
        ):
            if data:
                self._appender(which).write_pieces(data if isinstance(data, list) else [data])

    def add_rollout(self, record: RolloutRecord) -> None:
        """Append one rollout attempt (one whole line, flushed)."""
        self._appender("_rollouts").write(dump_record(_check(record, RolloutRecord)))

    def add_rollouts(self, records: Iterable[RolloutRecord]) -> None:
        """Append rollout attempts in one write."""
        lines = [dump_record(_check(r, RolloutRecord)) for r in records]
        self._appender("_rollouts").write_many(lines)

    def add_judgements(self, records: Sequence[JudgementRecord]) -> None:
        """Append judgements (a problem's, together) in one write."""
        lines = [dump_record(_check(r, JudgementRecord)) for r in records]
        self._appender("_judgements").write_many(lines)

    def replace_judgements(
        self, records: Sequence[JudgementRecord], *, backup: bool = False
    ) -> None:
        """Replace ``judgements.jsonl`` atomically (``backup``: keep the old one as
        ``judgements.prev.jsonl``)."""
        data = b"".join(dump_record(_check(r, JudgementRecord)) for r in records)
        if self._judgements is not None:
            self._judgements.close()
            self._judgements = None
        path = self.files.judgements
        if backup and path.exists():
            atomic_write_bytes(path.with_name("judgements.prev.jsonl"), path.read_bytes())
        atomic_write_bytes(path, data)

    def write_profile(self, profile: Profile) -> None:
        """Replace ``profile.json`` atomically."""
        write_model(self.files.profile, _check(profile, Profile))

    def close(self) -> None:
        """Flush and close the appenders; later appends are refused (idempotent)."""
        for app in (self._prompts, self._rollouts, self._judgements):
            if app is not None:
                app.close()
        self._prompts = self._rollouts = self._judgements = None
        self.closed = True


class RunWriter:
    """Holds a run directory's write lock and writes its files (see the module docstring).

    Make one with :meth:`create` (a new run) or :meth:`resume` (an existing one); use it as
    a context manager, which closes it (and releases the lock) on the way out.
    """

    def __init__(self, run: RunDir, lock: RunLock, *, target: Path, committed: bool):
        self.run = run
        self._lock = lock
        self.target = target
        self.committed = committed
        self._tasks: dict[str, TaskWriter] = {}
        self._closed = False

    # ---------------------------------------------------------------- opening

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        manifest: RunManifest | dict[str, Any],
        *,
        command: str = "run",
        on_note: Callable[[str], None] | None = None,
    ) -> RunWriter:
        """Start a new run at ``path`` (refused if it exists and is not empty), built in a
        partial directory beside it until :meth:`commit`."""
        target = Path(path)
        info = (
            manifest
            if isinstance(manifest, RunManifest)
            else validate_model(manifest, RunManifest, path=target, what="run manifest")
        )
        if _occupied(target):
            raise _exists_error(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(target, on_note)
        staging = target.parent / f".{target.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        try:
            (staging / "tasks").mkdir()
            lock = RunLock(staging, command=command, on_note=on_note).acquire()
            writer = cls(RunDir(staging, info), lock, target=target, committed=False)
            writer.run.write_manifest()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return writer

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        *,
        command: str = "resume",
        on_note: Callable[[str], None] | None = None,
    ) -> RunWriter:
        """Take the write lock of the existing run at ``path`` (re-reading its manifest
        under the lock). Writes nothing until a method is called."""
        target = Path(path)
        RunDir.open(target)  # a clean error for a path that is not a run, before locking
        lock = RunLock(target, command=command, on_note=on_note).acquire()
        try:
            run = RunDir.open(target)
        except BaseException:
            lock.release()
            raise
        return cls(run, lock, target=target, committed=True)

    # ---------------------------------------------------------------- writing

    @property
    def manifest(self) -> RunManifest:
        return self.run.info

    def write_manifest(self, manifest: RunManifest | None = None) -> None:
        """Replace ``manifest.json`` atomically (with ``manifest``, or the current one)."""
        if manifest is not None:
            self.run.info = _check(manifest, RunManifest)
        self.run.write_manifest()

    def set_status(self, status: RunStatus) -> None:
        self.run.info.status = status
        self.run.write_manifest()

    def add_task(self, settings: TaskSettings, prompts: Iterable[PromptRecord]) -> TaskWriter:
        """Add a task to a new run: its ``task.json`` and ``prompts.jsonl``."""
        _check(settings, TaskSettings)
        if self.committed:
            raise UsageError(f"{self.target}: tasks are added before the run is committed")
        if settings.name in self._tasks:
            raise UsageError(f"task {settings.name!r} is listed twice; list each task once")
        writer = TaskWriter(self, settings.name)
        writer.files.dir.mkdir(parents=True)
        writer.write_prompts(prompts)
        writer.write_settings(settings)
        self._tasks[settings.name] = writer
        if settings.name not in self.run.info.tasks:
            self.run.info.tasks.append(settings.name)
            self.run.write_manifest()
        return writer

    def task(self, name: str) -> TaskWriter:
        """The writer of an existing task of this run."""
        if name not in self._tasks:
            self.run.require_task(name)
            self._tasks[name] = TaskWriter(self, name)
        return self._tasks[name]

    def commit(self) -> None:
        """Rename the partial directory into place (a no-op once committed)."""
        if self.committed:
            return
        staging = self.run.path
        try:
            os.rename(staging, self.target)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                self._discard()
                raise _exists_error(self.target) from None
            raise
        self._lock.moved(self.target)
        self.run.path = self.target
        self.committed = True

    def finish(self, status: RunStatus | None = None) -> RunDir:
        """Commit (if not yet), set the final ``status`` (if given), close the writer."""
        self.commit()
        if status is not None:
            self.set_status(status)
        self.close()
        return self.run

    # ---------------------------------------------------------------- closing

    def _discard(self) -> None:
        for t in self._tasks.values():
            t.close()
        self._lock.release()
        shutil.rmtree(self.run.path, ignore_errors=True)
        self._closed = True

    def close(self) -> None:
        """Close every task writer and release the lock; an uncommitted run is discarded."""
        if self._closed:
            return
        if not self.committed:
            self._discard()
            return
        for t in self._tasks.values():
            t.close()
        self._closed = True
        self._lock.release()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
            return
        with contextlib.suppress(Exception):  # the exception in flight is the one to report
            self.close()
