"""Chunks of a large JSONL file, converted by worker processes, handed back in file order.

A samples file of a gigabyte takes seconds of per-line work that needs no shared state (the
column path of :mod:`._lmeval_strict`). :func:`converted_chunks` splits the file, from a
byte offset on, into segments of whole lines; each worker reads its segments itself (the
file is never sent through a pipe) and converts them a chunk at a time; the reading process
gets, in file order, each chunk's place in the file and its converted records, or None
where the chunk did not fit, and reads that chunk itself (``os.pread``) for the line paths.

Workers are forked (on Linux) when the process runs one thread (no lock can be held by a
thread that does not exist in the child), spawned otherwise. If the pool breaks (a worker
killed), the rest of the file is converted in the reading process. At most ``2 * workers`` segments are in
flight, so memory stays bounded by a few segments' records whatever the file's size. With
one CPU, or a small file, the same chunks are converted in this process
(:func:`serial_chunks`): the output does not depend on how many processes made it.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple

from ._io import newlines

__all__ = ["Chunk", "converted_chunks", "serial_chunks", "usable_cpus"]

SEGMENT_BYTES = 2 << 20
"""Bytes of the file per task handed to a worker."""


class Chunk(NamedTuple):
    """A run of whole lines: its first line's number, place in the file, the bytes (None
    when a worker converted it: read them with ``os.pread`` if needed), whether its last
    line ends with a newline, and the converter's output (None: it did not fit)."""

    number: int
    offset: int
    length: int
    data: bytes | None
    terminated: bool
    out: Any


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


def _init(make: Callable[[Any], Any], spec: Any) -> None:
    global _converter
    _converter = make(spec)


def _whole(converter: Any, data: bytes) -> tuple[int, int, None, bool, Any] | None:
    """``(length, lines, None, terminated, out)`` of all of ``data`` (whole lines) converted at
    once, where the converter reads large chunks well (``converter.whole``) and takes every
    line; else None."""
    if not data or not getattr(converter, "whole", False):
        return None
    terminated = data.endswith(b"\n")
    chunk = data[:-1] if terminated else data
    out = converter.convert(chunk)
    if out is None:
        return None
    return len(chunk), newlines(chunk) + 1, None, terminated, out


def _convert_segment(
    path: str, start: int, a: int, b: int, size: int
) -> list[tuple[int, int, int, bytes | None, bool, Any]]:
    """``(offset, length, lines, data, terminated, packed out)`` per chunk of the segment,
    or per run of converted chunks: the converter's ``pack`` sends a run's outputs as one
    (fewer, larger objects through the pipe) where it can merge them; the bytes come back
    only for a chunk the converter could not take."""
    pos, data = _segment_data(path, start, a, b)
    result: list[tuple[int, int, int, bytes | None, bool, Any]] = []
    whole = _whole(_converter, data)
    if whole is not None:
        return [(pos, *whole)]
    run: list[tuple[int, int, int, bool, Any]] = []  # converted chunks not yet sent
    pack = _converter.pack
    convert = _converter.convert

    def flush() -> None:
        packed = pack([c[4] for c in run]) if len(run) > 1 else None
        if packed is not None:
            off, _, _, _, _ = run[0]
            last_off, last_len, _, terminated, _ = run[-1]
            lines = sum(c[2] for c in run)
            result.append((off, last_off + last_len - off, lines, None, terminated, packed))
        else:
            result.extend((off, n, lines, None, t, pack([out])) for off, n, lines, t, out in run)
        run.clear()

    for off, chunk, terminated in _pieces(data, pos, size):
        out = convert(chunk) if chunk else None
        lines = newlines(chunk) + 1
        if out is None:
            flush()
            result.append((off, len(chunk), lines, chunk, terminated, None))
        else:
            run.append((off, len(chunk), lines, terminated, out))
    flush()
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
        whole = _whole(converter, data) if converter is not None else None
        if whole is not None:
            length, lines, _, terminated, out = whole
            yield Chunk(number, seg_pos, length, None, terminated, unpack(out))  # type: ignore[misc]
            number += lines
            pos = b
            continue
        for off, chunk, terminated in _pieces(data, seg_pos, size):
            out = convert(chunk) if convert is not None and chunk else None
            if out is not None:
                out = unpack(out)  # type: ignore[misc]
            yield Chunk(number, off, len(chunk), chunk, terminated, out)
            number += newlines(chunk) + 1
        pos = b


def converted_chunks(
    path: str,
    start: int,
    number: int,
    make: Callable[[Any], Any],
    spec: Any,
    *,
    workers: int,
    size: int,
) -> Iterator[Chunk]:
    """The chunks after byte ``start`` (a line's first byte; line ``number`` on), each
    converted by ``make(spec).convert`` in one of ``workers`` processes, in file order;
    runs of converted chunks may come back as one chunk. ``make`` also has ``pack`` (a run
    of outputs as one, in a few large objects for the pipe, or None) and ``unpack``.

    If the pool breaks (a worker killed, say, by the out-of-memory killer), the rest of the
    file is converted in this process, from the first segment not yet handed back."""
    end = os.path.getsize(path)
    unpack = make.unpack  # type: ignore[attr-defined]
    single = threading.active_count() == 1
    method = "fork" if single and sys.platform.startswith("linux") else "spawn"
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init,
        initargs=(make, spec),
    )
    # (segment start, its future; None: the pool broke before it was handed over)
    pending: deque[tuple[int, Future[list[tuple[int, int, int, bytes | None, bool, Any]]] | None]]
    pending = deque()
    bounds = iter(range(start, end, SEGMENT_BYTES))
    broken = False
    try:

        def submit() -> None:
            nonlocal broken
            a = None if broken else next(bounds, None)
            if a is None:
                return
            b = min(a + SEGMENT_BYTES, end)
            try:
                pending.append((a, pool.submit(_convert_segment, path, start, a, b, size)))
            except BrokenProcessPool:
                broken = True
                pending.append((a, None))

        for _ in range(2 * workers):
            submit()
        while pending:
            a, future = pending.popleft()
            try:
                if future is None:
                    raise BrokenProcessPool(a)
                pieces = future.result()
            except BrokenProcessPool:  # the rest, from this segment on, in this process
                yield from serial_chunks(path, start, number, make(spec), size, at=a)
                return
            submit()
            for off, length, lines, data, terminated, out in pieces:
                if out is not None:
                    out = unpack(out)
                yield Chunk(number, off, length, data, terminated, out)
                number += lines
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
