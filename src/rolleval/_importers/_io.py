"""Reading source files defensively: JSON, JSONL and zip archives, one-line errors.

Every failure is a :class:`~rolleval.errors.DataError` naming the file (and line or archive
member): a truncated file, a line that is not JSON, a zip member whose path leaves the
archive, or an archive that would expand past the size limit.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from ..errors import DataError, MissingDependencyError

__all__ = [
    "DEFAULT_MAX_UNZIPPED_BYTES",
    "SafeZip",
    "head_bytes",
    "iter_jsonl",
    "iter_jsonl_chunks",
    "load_json_bytes",
    "newlines",
    "parse_jsonl_line",
    "read_json_file",
]

#: Largest total an archive may expand to (members' real sizes, not their headers' claims).
DEFAULT_MAX_UNZIPPED_BYTES = 4 << 30


def head_bytes(path: Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file (b"" for anything that is not a readable file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def load_json_bytes(data: bytes, *, path: Path | str, what: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        hint = (
            "the file is truncated"
            if "unexpected end" in str(exc).lower() or not data.strip()
            else "not valid JSON"
        )
        raise DataError(
            f"{what} is {hint} ({exc}); re-export it from the tool that wrote it", path=path
        ) from None


def read_json_file(path: Path, *, what: str) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{what} not found", path=path) from None
    return load_json_bytes(data, path=path, what=what)


def iter_jsonl(path: Path, *, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line, reading the file in chunks.

    A line that is not a JSON object is a :class:`DataError` naming the line; a last line
    cut short says the file is truncated.
    """
    number = 0
    with open(path, "rb") as fh:
        for raw in fh:
            number += 1
            if not raw.strip():
                continue
            yield number, parse_jsonl_line(raw, path=path, line=number, what=what)


def parse_jsonl_line(
    raw: bytes, *, path: Path, line: int, what: str, terminated: bool | None = None
) -> dict[str, Any]:
    """One JSONL line as a dict, or a :class:`DataError` naming the line (``terminated``:
    whether a newline followed it; by default, whether ``raw`` ends with one)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        truncated = not raw.endswith(b"\n") if terminated is None else not terminated
        why = (
            "the file is truncated (its last line is cut short)"
            if truncated
            else f"line is not valid JSON ({exc})"
        )
        raise DataError(
            f"{what}: {why}; re-export it from the tool that wrote it", path=path, line=line
        ) from None
    if not isinstance(obj, dict):
        raise DataError(
            f"{what}: line is not a JSON object ({type(obj).__name__})", path=path, line=line
        )
    return obj


def newlines(data: bytes) -> int:
    """How many newlines ``data`` holds (``bytes.count`` of one byte is several times slower
    than ``replace``, which searches with memchr)."""
    return len(data) - len(data.replace(b"\n", b""))


def iter_jsonl_chunks(path: Path, size: int = 4 << 20) -> Iterator[tuple[int, bytes, bool]]:
    """``(number of its first line, chunk, terminated)``: the file in chunks of whole lines
    (about ``size`` bytes each, without the newline after the last one); ``terminated`` is
    False only for a last chunk whose last line has no newline."""
    number = 1
    rest = b""
    with open(path, "rb") as fh:
        while True:
            data = fh.read(size)
            if not data:
                break
            buf = rest + data if rest else data
            cut = buf.rfind(b"\n")
            if cut < 0:
                rest = buf
                continue
            chunk, rest = buf[:cut], buf[cut + 1 :]
            yield number, chunk, True
            number += newlines(chunk) + 1
    if rest:
        yield number, rest, False


_ZSTD = 93  # zip compression method id of Zstandard (Inspect AI writes .eval logs with it)


def _enable_zstd(path: Path) -> None:
    """Teach :mod:`zipfile` Zstandard (built in from Python 3.14; ``zipfile-zstd`` before)."""
    if getattr(zipfile, "ZIP_ZSTANDARD", None) == _ZSTD:
        return
    try:
        import zipfile_zstd  # noqa: F401  (registers the method with zipfile)
    except ImportError:
        raise MissingDependencyError(
            f"{path}: the archive is Zstandard-compressed; reading it needs zipfile-zstd: "
            "pip install 'rolleval[inspect]'"
        ) from None


class SafeZip:
    """A zip archive read with its members' paths and total expanded size checked.

    Opening refuses an archive with a member path that is absolute or climbs out of the
    archive (``..``); reading refuses to expand past ``max_bytes`` in total, counting the
    bytes actually produced, so a lying header does not get past it.
    """

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_UNZIPPED_BYTES):
        self.path = path
        self.max_bytes = max_bytes
        self._read = 0
        try:
            self._zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise DataError(
                f"not a readable zip archive ({exc}); the file may be truncated", path=path
            ) from None
        if any(i.compress_type == _ZSTD for i in self._zf.infolist()):
            _enable_zstd(path)
        declared = 0
        for info in self._zf.infolist():
            name = info.filename
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                raise DataError(
                    f"archive member {name!r} points outside the archive; refusing to read it",
                    path=path,
                )
            declared += info.file_size
        if declared > max_bytes:
            raise DataError(
                f"archive would expand to {declared} bytes, past the limit of {max_bytes}; "
                "refusing to read it (a zip bomb, or raise max_unzipped_bytes)",
                path=path,
            )

    def names(self) -> list[str]:
        return self._zf.namelist()

    def read(self, name: str) -> bytes:
        try:
            info = self._zf.getinfo(name)
        except KeyError:
            raise DataError(f"archive has no member {name!r}", path=self.path) from None
        left = self.max_bytes - self._read
        try:
            with self._zf.open(info) as fh:
                data = fh.read(left + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise DataError(
                f"archive member {name!r} cannot be read ({exc}); the file may be truncated or corrupt",
                path=self.path,
            ) from None
        if len(data) > left:
            raise DataError(
                f"archive expands past the limit of {self.max_bytes} bytes at member {name!r}; "
                "refusing to read it (a zip bomb, or raise max_unzipped_bytes)",
                path=self.path,
            )
        self._read += len(data)
        return data

    def json(self, name: str) -> Any:
        return load_json_bytes(self.read(name), path=f"{self.path}!{name}", what="archive member")

    def close(self) -> None:
        self._zf.close()

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
