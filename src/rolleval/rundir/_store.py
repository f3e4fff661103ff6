"""The run directory: where a run's records, reports and provenance live.

Layout (``docs/run-format.md`` is the reference)::

    RUN/
      manifest.json              run identity, status, config, provenance   (replaced atomically)
      report.json                run-level report: every task's report       (replaced atomically)
      tasks/<task>/
        task.json                task settings + provenance (grader, data, hashes)
        prompts.jsonl            one PromptRecord per problem
        rollouts.jsonl           RolloutRecord per attempt, append-only
        judgements.jsonl         JudgementRecord per rollout, append-only (rebuilt by regrade)
        report.json              the task report                              (replaced atomically)
        profile.json             token usage, latency percentiles, throughput (replaced atomically)

JSONL files are appended one whole line per write. A process killed mid-write can leave a
*torn* last line (no newline, or not parseable): readers ignore it with a warning; writers
that reopen the file move it to ``<file>.torn`` first, so nothing is lost.

Reading: :class:`TaskFiles` has one typed reader per stream (:meth:`TaskFiles.read_prompts`,
:meth:`~TaskFiles.read_rollouts`, :meth:`~TaskFiles.read_judgements`) that validates every
line against its :mod:`rolleval.records` model and applies the effective-record rules;
:func:`read_jsonl_columns` is the fast columnar path reports use. Writing goes through
:class:`rolleval.rundir.RunWriter`.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import typing
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import msgspec
import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import DataError, SchemaVersionError, UsageError
from ..records import (
    RUN_FORMAT,
    SCHEMA_VERSION,
    JudgementRecord,
    JudgementSet,
    Profile,
    PromptRecord,
    PromptSet,
    RolloutRecord,
    RolloutSet,
    RunManifest,
    TaskSettings,
)

__all__ = [
    "RUN_FORMAT",
    "JsonlAppender",
    "JsonlChunks",
    "JsonlColumns",
    "JsonlContent",
    "Records",
    "RunDir",
    "TaskFiles",
    "TornLineWarning",
    "atomic_write_bytes",
    "atomic_write_json",
    "read_json",
    "read_jsonl",
    "read_jsonl_columns",
    "read_model",
    "read_records",
    "validate_model",
    "write_model",
]


M = TypeVar("M", bound=BaseModel)


class TornLineWarning(UserWarning):
    """A JSONL file ends with an incomplete line (a write was interrupted)."""


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes | list[bytes]) -> None:
    """Replace ``path`` with ``data`` (bytes, or pieces written one after the other)
    atomically (write a temporary file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        if isinstance(data, list):
            fh.writelines(data)
        else:
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


JSON_FILE_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
"""How the run directory's JSON files are written: indented, key-sorted, a final newline."""


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    """Atomically write ``value`` as indented, key-sorted JSON with a trailing newline."""
    # the newline by orjson: no copy of a large file's bytes
    atomic_write_bytes(path, orjson.dumps(value, option=JSON_FILE_OPTIONS))


def read_json(path: str | os.PathLike[str], *, what: str = "file") -> Any:
    """Read a JSON file; a missing or malformed file is a :class:`DataError` naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{what} not found", path=path) from None
    except IsADirectoryError:
        raise DataError(f"{what} expected, found a directory", path=path) from None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(
            f"{what} is not valid JSON ({exc}); restore it or regenerate it", path=path
        ) from None
    _refuse_duplicate_keys(data, path, what)
    return value


def _refuse_duplicate_keys(data: bytes, path: Path, what: str) -> None:
    """A JSON object naming a key twice is ambiguous (parsers keep one silently): refuse it
    (``data`` is known to be valid JSON)."""
    import json

    def pairs(items: list[tuple[str, Any]]) -> None:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise DataError(
                    f"{what} names key {key!r} twice in one object; keep one", path=path
                )
            seen.add(key)

    json.loads(data, object_pairs_hook=pairs)


@dataclass
class JsonlContent:
    """Parsed lines of a JSONL file.

    ``records[i]`` came from line ``lines[i]`` (1-based); a torn final line is left out and
    reported in ``torn_line`` (its 1-based number) and ``torn_bytes``.
    """

    records: list[dict[str, Any]]
    lines: list[int]
    torn_line: int | None = None
    torn_bytes: int = 0


def _split_torn(data: bytes) -> tuple[bytes, bytes]:
    """Split ``data`` into (complete lines, trailing partial line)."""
    if not data or data.endswith(b"\n"):
        return data, b""
    cut = data.rfind(b"\n") + 1
    return data[:cut], data[cut:]


def _cut_torn_tail(path: Path, data: bytes) -> tuple[bytes, int | None, int]:
    """Complete lines of ``data`` and, if the last line is torn, its line number and size.

    A last line without newline that parses as a JSON object is complete (only its newline
    is missing) and kept; one that does not parse is torn: left out with a
    :class:`TornLineWarning` naming the file and line.
    """
    body, tail = _split_torn(data)
    if not tail.strip():
        return body, None, 0
    try:
        complete = isinstance(orjson.loads(tail), dict)
    except orjson.JSONDecodeError:
        complete = False
    if complete:
        return body + tail + b"\n", None, 0
    torn_line = body.count(b"\n") + 1
    warnings.warn(
        f"{path}:{torn_line}: ignoring a torn last line ({len(tail)} bytes; "
        "the writing process was interrupted)",
        TornLineWarning,
        stacklevel=3,
    )
    return body, torn_line, len(tail)


def read_jsonl(
    path: str | os.PathLike[str], *, what: str = "records", missing_ok: bool = False
) -> JsonlContent:
    """Read a JSONL file of JSON objects.

    Blank lines are skipped. A final line without newline that does not parse is *torn*: it
    is ignored with a :class:`TornLineWarning`. Any other unparseable line, or a line that is
    not a JSON object, raises :class:`DataError` naming the file and line.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return JsonlContent([], [])
        raise DataError(f"{what} file not found", path=path) from None
    body, torn_line, torn_bytes = _cut_torn_tail(path, data)
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    # Fast path: parse the whole body as one JSON array (one C call), then fall back to
    # line-by-line parsing only to locate an error.
    raw_lines = body.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    nonblank = [i for i, ln in enumerate(raw_lines) if ln.strip()]
    if len(nonblank) == len(raw_lines):
        try:
            parsed = orjson.loads(b"[" + b",".join(raw_lines) + b"]")
        except orjson.JSONDecodeError:
            parsed = None
        if parsed is not None and len(parsed) == len(raw_lines):
            for i, rec in enumerate(parsed):
                if not isinstance(rec, dict):
                    raise DataError(
                        f"line is not a JSON object ({type(rec).__name__}); each line must be one record",
                        path=path,
                        line=i + 1,
                    )
            return JsonlContent(parsed, list(range(1, len(parsed) + 1)), torn_line, torn_bytes)
    for i in nonblank:
        try:
            rec = orjson.loads(raw_lines[i])
        except orjson.JSONDecodeError as exc:
            raise DataError(
                f"line is not valid JSON ({exc}); fix or delete this line", path=path, line=i + 1
            ) from None
        if not isinstance(rec, dict):
            raise DataError(
                f"line is not a JSON object ({type(rec).__name__}); each line must be one record",
                path=path,
                line=i + 1,
            )
        records.append(rec)
        lines.append(i + 1)
    return JsonlContent(records, lines, torn_line, torn_bytes)


@dataclass
class JsonlColumns:
    """The fields of every record of a JSONL file, as one list per field.

    ``columns[f][i]`` is field ``f`` of record ``i`` (``None`` when absent). ``lines`` maps
    record positions to 1-based line numbers; ``None`` means record ``i`` is on line ``i + 1``.
    ``validated``: every value already has the type the schema declares.
    """

    columns: dict[str, list[Any]]
    n: int
    lines: list[int] | None = None
    torn_line: int | None = None
    torn_bytes: int = 0
    validated: bool = False
    order: list[int] | None = None
    """Optional: record positions sorted by ``problem_id`` (a writer that sorted them for
    another purpose saves the table a second sort of a million ids)."""

    def line_of(self, i: int) -> int:
        return i + 1 if self.lines is None else self.lines[i]


_CHUNK_BYTES = 4 << 20
_AT_RECORD = re.compile(r"`\$\[(\d+)\](.*?)`")


def read_jsonl_columns(
    path: str | os.PathLike[str],
    schema: type[msgspec.Struct],
    *,
    what: str = "records",
    missing_ok: bool = False,
    fix: str = "",
    presence: Collection[str] = (),
) -> JsonlColumns:
    """Read a JSONL file into one list per field of ``schema`` (a ``msgspec.Struct``).

    Same rules as :func:`read_jsonl`: a torn last line is ignored with a warning, any other
    bad line is a :class:`DataError` naming the line. Each record is decoded and type-checked
    against ``schema`` in C (fields the schema does not name are skipped without building a
    dict), a few megabytes at a time (:class:`JsonlChunks`), so the cost stays close to
    parsing the file and the memory close to the size of the columns: the file is never held
    whole, and equal strings of a string field share one object (a million ``"ok"`` statuses
    are one string). A record of the wrong shape is a :class:`DataError` naming the line and
    the field; ``fix`` is appended to the message. A field named in ``presence`` keeps
    only whether it was there: ``True``, or ``None`` when absent or null (for fields whose
    value a reader never looks at, such as a long extracted answer).
    """
    path = Path(path)
    fields = list(schema.__struct_fields__)
    if not path.exists() and missing_ok:
        return JsonlColumns({f: [] for f in fields}, 0, validated=True)
    cols: dict[str, list[Any]] = {f: [] for f in fields}
    shared = _string_fields(schema)
    getters: list[tuple[list[Any], Any, dict[Any, Any] | None]] = [
        (cols[f], operator.attrgetter(f), {} if f in shared else None) for f in fields
    ]
    lines: list[int] | None = None
    n = 0
    chunks = JsonlChunks(path, schema, what=what, fix=fix)
    for rows, numbers in chunks:
        if lines is None and not (isinstance(numbers, range) and numbers.start == n + 1):
            lines = list(range(1, n + 1))  # from here on, record i is not on line i + 1
        if lines is not None:
            lines.extend(numbers)
        for i, (col, get, cache) in enumerate(getters):
            values = list(map(get, rows))
            if fields[i] in presence:
                values = [None if v is None else True for v in values]
            elif cache is not None:
                values = list(map(cache.setdefault, values, values))
                if len(cache) > _SHARE_MAX:  # mostly distinct values: sharing saves nothing
                    getters[i] = (col, get, None)
            col.extend(values)
        n += len(rows)
    return JsonlColumns(cols, n, lines, chunks.torn_line, chunks.torn_bytes, validated=True)


#: A string field stops sharing equal values once this many distinct ones were seen.
_SHARE_MAX = 1 << 17


def _string_fields(schema: type[msgspec.Struct]) -> set[str]:
    out = set()
    for f in msgspec.structs.fields(schema):
        kinds = typing.get_args(f.type) or (f.type,)
        if str in kinds:
            out.add(f.name)
    return out


class JsonlChunks:
    """The records of a JSONL file decoded as ``schema`` a few megabytes at a time.

    Iterating yields ``(rows, lines)`` per chunk: the decoded structs, and their 1-based line
    numbers (a ``range`` when the chunk's lines are all records, else a list). Blank lines are skipped; a torn last line is left
    out with a :class:`TornLineWarning` and reported as :attr:`torn_line` and
    :attr:`torn_bytes` once the iteration is over. Any other bad line raises
    :class:`DataError` naming the line (as :func:`read_jsonl_columns`). Memory: one chunk.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: type[msgspec.Struct],
        *,
        what: str = "records",
        fix: str = "",
        chunk_bytes: int | None = None,
    ):
        self.path = Path(path)
        self.schema = schema
        self.what = what
        self.fix = fix
        self.chunk_bytes = chunk_bytes or _CHUNK_BYTES
        self.torn_line: int | None = None
        self.torn_bytes = 0

    def __iter__(self) -> Iterator[tuple[list[Any], Sequence[int]]]:
        one = msgspec.json.Decoder(self.schema)
        many = msgspec.json.Decoder(list[self.schema])  # type: ignore[name-defined]
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            raise DataError(f"{self.what} file not found", path=self.path) from None
        before = 0  # complete lines already read
        carry = b""
        with fh:
            while block := fh.read(self.chunk_bytes):
                data = carry + block if carry else block
                end = data.rfind(b"\n")
                if end < 0:
                    carry = data
                    continue
                body, carry = data[: end + 1], data[end + 1 :]
                del data
                yield self._decode(one, many, body, before)
                before += body.count(b"\n")
        if not carry.strip():
            return
        try:
            complete = isinstance(orjson.loads(carry), dict)
        except orjson.JSONDecodeError:
            complete = False
        if complete:  # only its newline is missing
            yield self._decode(one, many, carry + b"\n", before)
            return
        self.torn_line, self.torn_bytes = before + 1, len(carry)
        warnings.warn(
            f"{self.path}:{self.torn_line}: ignoring a torn last line ({len(carry)} bytes; "
            "the writing process was interrupted)",
            TornLineWarning,
            stacklevel=3,
        )

    def _decode(
        self,
        one: msgspec.json.Decoder[Any],
        many: msgspec.json.Decoder[Any],
        body: bytes,
        before: int,
    ) -> tuple[list[Any], Sequence[int]]:
        """Decode complete lines (``body`` ends with a newline) that follow line ``before``."""
        path, fix = self.path, self.fix
        _check_utf8(body, path, before, fix)
        chunk = body[:-1]
        if body.startswith((b"\n", b" ")) or b"\n\n" in body or b"\n " in body or b"\r" in body:
            # Blank or unusual lines: decode line by line, keeping line numbers.
            rows, numbers = [], []
            for i, ln in enumerate(chunk.split(b"\n")):
                if ln.strip():
                    rows.append(_decode_line(one, ln, path, before + i + 1, fix))
                    numbers.append(before + i + 1)
            return rows, numbers
        try:
            rows = many.decode(b"[" + chunk.replace(b"\n", b",") + b"]")
            return rows, range(before + 1, before + 1 + len(rows))
        except (msgspec.DecodeError, msgspec.ValidationError):
            for j, ln in enumerate(chunk.split(b"\n")):
                _decode_line(one, ln, path, before + j + 1, fix)
            raise DataError("lines could not be split into records", path=path) from None


def _check_utf8(chunk: bytes, path: Path, lines_before: int, fix: str) -> None:
    """Refuse bytes that are not UTF-8 (msgspec does not check the strings it skips), naming
    the line; ASCII, the common case, is checked in one fast pass."""
    if chunk.isascii():
        return
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = lines_before + chunk.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"line is not valid UTF-8 (byte {exc.object[exc.start]:#04x}){'; ' + fix if fix else ''}",
            path=path,
            line=number,
        ) from None


def _decode_line(
    decoder: msgspec.json.Decoder[Any], line: bytes, path: Path, number: int, fix: str
) -> Any:
    """Decode one line, turning decoder errors into a :class:`DataError` naming the line."""
    try:
        return decoder.decode(line)
    except msgspec.ValidationError as exc:
        text = str(exc)
        if "Expected `object`" in text:
            raise DataError(
                "line is not a JSON object; each line must be one record", path=path, line=number
            ) from None
        m = _AT_RECORD.search(text.replace("`$.", "`$[0]."))
        where = m.group(2).lstrip(".") if m else ""
        detail = text.split(" - at ")[0]
        field = f"{where!r}: " if where else ""
        raise DataError(
            f"{field}{detail}{'; ' + fix if fix else ''}", path=path, line=number
        ) from None
    except msgspec.DecodeError as exc:
        raise DataError(
            f"line is not valid JSON ({exc}); fix or delete this line", path=path, line=number
        ) from None


class JsonlAppender:
    """Append whole lines to a JSONL file, flushing each write.

    On open, a torn tail left by an interrupted writer is moved to ``<file>.torn`` (appended,
    never overwritten) and cut from the file, so new lines never glue onto it.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False):
        self.path = Path(path)
        self._fsync = fsync
        self.recovered_torn_bytes = 0
        if self.path.exists():
            with open(self.path, "rb+") as fh:
                data = fh.read()
                body, tail = _split_torn(data)
                if tail:
                    try:
                        complete = isinstance(orjson.loads(tail), dict)
                    except orjson.JSONDecodeError:
                        complete = False
                    if complete:
                        fh.write(b"\n")
                    else:
                        with open(self.path.with_name(self.path.name + ".torn"), "ab") as side:
                            side.write(tail + b"\n")
                        fh.truncate(len(body))
                        self.recovered_torn_bytes = len(tail)
        self._fh = open(self.path, "ab")  # noqa: SIM115 - closed in close()

    def write(self, line: bytes) -> None:
        """Write one complete line (must end with a newline) and flush it."""
        self._fh.write(line)
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def write_many(self, lines: list[bytes]) -> None:
        """Write complete lines in one write and flush them."""
        self._fh.write(b"".join(lines))
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def write_pieces(self, pieces: list[bytes]) -> None:
        """Write pieces of whole lines (together, whole lines) and flush them; large pieces
        go to the file without being copied into one buffer first."""
        self._fh.writelines(pieces)
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _field_error(exc: ValidationError, *, skip: int = 0) -> str:
    """``'field.sub': message`` of the first error of a pydantic validation error."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"][skip:])
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown field (not in the record model; a typo, or a file from another tool)"
    elif err["type"] == "value_error" and "error" in err.get("ctx", {}):
        msg = str(err["ctx"]["error"])  # a model's own check: its message, without "Value error, "
    return f"{loc!r}: {msg}" if loc else msg


def read_model(path: str | os.PathLike[str], model: type[M], *, what: str, fix: str = "") -> M:
    """Read a JSON file and validate it against ``model`` (a :mod:`rolleval.records` model).

    A missing, malformed or invalid file is a :class:`DataError` naming the file and the
    field; a version this rolleval cannot read is a :class:`SchemaVersionError`.
    """
    data = read_json(path, what=what)
    if not isinstance(data, dict):
        raise DataError(f"{what} must hold a JSON object", path=path)
    return validate_model(data, model, path=path, what=what, fix=fix)


def validate_model(
    data: dict[str, Any], model: type[M], *, path: object, what: str, fix: str = ""
) -> M:
    """``model.model_validate(data)`` with errors turned into one-line :class:`DataError` s."""
    try:
        return model.model_validate(data)
    except SchemaVersionError as exc:
        if exc.path is None:
            raise SchemaVersionError(str(exc), path=path) from None
        raise
    except ValidationError as exc:
        raise DataError(
            f"{what}: {_field_error(exc)}{'; ' + fix if fix else ''}", path=path
        ) from None


_ADAPTERS: dict[type[BaseModel], TypeAdapter[Any]] = {}


def _list_adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(model)
    if adapter is None:
        adapter = _ADAPTERS[model] = TypeAdapter(list[model])  # type: ignore[valid-type]
    return adapter


@dataclass
class Records(Generic[M]):
    """Validated records of a JSONL file: ``items[i]`` came from line ``lines[i]`` (1-based)."""

    items: list[M]
    lines: list[int]
    torn_line: int | None = None
    torn_bytes: int = 0


def read_records(
    path: str | os.PathLike[str],
    model: type[M],
    *,
    what: str = "records",
    missing_ok: bool = False,
    fix: str = "",
    schema_version: int = SCHEMA_VERSION,
) -> Records[M]:
    """Read a JSONL file, validating every line against ``model`` (a stream record model).

    Same line rules as :func:`read_jsonl` (torn last line ignored with a warning, blank lines
    skipped). The lines are validated together, strictly (``"3"`` or ``true`` is not an
    integer; the columnar reader is as strict), in pydantic's compiled core; a bad line is a
    :class:`DataError` naming the file, the line and the field, with ``fix`` appended.
    ``schema_version`` is the run's (the manifest's): older lines are upgraded on the way in.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return Records([], [])
        raise DataError(f"{what} file not found", path=path) from None
    body, torn_line, torn_bytes = _cut_torn_tail(path, data)
    del data
    raw = body.split(b"\n")
    numbered = [(i + 1, ln) for i, ln in enumerate(raw) if ln.strip()]
    lines = [n for n, _ in numbered]
    context = {"schema_version": schema_version}
    suffix = f"; {fix}" if fix else ""
    try:
        items = _list_adapter(model).validate_json(
            b"[" + b",".join(ln for _, ln in numbered) + b"]", strict=True, context=context
        )
    except SchemaVersionError as exc:
        raise SchemaVersionError(str(exc), path=path) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] != "json_invalid" and err["loc"] and isinstance(err["loc"][0], int):
            number = lines[err["loc"][0]]
            if err["type"] == "model_type":
                raise DataError(
                    "line is not a JSON object; each line must be one record",
                    path=path,
                    line=number,
                ) from None
            raise DataError(
                f"{_field_error(exc, skip=1)}{suffix}", path=path, line=number
            ) from None
        for number, ln in numbered:
            try:
                orjson.loads(ln)
            except orjson.JSONDecodeError as jexc:
                raise DataError(
                    f"line is not valid JSON ({jexc}); fix or delete this line",
                    path=path,
                    line=number,
                ) from None
        raise DataError(f"{what}: {_field_error(exc)}{suffix}", path=path) from None
    return Records(items, lines, torn_line, torn_bytes)


