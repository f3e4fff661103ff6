"""Run configuration: what is measured (fixed for the life of a run) and how fast (free to change).

A config comes from a YAML file and/or CLI flags (flags win). Two parts:

* **measurement** settings decide what the numbers mean: model, tasks, rollouts per problem,
  seed, limit, sampling, prompt, API kind, local server options, denominator policy. A resumed
  run must have exactly the same ones (``--resume`` refuses a change with a key-level diff).
* **throughput** settings only decide how fast: endpoints, concurrency, timeouts, retries,
  grading workers, progress display. They may change on resume.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import DataError, UsageError

__all__ = [
    "OLD_KEYS",
    "TASK_FILE_SUFFIXES",
    "OldSettingWarning",
    "RunConfig",
    "SamplingOverrides",
    "build_config",
    "config_diff",
    "config_from_flags",
    "is_task_file",
    "load_config_file",
    "load_yaml",
    "stored_settings",
]

#: A task entry (``--task``, ``tasks:``) ending with one of these is a task config file.
TASK_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def is_task_file(entry: str) -> bool:
    """A ``--task`` / ``tasks:`` string that names a task config file rather than a built-in
    task: it ends with .yaml, .yml or .json, or holds a path separator."""
    return entry.lower().endswith(TASK_FILE_SUFFIXES) or "/" in entry or os.sep in entry


def _absolute_task_files(tasks: list[Any], base: Path) -> list[Any]:
    """Task config file paths made absolute (relative ones start at ``base``), so that the
    run records where they are and ``--resume`` finds them from any directory."""
    return [
        str((base / t).resolve()) if isinstance(t, str) and is_task_file(t) else t for t in tasks
    ]


class SamplingOverrides(BaseModel):
    """Sampling settings that override each task's defaults (``None`` = task default)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    stop: list[str] | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    reasoning_effort: str | None = Field(default=None, min_length=1)
    """Sent as ``reasoning_effort`` (``low``/``medium``/``high`` on most servers)."""


