"""Chunks of a large JSONL file, converted by worker processes, handed back in file order.

A samples file of a gigabyte takes seconds of per-line work that needs no shared state (the
column path of :mod:`._strict`). :class:`Converted` splits the file, from a byte offset
on, into segments of whole lines; each worker reads its segments itself (the file is never
sent through a pipe) and converts them a chunk at a time; the reading process gets, in file
order, each chunk's place in the file and its converted records (a run of converted chunks
merged into one), or None where the chunk did not fit, and reads that chunk itself
(``os.pread``) for the generic path.

Given the output files (``sink``), a worker appends a wholly converted segment's records to
them itself, when it is that segment's turn (a shared counter: every earlier segment is in
the files) and its keys continue the increasing run of the ones written so far; the reading
process then gets only the report's columns, and the record bytes never cross a pipe. Any
other segment is the reading process's: it writes its records, then hands the turn on
(:meth:`Converted.release`).

Workers are forked (on Linux) when the process runs one thread (no lock can be held by a
thread that does not exist in the child), spawned otherwise. If the pool breaks (a worker
killed) before its segment was written, the rest of the file is converted in the reading
process; after, the import stops with an error (the writer leaves nothing behind). At most
``2 * workers`` segments are in flight, so memory stays bounded by a few segments' records
whatever the file's size. With one CPU, or a small file, the same chunks are converted in
this process (:func:`serial_chunks`): the output does not depend on how many processes made
it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import RunError
from .._io import newlines

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["Chunk", "Converted", "serial_chunks", "usable_cpus"]

SEGMENT_BYTES = 2 << 20
"""Bytes of the file per task handed to a worker."""


class Chunk(NamedTuple):
    """A run of whole lines: its first line's number, place in the file, the bytes (None
    when a worker converted it: read them with ``os.pread`` if needed), whether its last
    line ends with a newline, and the converter's output (None: it did not fit).

    From workers given a sink, also: the segment it belongs to, whether it is the
    segment's last chunk, and whether a worker already appended its records to the files
    (``out`` then holds the report's columns only)."""

    number: int
    offset: int
    length: int
    data: bytes | None
    terminated: bool
    out: Any
    segment: int = -1
    end_of_segment: bool = False
    written: bool = False


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _pieces(data: bytes, offset: int, size: int) -> Iterator[tuple[int, bytes, bool]]:
    """``(offset, chunk, terminated)``: ``data`` (whole lines, the last one ending with a
    newline unless it ends the file) in runs of whole lines of about ``size`` bytes, each
    without its last newline."""
    pos, end = 0, len(data)
    while pos < end:
        cut = data.rfind(b"\n", pos, pos + size)
        if cut < 0:  # a line longer than size
            cut = data.find(b"\n", pos + size)
            if cut < 0:
                yield offset + pos, data[pos:], False
                return
        yield offset + pos, data[pos:cut], True
        pos = cut + 1


def _segment_data(path: str, start: int, a: int, b: int) -> tuple[int, bytes]:
    """The lines that start in ``[a, b)`` (the first of them at ``start`` when a == start):
    their offset and bytes."""
    with open(path, "rb") as fh:
        if a > start:
            fh.seek(a - 1)
            fh.readline()  # the rest of the line holding byte a - 1: it belongs to the left
        else:
            fh.seek(a)
        pos = fh.tell()
        if pos >= b:
            return pos, b""
        data = fh.read(b - pos)
        if data and not data.endswith(b"\n"):
            data += fh.readline()  # the line that crosses b is this segment's
        return pos, data


_converter: Any = None
_gate: Any = None
_fds: list[int] = []


class _Gate:
    """Whose turn it is to append to the output files: shared by the reading process and
    the workers (``turn``: the segment whose records go next, -1 before the first; ``high``
    and ``ordered``: the last key written, while every key so far increased)."""

    def __init__(self, ctx: Any, high: int | None):
        self.cond = ctx.Condition()
        self.turn = ctx.RawValue("q", -1)
        self.high = ctx.RawValue("q", high if high is not None else 0)
        self.ordered = ctx.RawValue("b", int(high is not None))
        self.abort = ctx.RawValue("b", 0)

    def release(self, segment: int, high: int | None) -> None:
        """Segment ``segment``'s records are in the files; ``high``: the last key so far, or
        None once the keys stopped increasing (then only the reading process writes)."""
        with self.cond:
            self.ordered.value = int(high is not None)
            if high is not None:
                self.high.value = high
            self.turn.value = segment + 1
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.abort.value = 1
            self.cond.notify_all()


def _init(make: Callable[[Any], Any], spec: Any, gate: Any = None, sink: Any = None) -> None:
    global _converter, _gate, _fds
    _converter = make(spec)
    _gate = gate
    _fds = [os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) for p in sink or ()]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _append_if_turn(index: int, out: Any) -> Any:
    """Append a wholly converted segment's records when it is its turn and its keys continue
    the increasing run; its report columns then, else None (the reading process writes)."""
    first, last = _converter.span(out)
    streams, columns = _converter.split(out)
    g = _gate
    with g.cond:
        while g.turn.value != index and not g.abort.value:
            g.cond.wait(1.0)
        if g.abort.value or not g.ordered.value or first <= g.high.value:
            return None
        for fd, data in zip(_fds, streams):
            _write_all(fd, data)
        g.high.value = last
        g.turn.value = index + 1
        g.cond.notify_all()
    return columns