@dataclass(frozen=True)
class TaskFiles:
    """One task's files inside a run directory, and their typed readers."""

    dir: Path
    schema_version: int = SCHEMA_VERSION
    """The run's schema version (from its manifest): lines of older runs are upgraded."""

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def task_json(self) -> Path:
        return self.dir / "task.json"

    @property
    def prompts(self) -> Path:
        return self.dir / "prompts.jsonl"

    @property
    def rollouts(self) -> Path:
        return self.dir / "rollouts.jsonl"

    @property
    def judgements(self) -> Path:
        return self.dir / "judgements.jsonl"

    @property
    def report(self) -> Path:
        return self.dir / "report.json"

    @property
    def profile(self) -> Path:
        return self.dir / "profile.json"

    def read_settings(self) -> TaskSettings:
        """``task.json`` as a :class:`~rolleval.records.TaskSettings`."""
        return read_model(self.task_json, TaskSettings, what="task settings (task.json)")

    def read_task(self) -> dict[str, Any]:
        """``task.json`` as a dict of the keys the file holds, after validating it."""
        return self.read_settings().model_dump(mode="json", exclude_unset=True)

    def read_profile(self) -> Profile:
        return read_model(self.profile, Profile, what="task profile (profile.json)")

    def read_prompts(self) -> PromptSet:
        """Every prompt record, validated, and the one that counts per problem."""
        recs = read_records(
            self.prompts,
            PromptRecord,
            what="prompt records",
            schema_version=self.schema_version,
        )
        return PromptSet.build(
            recs.items, lines=recs.lines, path=self.prompts, torn_line=recs.torn_line
        )

    def read_rollouts(self, *, missing_ok: bool = True) -> RolloutSet:
        """Every rollout attempt, validated, and the one that counts per rollout."""
        recs = read_records(
            self.rollouts,
            RolloutRecord,
            what="rollout records",
            missing_ok=missing_ok,
            schema_version=self.schema_version,
        )
        return RolloutSet.build(recs.items, lines=recs.lines, torn_line=recs.torn_line)

    def read_judgements(self, *, missing_ok: bool = True) -> JudgementSet:
        """Every judgement, validated, and the one that counts per rollout (the first)."""
        recs = read_records(
            self.judgements,
            JudgementRecord,
            what="judgement records",
            missing_ok=missing_ok,
            fix="regrade the run to rebuild judgements",
            schema_version=self.schema_version,
        )
        return JudgementSet.build(recs.items, torn_line=recs.torn_line)