class RunConfig(BaseModel):
    """Everything ``rolleval run`` needs. See ``docs/cli.md`` for each field."""

    model_config = ConfigDict(extra="forbid")

    # --- measurement ---
    model: str = Field(min_length=1)
    """Model name sent to the endpoint, or ``local`` for the embedded llama.cpp model
    (``local:/path/model.gguf``: that GGUF file instead, read as ``local_model``)."""
    local_model: str | None = None
    """Path of a GGUF file for ``model: local`` to serve instead of the embedded model; its
    sha256 is part of the run's measurement (``local_model_sha256``), its path is not."""
    tasks: list[str | dict[str, Any]] = Field(min_length=1)
    """Built-in task names, or user-file task configs (see ``docs/tasks.md``)."""
    n_rollouts: int = Field(default=8, ge=1, le=100_000)
    """Rollouts per problem (at most 100,000). Config files may still call it ``n``."""
    seed: int = 0
    """Run seed; each rollout's sampling seed derives from (seed, problem id, rollout index)."""
    limit: int | None = Field(default=None, ge=1)
    """Use only the first ``limit`` problems of each task (canonical order: sorted ids)."""
    sampling: SamplingOverrides = Field(default_factory=SamplingOverrides)
    api: Literal["chat", "completions"] = "chat"
    system_prompt: str | None = None
    server_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """llama.cpp server settings for ``model: local`` (e.g. ``rope_freq_scale: 0.8``)."""
    denominator_policy: Literal["judged", "requested"] = "judged"
    thinking: list[str] | Literal["none"] | None = None
    """Delimiters of an inline thought, ``[open, close]``, or ``none`` (texts graded
    whole); ``None``: ``<think>``/``</think>`` for a new run, the stored ones on resume."""
    ks: list[int] | None = None
    """k values to report (default: powers of two up to n_rollouts). Reporting only: may change."""

    # --- throughput ---
    endpoints: list[str] = Field(default_factory=list)
    """Base URLs (``http://host:port/v1``) serving the same model; load is shared."""
    api_key_env: str | None = None
    concurrency: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    grading_workers: int | None = Field(default=None, ge=0)
    server_n: bool = False
    """Ask for a problem's rollouts in one request with ``n`` (only for servers that honour
    it; the choices returned are counted, missing ones are infra errors)."""

    _local_sha256: str | None = PrivateAttr(default=None)
    """sha256 of ``local_model``, set by the runner once the file is read."""
    _source: str = PrivateAttr(default="config")
    """Where the settings came from (the config file, or ``flags``), for error messages."""

    @property
    def source(self) -> str:
        return self._source

    @model_validator(mode="after")
    def _local_model_path(self) -> RunConfig:
        """``model: local:/path.gguf`` is ``model: local`` with ``local_model: /path.gguf``."""
        if self.model.startswith("local:"):
            path = self.model[len("local:") :].strip()
            if not path:
                raise ValueError(
                    "model local: needs a GGUF path after the colon (local:/path/model.gguf)"
                )
            if self.local_model is not None and self.local_model != path:
                raise ValueError(
                    f"model names {path!r} and local_model {self.local_model!r}; give the GGUF path once"
                )
            self.model, self.local_model = "local", path
        if self.local_model is not None and self.model != "local":
            raise ValueError(
                f"local_model applies only to model 'local' (the embedded llama.cpp server), not {self.model!r}"
            )
        return self

    @field_validator("ks")
    @classmethod
    def _ks_positive(cls, v: list[int] | None, info: ValidationInfo) -> list[int] | None:
        if v is not None and any(k < 1 for k in v):
            raise ValueError("every k must be >= 1")
        n = info.data.get("n_rollouts")
        too_big = sorted(k for k in v or () if isinstance(n, int) and k > n)
        if too_big:
            # pass@k and maj@k need k <= n: refuse now, not after every request is spent
            raise ValueError(
                f"k={too_big[0]} is greater than n_rollouts={n} (rollouts per problem); "
                f"give k values up to {n} or raise n_rollouts"
            )
        return None if v is None else sorted(set(v))

    @field_validator("thinking")
    @classmethod
    def _thinking_pair(cls, v: Any) -> Any:
        from ..grading import check_thinking

        return v if v is None or v == "none" else list(check_thinking(v) or ())

    def measurement(self) -> dict[str, Any]:
        """The settings that decide what the numbers mean (compared on resume). Settings
        added since a run format was written (``thinking``, ``sampling.reasoning_effort``)
        are left out while unset, so an older run resumes unchanged."""
        data = self.model_dump(mode="json")
        out = {k: data[k] for k in _MEASUREMENT}
        if out["sampling"].get("reasoning_effort") is None:
            out["sampling"].pop("reasoning_effort", None)
        if self.thinking is not None:
            out["thinking"] = data["thinking"]
        if self.local_model is not None:
            # the file's content is what is measured; where it lies is provenance
            out["local_model_sha256"] = self._local_sha256
        return out

    def throughput(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        return {k: data[k] for k in _THROUGHPUT}


_MEASUREMENT = (
    "model",
    "tasks",
    "n_rollouts",
    "seed",
    "limit",
    "sampling",
    "api",
    "system_prompt",
    "server_options",
    "denominator_policy",
)
_THROUGHPUT = (
    "endpoints",
    "api_key_env",
    "concurrency",
    "timeout_s",
    "max_retries",
    "grading_workers",
    "ks",
    "server_n",
)


#: Config-file keys renamed since: old name -> new name (the old one is still read).
OLD_KEYS = {"n": "n_rollouts"}


class OldSettingWarning(FutureWarning):
    """A config file uses the old name of a setting (``n`` for ``n_rollouts``)."""


def _rename_old_keys(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Read a config file's old setting names as the new ones; both names is an error."""
    for old, new in OLD_KEYS.items():
        if old not in data:
            continue
        if new in data:
            raise DataError(
                f"both {old!r} and {new!r} are set; {old!r} is the old name of {new!r}, "
                f"keep only {new}: {data[new]!r}",
                path=path,
            )
        data = {(new if k == old else k): v for k, v in data.items()}
        warnings.warn(
            f"{path}: {old!r} is the old name of {new!r}; rename it (read as {new} for now)",
            OldSettingWarning,
            stacklevel=3,
        )
    return data


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (plain YAML loading
    keeps the last one silently, so one of two settings would be ignored)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key: construct_mapping reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"key {key!r} is given twice; keep one",
                key_node.start_mark,
            )
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str) -> Any:
    """Parse YAML safely, refusing duplicate keys (``yaml.YAMLError`` on any problem)."""
    return yaml.load(text, Loader=_StrictLoader)


def load_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML (or JSON) run config into a dict; errors name the file. An old setting
    name (:data:`OLD_KEYS`: ``n``) is read as the new one, with an :class:`OldSettingWarning`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: config file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 text (byte {exc.start + 1}); save the config as UTF-8", path=p
        ) from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError(
            f"not valid YAML ({getattr(exc, 'problem', exc)})",
            path=p,
            line=None if mark is None else mark.line + 1,
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DataError("a run config must be a mapping of settings", path=p)
    data = _rename_old_keys(data, p)
    # relative data paths of user-file tasks are relative to the config file
    tasks = data.get("tasks")
    if isinstance(tasks, list):
        data["tasks"] = tasks = _absolute_task_files(tasks, p.parent)
        for entry in tasks:
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("path"), str)
                and not Path(entry["path"]).is_absolute()
            ):
                entry["path"] = str((p.parent / entry["path"]).resolve())
    return data


