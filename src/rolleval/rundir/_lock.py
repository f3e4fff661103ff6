"""One writer per run directory: an exclusive ``fcntl`` lock on ``RUN/.rolleval.lock``.

Every command that writes into a run directory (``run``, ``run --resume``, ``regrade``,
``report`` when it writes, importers) holds the lock for its whole life. A second writer is
refused at once with a :class:`~rolleval.errors.UsageError` (exit 2) naming the holder's pid
and host, before it changes anything.

The lock is ``flock(LOCK_EX | LOCK_NB)`` on the lock file, so the kernel drops it when the
holder dies, even by ``kill -9``. While held, the file holds a
:class:`~rolleval.records.LockHolder` (pid, host, command, since); a clean release empties
it. A non-empty lock file found by a process that *gets* the lock was therefore left by a
holder that died: the lock is taken over and the caller gets a note naming the dead holder.
The file itself is never deleted (deleting it would let two processes lock two different
files of the same name).

Locks are re-entrant within a process: ``run`` holds its run's lock and calls ``report``,
which asks for the same lock again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import orjson
from pydantic import ValidationError

from ..errors import UsageError
from ..records import LockHolder

__all__ = ["LOCK_NAME", "RunLock", "hold_run_lock"]

LOCK_NAME = ".rolleval.lock"

_held: dict[str, tuple[int, int]] = {}  # real path of the lock file -> (fd, depth)
_guard = threading.Lock()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_holder(fd: int) -> LockHolder | None:
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    if not data.strip():
        return None
    try:
        return LockHolder.model_validate(orjson.loads(data))
    except (orjson.JSONDecodeError, ValidationError, Exception):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _describe(holder: LockHolder | None) -> str:
    if holder is None:
        return "another rolleval process"
    return (
        f"rolleval {holder.command} (pid {holder.pid} on host {holder.host}, since {holder.since})"
    )


class RunLock:
    """The write lock of one run directory (see the module docstring).

    ``lock_dir`` is the directory that holds the lock file: the run directory itself, or
    the temporary directory a new run is built in before it is renamed into place (the
    lock moves with it, being on the same file).
    """

    def __init__(
        self,
        lock_dir: str | os.PathLike[str],
        *,
        command: str,
        on_note: Callable[[str], None] | None = None,
    ):
        self.path = Path(lock_dir) / LOCK_NAME
        self.command = command
        self.on_note = on_note
        self._key: str | None = None

    def acquire(self) -> RunLock:
        """Take the lock, or raise :class:`UsageError` naming the process that holds it."""
        key = os.path.realpath(self.path)
        with _guard:
            if key in _held:
                fd, depth = _held[key]
                _held[key] = (fd, depth + 1)
                self._key = key
                return self
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise UsageError(
                    f"{self.path.parent}: {_describe(holder)} is writing this run directory; "
                    "wait for it to finish (or stop it), then retry"
                ) from None
            except BaseException:
                os.close(fd)
                raise
            stale = _read_holder(fd)
            info = LockHolder(
                pid=os.getpid(), host=socket.gethostname(), command=self.command, since=_now()
            )
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, orjson.dumps(info.model_dump(mode="json")) + b"\n")
            _held[key] = (fd, 1)
            self._key = key
        if stale is not None and self.on_note is not None:
            if stale.host == info.host and not _pid_alive(stale.pid):
                why = "no longer running"
            else:
                why = "it no longer holds the lock"
            self.on_note(
                f"{self.path.parent}: took over the write lock left by {_describe(stale)}: {why}"
            )
        return self

    def moved(self, lock_dir: str | os.PathLike[str]) -> None:
        """Record that the directory holding the lock was renamed to ``lock_dir``."""
        new = Path(lock_dir) / LOCK_NAME
        with _guard:
            if self._key is not None and self._key in _held:
                _held[os.path.realpath(new)] = _held.pop(self._key)
                self._key = os.path.realpath(new)
        self.path = new

    def release(self) -> None:
        """Give the lock back (the outermost release empties the lock file and unlocks)."""
        with _guard:
            if self._key is None or self._key not in _held:
                return
            fd, depth = _held[self._key]
            if depth > 1:
                _held[self._key] = (fd, depth - 1)
                self._key = None
                return
            del _held[self._key]
            self._key = None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def hold_run_lock(
    run_dir: str | os.PathLike[str],
    *,
    command: str,
    on_note: Callable[[str], None] | None = None,
) -> Iterator[RunLock]:
    """``with hold_run_lock(path, command="regrade"):`` hold ``path``'s write lock."""
    lock = RunLock(run_dir, command=command, on_note=on_note)
    with lock:
        yield lock
