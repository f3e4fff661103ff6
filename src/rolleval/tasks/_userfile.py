"""Tasks from a user's data file, described by a task config (dict or YAML/JSON file).

Supported files: ``.jsonl`` (one JSON object per line; blank lines skipped), ``.json`` (a
list of objects), ``.csv`` (header row, UTF-8) and ``.parquet`` (needs ``pyarrow``). Rows
are numbered from 1 in file order; a :class:`~rolleval.errors.DataError` names the file,
the line where the format has lines, the row number and what to change.
"""

from __future__ import annotations

import copy
import csv
import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import DataError, MissingDependencyError, UsageError
from ._builtin import builtin_spec, preset_config
from ._olmo import file_sha256
from ._spec import RowSource, TaskSpec, parse_config, resolve_path

__all__ = ["read_file_rows", "task_from_config"]

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")

Triple = tuple[int, int | None, dict[str, Any]]


def _object(value: Any, path: Path, number: int, line: int | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataError(
            f"row {number} is a {type(value).__name__}, not an object of fields",
            path=path,
            line=line,
        )
    return value


def _read_jsonl(path: Path) -> list[Triple]:
    rows: list[Triple] = []
    with path.open(encoding="utf-8-sig") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            number = len(rows) + 1
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise DataError(
                    f"row {number} is not valid JSON ({exc})", path=path, line=line_no
                ) from None
            rows.append((number, line_no, _object(value, path, number, line_no)))
    return rows


def _read_json(path: Path) -> list[Triple]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        raise DataError(f"not valid JSON ({exc})", path=path) from None
    if not isinstance(data, list):
        raise DataError("a .json task file must hold a list of row objects", path=path)
    return [(i, None, _object(v, path, i, None)) for i, v in enumerate(data, 1)]


def _read_csv(path: Path) -> list[Triple]:
    rows: list[Triple] = []
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise DataError("the CSV file has no header row", path=path)
        while True:
            start = reader.line_num + 1
            try:
                record = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DataError(f"not valid CSV ({exc})", path=path, line=start) from None
            number = len(rows) + 1
            if None in record:
                raise DataError(
                    f"row {number} has more cells than the header has columns",
                    path=path,
                    line=start,
                )
            rows.append((number, start, dict(record)))
    return rows


def _read_parquet(path: Path) -> list[Triple]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(f"not a readable Parquet file ({exc})", path=path) from None
    return [(i, None, row) for i, row in enumerate(table.to_pylist(), 1)]


_READERS = {
    ".jsonl": _read_jsonl,
    ".json": _read_json,
    ".csv": _read_csv,
    ".parquet": _read_parquet,
}


def read_file_rows(path: Path) -> list[Triple]:
    """``(row number, line or None, row)`` for each row of a task data file."""
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise DataError(
            f"unsupported file type {path.suffix!r}; use one of {', '.join(SUFFIXES)}", path=path
        )
    try:
        return reader(path)
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except OSError as exc:
        raise DataError(f"cannot read the file ({exc.strerror or exc})", path=path) from None


def _load_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DataError("task config file not found", path=path)
    try:
        text = path.read_text(encoding="utf-8")
        cfg = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise DataError(f"not a readable task config ({exc})", path=path) from None
    if not isinstance(cfg, dict):
        raise DataError(
            "a task config must be a mapping of keys (name, path, type, ...)", path=path
        )
    return cfg


def _merge_preset(cfg: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``cfg`` on top of the keys of its ``preset`` (``sampling``/``grader`` merged by key)."""
    if "loader" in cfg or "data" in cfg:
        raise UsageError(f"{where}: loader and data are for built-in tasks; give path instead")
    name = cfg.get("preset")
    if name is None:
        return dict(cfg)
    try:
        merged = preset_config(name)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    merged.setdefault("name", name)
    if "path" in cfg:  # a built-in preset over the user's own file: its data is not used
        merged.pop("loader", None)
        merged.pop("data", None)
    for key, value in cfg.items():
        if key in ("sampling", "grader") and isinstance(value, Mapping):
            merged[key] = {**merged.get(key, {}), **value}
        else:
            merged[key] = copy.deepcopy(value)
    merged.pop("preset")
    return merged


def task_from_config(
    cfg: Mapping[str, Any] | str | Path, *, base_dir: str | Path | None = None
) -> TaskSpec:
    """A task over a user data file, from a config dict or a YAML/JSON config file.

    A relative ``path`` is taken from ``base_dir`` (for a config file: its directory; else
    the current directory). ``preset: <name>`` starts from the keys of a preset template
    (``aime``, ``gpqa``, ``mmlu_pro``) or of a built-in task; ``sampling`` and ``grader``
    are merged key by key, the other keys replaced. A built-in preset without ``path``
    keeps its packaged data (e.g. ``{preset: arc_easy, shuffle_choices: true}``).

    The data file is checked to exist and hashed now; its rows are read and checked on
    :meth:`TaskSpec.load`. See docs/tasks.md for every key.
    """
    if isinstance(cfg, (str, Path)):
        config_path = Path(cfg)
        loaded = _load_config_file(config_path)
        if base_dir is None:
            base_dir = config_path.parent
        where = f"task config {str(config_path)!r}"
        cfg = loaded
    elif isinstance(cfg, Mapping):
        where = f"task config {cfg.get('name') or cfg.get('preset') or '<unnamed>'!r}"
    else:
        raise UsageError(
            f"a task config must be a mapping or a config file path, got {type(cfg).__name__}"
        )
    merged = _merge_preset(cfg, where)
    if "loader" in merged:  # preset: <built-in task> without a path: the packaged data
        return builtin_spec(merged, where=where)
    if "path" not in merged:
        raise UsageError(
            f"{where}: path is required (the .jsonl, .json, .csv or .parquet data file)"
        )
    path = resolve_path(merged.pop("path"), base_dir, where)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise DataError(
            f"unsupported file type {path.suffix!r}; use one of {', '.join(SUFFIXES)}", path=path
        )
    if not path.is_file():
        raise DataError(
            "data file not found; check path (relative paths start at the config's directory)",
            path=path,
        )
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        name = merged.get("name", "?")
        raise MissingDependencyError(
            f"task {name!r} reads a .parquet file, which needs pyarrow: pip install 'rolleval[parquet]'"
        )
    source = {"path": str(path), "sha256": file_sha256(path)}

    def read() -> list[Triple]:
        if file_sha256(path) != source["sha256"]:
            raise DataError(
                "the file changed since its task was configured; configure it again", path=path
            )
        return read_file_rows(path)

    rows = RowSource(read=read, path=str(path))
    return parse_config(merged, rows=rows, source=source, where=where)