def _convert_segment(
    path: str, start: int, a: int, b: int, size: int, index: int = -1
) -> list[tuple[int, int, int, bytes | None, bool, Any, bool]]:
    """``(offset, length, lines, data, terminated, packed out, written)`` per chunk of the
    segment, or per run of converted chunks: the converter's ``pack`` sends a run's outputs
    as one (fewer, larger objects through the pipe) where it can merge them; the bytes come
    back only for a chunk the converter could not take. A segment converted whole (every
    chunk, merged into one) is appended to the files here when it can be (``written``: only
    its columns come back)."""
    pos, data = _segment_data(path, start, a, b)
    result: list[tuple[int, int, int, bytes | None, bool, Any, bool]] = []
    run: list[tuple[int, int, int, bool, Any]] = []  # converted chunks not yet sent
    pack = _converter.pack
    convert = _converter.convert

    def flush() -> None:
        packed = pack([c[4] for c in run]) if len(run) > 1 else None
        if packed is not None:
            off, _, _, _, _ = run[0]
            last_off, last_len, _, terminated, _ = run[-1]
            lines = sum(c[2] for c in run)
            result.append((off, last_off + last_len - off, lines, None, terminated, packed, False))
        else:
            result.extend(
                (off, n, lines, None, t, pack([out]), False) for off, n, lines, t, out in run
            )
        run.clear()

    for off, chunk, terminated in _pieces(data, pos, size):
        out = convert(chunk) if chunk else None
        lines = newlines(chunk) + 1
        if out is None:
            flush()
            result.append((off, len(chunk), lines, chunk, terminated, None, False))
        else:
            run.append((off, len(chunk), lines, terminated, out))
    flush()
    if _gate is not None and len(result) == 1 and result[0][5] is not None:
        off, length, lines, _, terminated, out, _ = result[0]
        columns = _append_if_turn(index, out)
        if columns is not None:
            return [(off, length, lines, None, terminated, columns, True)]
    return result


def serial_chunks(
    path: str,
    start: int,
    number: int,
    converter: Any,
    size: int,
    *,
    at: int | None = None,
) -> Iterator[Chunk]:
    """The chunks after byte ``start`` (a line's first byte; line ``number`` on), or those
    of the lines that start at or after byte ``at``, converted in this process by
    ``converter.convert`` (None: not converted) and handed back as ``converter.unpack``
    gives them."""
    convert = converter.convert if converter is not None else None
    unpack = converter.unpack if converter is not None else None
    end = os.path.getsize(path)
    pos = start if at is None else at
    while pos < end:
        b = min(pos + 64 * size, end)
        seg_pos, data = _segment_data(path, start, pos, b)
        for off, chunk, terminated in _pieces(data, seg_pos, size):
            out = convert(chunk) if convert is not None and chunk else None
            if out is not None:
                out = unpack(out)  # type: ignore[misc]
            yield Chunk(number, off, len(chunk), chunk, terminated, out)
            number += newlines(chunk) + 1
        pos = b