@dataclass
class RunDir:
    """A run directory on disk. Open with :meth:`open`; create with
    :class:`rolleval.rundir.RunWriter` (``RunWriter.create(path, manifest).finish()`` makes
    a run holding only its manifest)."""

    path: Path
    info: RunManifest

    @property
    def manifest(self) -> Mapping[str, Any]:
        """The manifest as a read-only mapping of plain values (change the run through
        :attr:`info` and :class:`rolleval.rundir.RunWriter`)."""
        return MappingProxyType(self.info.model_dump(mode="json"))

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    @property
    def report_path(self) -> Path:
        return self.path / "report.json"

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunDir:
        """Open an existing run directory, checking its manifest, format and schema version."""
        path = Path(path)
        if not path.is_dir():
            raise DataError(
                "not a run directory (no such directory); pass the --out of `rolleval run` (or `rolleval import` for another tool's output)",
                path=path,
            )
        mpath = path / "manifest.json"
        if not mpath.exists():
            raise DataError(
                "not a run directory (manifest.json missing); pass the --out of `rolleval run` (or `rolleval import` for another tool's output)",
                path=path,
            )
        data = read_json(mpath, what="run manifest")
        if not isinstance(data, dict) or data.get("format", RUN_FORMAT) != RUN_FORMAT:
            raise DataError(
                f"not a rolleval run manifest (format must be {RUN_FORMAT!r})", path=mpath
            )
        info = validate_model(data, RunManifest, path=mpath, what="run manifest")
        return cls(path, info)

    def write_manifest(self) -> None:
        """Replace ``manifest.json`` atomically with :attr:`info`."""
        write_model(self.manifest_path, self.info)

    def task(self, name: str) -> TaskFiles:
        return TaskFiles(self.path / "tasks" / name, self.info.schema_version)

    def task_names(self) -> list[str]:
        """Tasks of the run, in manifest order (falls back to the directories present)."""
        if self.info.tasks:
            return list(self.info.tasks)
        tdir = self.path / "tasks"
        return sorted(p.name for p in tdir.iterdir() if p.is_dir()) if tdir.is_dir() else []

    def tasks(self) -> Iterator[TaskFiles]:
        for name in self.task_names():
            yield self.task(name)

    def require_task(self, name: str) -> TaskFiles:
        names = self.task_names()
        if name not in names:
            raise UsageError(f"{self.path}: run has no task {name!r} (tasks: {', '.join(names)})")
        return self.task(name)


def write_model(path: str | os.PathLike[str], value: BaseModel) -> None:
    """Atomically write a run-file model as indented, key-sorted JSON (``None`` left out)."""
    atomic_write_json(path, value.model_dump(mode="json", exclude_none=True))


@contextlib.contextmanager
def collect_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record rolleval data warnings (torn lines) instead of printing them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TornLineWarning)
        yield caught