def build_config(data: dict[str, Any], *, source: str = "config") -> RunConfig:
    """Validate a settings dict into a :class:`RunConfig`; the error names the first bad key."""
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(
                sorted(
                    RunConfig.model_fields
                    if len(err["loc"]) == 1
                    else SamplingOverrides.model_fields
                )
            )
            msg = f"unknown setting (allowed: {allowed})"
        elif err["type"] == "value_error" and "error" in err.get("ctx", {}):
            msg = str(err["ctx"]["error"])  # our own check's message, without "Value error, "
        raise UsageError(f"{source}: {loc}: {msg}") from None
    config._source = source
    return config


def config_diff(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Key-level differences between two nested settings dicts, as ``key: old -> new`` lines."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "<unset>"), new.get(key, "<unset>")
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += config_diff(a, b, prefix=f"{name}.")
        elif a != b:
            out.append(f"{name}: {a!r} -> {b!r}")
    return out


def _parse_kv(pairs: tuple[str, ...] | list[str], flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise UsageError(f"{flag} takes KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


#: ``rolleval run`` flags that set one config key of the same name.
_SIMPLE_FLAGS = (
    "model",
    "n_rollouts",
    "limit",
    "seed",
    "api",
    "api_key_env",
    "concurrency",
    "timeout_s",
    "denominator_policy",
)
_SAMPLING_FLAGS = ("temperature", "top_p", "max_tokens")


def stored_settings(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The settings a run directory was started with (its measurement and its last
    throughput settings), the base of ``rolleval run --out DIR --resume``: every setting the
    run needs is in it, so a resume needs no other flag. Reads only."""
    from ..rundir._store import RunDir

    path = Path(out)
    if not path.exists():
        raise UsageError(
            f"{path}: nothing to resume (no run directory); drop --resume to start a new run"
        )
    info = RunDir.open(path).info
    data: dict[str, Any] = {**(info.throughput or {}), **(info.measurement or {})}
    if data.pop("local_model_sha256", None) is not None:
        # a GGUF file's content is measured, its path is provenance: serve the file from
        # where the run found it (a file given again is checked against the stored sha256)
        served = ((info.provenance or {}).get("server") or {}).get("model_path")
        if served:
            data["local_model"] = served
    if not data.get("model") or not data.get("tasks"):
        raise UsageError(
            f"{path}: the run records no settings to resume from (made by `rolleval import`?); "
            "pass --config or --model and --task"
        )
    return data


def config_from_flags(
    config_path: str | None, flags: dict[str, Any], *, base: dict[str, Any] | None = None
) -> RunConfig:
    """The run config from an optional YAML file and ``rolleval run`` flags (flags win).

    ``base``: settings under both (a resumed run's :func:`stored_settings`): a setting that
    neither the file nor a flag gives keeps its stored value, one that they give must match
    it (``--resume`` compares them).

    ``flags`` holds the CLI's values by config key (``None`` or empty = not given):
    ``model, n_rollouts, limit, seed, api, api_key_env, concurrency, timeout_s, denominator_policy,
    temperature, top_p, max_tokens, stop, endpoints, tasks, ks, server_options`` (``KEY=VALUE``
    strings) and ``server_n``.
    """
    data: dict[str, Any] = load_config_file(config_path) if config_path else {}
    if base:
        if data.get("model") or flags.get("model"):
            # a model given again replaces the stored one, GGUF path included
            base = {k: v for k, v in base.items() if k != "local_model"}
        data = {**base, **data}
    sampling = dict(data.get("sampling") or {})
    for key in _SAMPLING_FLAGS:
        if flags.get(key) is not None:
            sampling[key] = flags[key]
    if flags.get("stop"):
        sampling["stop"] = list(flags["stop"])
    if sampling:
        data["sampling"] = sampling
    for key in _SIMPLE_FLAGS:
        if flags.get(key) is not None:
            data[key] = flags[key]
    if flags.get("server_n"):
        data["server_n"] = True
    for key in ("endpoints", "tasks", "ks"):
        if flags.get(key):
            data[key] = list(flags[key])
    if flags.get("tasks"):
        data["tasks"] = _absolute_task_files(data["tasks"], Path.cwd())
    if flags.get("server_options"):
        data["server_options"] = {
            **(data.get("server_options") or {}),
            **_parse_kv(flags["server_options"], "--server-option"),
        }
    where = f"{config_path}: " if config_path else ""
    if "model" not in data:
        raise UsageError(
            f"{where}no model: pass --model NAME (or --model local), or set model in --config"
        )
    if not data.get("tasks"):
        raise UsageError(
            f"{where}no task: pass --task NAME or --task FILE.yaml (repeatable; `rolleval tasks` lists the built-in ones), or set tasks in --config"
        )
    return build_config(data, source=config_path or "flags")