class Converted:
    """The chunks after byte ``start`` (a line's first byte; line ``number`` on), each
    converted by ``make(spec).convert`` in one of ``workers`` processes, in file order, as
    :class:`Chunk` s; runs of converted chunks may come back as one chunk. ``make`` also has
    ``pack`` (a run of outputs as one, or None), ``unpack`` (the objects the reader uses)
    and, for a ``sink`` (the three output files), ``span`` (an output's first and last key)
    and ``split`` (its stream bytes, and the rest).

    With a sink, the reading process must write the records of every chunk not
    ``written``, and, after the last chunk of such a segment, call :meth:`release`; before
    the first chunk, ``release(-1, high)`` once whatever came before is in the files
    (``high``: the last key so far, None if the keys are not increasing integers)."""

    def __init__(
        self,
        path: str,
        start: int,
        number: int,
        make: Callable[[Any], Any],
        spec: Any,
        *,
        workers: int,
        size: int,
        sink: tuple[Any, Any, Any] | None = None,
    ):
        self.path, self.start, self.number = path, start, number
        self.make, self.spec, self.workers, self.size = make, spec, workers, size
        # imported here: every CLI start imports this module, few imports use workers
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        single = threading.active_count() == 1
        method = "fork" if single and sys.platform.startswith("linux") else "spawn"
        ctx = multiprocessing.get_context(method)
        self.gate = _Gate(ctx, None) if sink is not None else None
        self.pool = ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=_init,
            initargs=(make, spec, self.gate, sink if self.gate is not None else None),
        )

    def release(self, segment: int, high: int | None) -> None:
        """Segment ``segment``'s records are in the files (see the class)."""
        if self.gate is not None:
            self.gate.release(segment, high)

    def __iter__(self) -> Iterator[Chunk]:
        from concurrent.futures.process import BrokenProcessPool

        path, start, number, size = self.path, self.start, self.number, self.size
        end = os.path.getsize(path)
        unpack = self.make.unpack  # type: ignore[attr-defined]
        pool, gate = self.pool, self.gate
        # (segment start, index, its future; None: the pool broke before it was handed over)
        pending: deque[tuple[int, int, Future[list[Any]] | None]] = deque()
        bounds = enumerate(range(start, end, SEGMENT_BYTES))
        broken = False
        try:

            def submit() -> None:
                nonlocal broken
                nxt = None if broken else next(bounds, None)
                if nxt is None:
                    return
                index, a = nxt
                b = min(a + SEGMENT_BYTES, end)
                try:
                    future = pool.submit(_convert_segment, path, start, a, b, size, index)
                except BrokenProcessPool:
                    broken = True
                    pending.append((a, index, None))
                else:
                    pending.append((a, index, future))

            for _ in range(2 * self.workers):
                submit()
            while pending:
                a, index, future = pending.popleft()
                try:
                    if future is None:
                        raise BrokenProcessPool(a)
                    pieces = future.result()
                except BrokenProcessPool:
                    if gate is not None and gate.turn.value != index:
                        raise RunError(
                            f"{path}: a worker process of the import died after writing "
                            "records (killed by the system?); the import stopped and left "
                            "nothing behind: run it again"
                        ) from None
                    # the rest, from this segment on, in this process
                    yield from serial_chunks(path, start, number, self.make(self.spec), size, at=a)
                    return
                submit()
                if not pieces:
                    yield Chunk(number, a, 0, b"", True, None, index, True, False)
                for k, (off, length, lines, data, terminated, out, written) in enumerate(pieces):
                    if out is not None:
                        out = unpack(out)
                    last = k == len(pieces) - 1
                    yield Chunk(number, off, length, data, terminated, out, index, last, written)
                    number += lines
        finally:
            if gate is not None:
                gate.stop()
            pool.shutdown(wait=True, cancel_futures=True)
