"""What changed between the two sides of a comparison: the recorded settings, side by side.

A verdict says *what moved*; this block says *what changed*: the differences between the two
runs' measurement and serving settings (model and model file, endpoint, server options,
sampling, prompt template, grader, rolleval and package versions), each as
``setting: baseline value -> candidate value``. It supports attribution, not proof of cause:
a setting that changed is a candidate explanation of an effect, nothing more.

:func:`what_changed` is pure: two :class:`SideRecord` values (a manifest's run-level
settings and the compared tasks' settings) in, one frozen :class:`WhatChanged` out. The
renderers only lay it out. :func:`side_record` reads a side from disk (a run directory or a
baseline file).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Change", "SideLabel", "SideRecord", "WhatChanged", "side_record", "what_changed"]

#: Said once, with every "what changed" block.
ATTRIBUTION_NOTE = (
    "these recorded settings differ between the runs; a change listed here may explain an "
    "effect but is not proof of its cause"
)
NOTHING_CHANGED = "nothing changed in the recorded settings"
_UNSET = "(unset)"
_SHA_SHOWN = 16


@dataclass(frozen=True)
class SideLabel:
    """How a side is named for people (model and run directory), with its id kept."""

    model: str | None
    run_dir: str
    run_id: str | None
    kind: str

    @property
    def text(self) -> str:
        where = f"run {self.run_dir}" if self.kind == "run" else f"baseline file {self.run_dir}"
        return f"{self.model or 'unknown model'} ({where})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.text,
            "model": self.model,
            "run_dir": self.run_dir,
            "run_id": self.run_id,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Change:
    """One setting that differs: its name and both values, formatted for people."""

    setting: str
    baseline: str
    candidate: str

    @property
    def line(self) -> str:
        return f"{self.setting}: {self.baseline} -> {self.candidate}"

    def to_dict(self) -> dict[str, str]:
        return {"setting": self.setting, "baseline": self.baseline, "candidate": self.candidate}


@dataclass(frozen=True)
class WhatChanged:
    """The differences between two sides' recorded settings (:func:`what_changed`)."""

    baseline: SideLabel
    candidate: SideLabel
    changes: tuple[Change, ...]
    note: str = ATTRIBUTION_NOTE

    @property
    def lines(self) -> list[str]:
        return [c.line for c in self.changes] or [NOTHING_CHANGED]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "changes": [c.to_dict() for c in self.changes],
            "nothing_changed": not self.changes,
            "summary": NOTHING_CHANGED
            if not self.changes
            else f"{len(self.changes)} settings differ",
            "note": self.note,
        }


@dataclass(frozen=True)
class SideRecord:
    """One side's recorded settings: the manifest's run-level ones and each task's."""

    label: SideLabel
    manifest: Mapping[str, Any]
    """``rolleval_version``, ``measurement``, ``provenance``, ``config``, ``import`` (any may be absent)."""
    tasks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Task name -> its settings (``grader_identity``, ``sampling``, ``source``, ...)."""


# --------------------------------------------------------------------------- formatting


def human(value: Any) -> str:
    """A recorded value as a person reads it: no Python reprs, no dict braces."""
    if value is None:
        return _UNSET
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        short = f"{value:g}"  # 1.0 -> "1"; never hides a difference: else the full repr
        return short if float(short) == value else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        text = json.dumps(value)[1:-1] if any(c < " " for c in value) else value
        return text or '""'
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={human(v)}" for k, v in sorted(value.items())) or "(none)"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(human(v) for v in value) + "]"
    return str(value)


def _dotted(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Leaves of nested mappings by dotted key: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    out: dict[str, Any] = {}
    for k, v in sorted(value.items()):
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(_dotted(v, f"{key}."))
        else:
            out[key] = v
    return out


def _get(d: Mapping[str, Any] | None, *path: str) -> Any:
    cur: Any = d
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _short_sha(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _SHA_SHOWN:
        return value[:_SHA_SHOWN] + "..."
    return value


# --------------------------------------------------------------------------- the settings


def _endpoint(manifest: Mapping[str, Any]) -> Any:
    prov = manifest.get("provenance") or {}
    if _get(prov, "server", "launcher"):
        # the embedded server's port is drawn afresh each run: the launcher is the endpoint
        return f"rolleval's {prov['server']['launcher']} launcher on 127.0.0.1"
    urls = _get(prov, "endpoint", "base_urls")
    return ", ".join(urls) if isinstance(urls, list) and urls else None


def _model(manifest: Mapping[str, Any]) -> Any:
    served = _get(manifest, "provenance", "endpoint", "model")
    return served or _get(manifest, "config", "model") or _get(manifest, "measurement", "model")


def _harness(manifest: Mapping[str, Any]) -> Any:
    imported = _get(manifest, "provenance", "imported")
    if not isinstance(imported, Mapping) or not imported.get("harness"):
        return None
    version = imported.get("harness_version")
    return f"{imported['harness']} {version}" if version else imported["harness"]


def run_settings(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The run-level settings compared, by the name they are shown under."""
    m = manifest.get("measurement") or {}
    prov = manifest.get("provenance") or {}
    server = prov.get("server") or {}
    out: dict[str, Any] = {
        "model": _model(manifest),
        "model file": server.get("model_file"),
        "model file sha256": _short_sha(server.get("model_sha256")),
        "endpoint": _endpoint(manifest),
        "api": m.get("api") or _get(prov, "endpoint", "api"),
        "imported from": _harness(manifest),
        "chat template sha": _short_sha(_get(prov, "imported", "chat_template_sha")),
        "system prompt": m.get("system_prompt"),
        "run seed": m.get("seed"),
        "limit": m.get("limit"),
        "rolleval version": manifest.get("rolleval_version"),
        "python": prov.get("python"),
        "platform": prov.get("platform"),
    }
    for key, value in sorted((server.get("server_options") or {}).items()):
        out[f"server option {key}"] = value
    for name, version in sorted((prov.get("packages") or {}).items()):
        if name != "rolleval":  # the rolleval version is its own line
            out[f"package {name}"] = version
    return out


def _source_summary(source: Any) -> Any:
    """The data source in one phrase: package or harness, task, version, path, hash."""
    if not isinstance(source, Mapping):
        return source
    parts = [
        str(source[k])
        for k in ("package", "harness", "task", "eval_set_name", "dataset", "path")
        if isinstance(source.get(k), (str, int, float)) and source.get(k) != ""
    ]
    if isinstance(source.get("version"), (str, int, float)):
        parts.append(f"version {source['version']}")
    for k in ("sha256", "task_hash", "eval_set_hash"):
        if isinstance(source.get(k), str):
            parts.append(f"{k} {_short_sha(source[k])}")
            break
    return " ".join(parts) or human(source)


def task_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The task-level settings compared, by the name they are shown under."""
    out: dict[str, Any] = {
        "grader": settings.get("grader_identity"),
        "score": settings.get("score_key"),
        "rollouts per problem": settings.get("n_rollouts"),
        "data source": _source_summary(settings.get("source")),
    }
    sampling = settings.get("sampling") or {}
    if isinstance(sampling, Mapping):
        for key, value in _dotted(sampling).items():
            if value == {} or value is None:
                continue  # an empty extra_body or an unset field: the server default
            out[f"sampling {key}"] = value
    return out


def _diff(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[Change]:
    out = []
    for key in list(dict.fromkeys([*baseline, *candidate])):
        va, vb = human(baseline.get(key)), human(candidate.get(key))
        if va != vb:
            out.append(Change(key, va, vb))
    return out


def what_changed(
    baseline: SideRecord,
    candidate: SideRecord,
    pairs: Sequence[tuple[str, str]] = (),
) -> WhatChanged:
    """The recorded settings that differ between ``baseline`` and ``candidate``.

    ``pairs`` are the compared tasks (baseline name, candidate name). Run-level settings
    are listed once; a task-level difference that every compared task shares is listed once
    too, otherwise once per task with the task named. Pure: no I/O.
    """
    changes = _diff(run_settings(baseline.manifest), run_settings(candidate.manifest))
    per_task: dict[tuple[str, str, str], list[str]] = {}
    for b_name, c_name in pairs:
        diff = _diff(
            task_settings(baseline.tasks.get(b_name) or {}),
            task_settings(candidate.tasks.get(c_name) or {}),
        )
        for ch in diff:
            per_task.setdefault((ch.setting, ch.baseline, ch.candidate), []).append(b_name)
    for (setting, vb, vc), names in per_task.items():
        if len(names) == len(pairs):
            changes.append(Change(setting, vb, vc))
        else:
            for name in names:
                changes.append(Change(f"task {name}: {setting}", vb, vc))
    return WhatChanged(baseline.label, candidate.label, tuple(changes))


# --------------------------------------------------------------------------- reading a side


def side_record(
    path: str | os.PathLike[str], task_settings_by_name: Mapping[str, Mapping[str, Any]]
) -> SideRecord:
    """A side as recorded on disk: a run directory's manifest, or a baseline file's copy of
    it (``task_settings_by_name``: each task's settings, e.g. from its
    :class:`~rolleval.compare.ProblemFrame`)."""
    p = Path(path)
    manifest: dict[str, Any]
    if p.is_file():
        from ._frame import read_baseline

        doc = read_baseline(p)
        manifest = {
            "run_id": doc.run_id,
            "rolleval_version": doc.rolleval_version,
            "measurement": doc.measurement,
            "provenance": doc.provenance,
            "config": {"model": doc.model},
        }
        kind = "baseline"
    else:
        from ..rundir._store import RunDir

        manifest = dict(RunDir.open(p).manifest)
        kind = "run"
    name = p.resolve().name or str(p)
    label = SideLabel(_model(manifest), name, manifest.get("run_id"), kind)
    return SideRecord(label, manifest, dict(task_settings_by_name))
