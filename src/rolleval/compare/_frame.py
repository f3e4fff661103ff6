"""Per-problem values of one task of one run: what ``compare``, ``gate`` and ``plan`` consume.

A :class:`ProblemFrame` is built from a run directory (via its judgements) or read back from
a compact baseline file (``rolleval baseline save``); both give identical frames, so a CI job
can gate against a baseline file without the baseline's run directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import DataError, UsageError
from ..report import DEFAULT_TAUS, per_problem_values
from ..store import RunDir, atomic_write_json, collect_warnings, read_json
from ..table import STATUS_CODES, TaskTable, load_task_table

__all__ = [
    "BASELINE_FORMAT",
    "HEALTH_METRICS",
    "ProblemFrame",
    "frames_from_baseline",
    "frames_from_run",
    "load_frames",
    "metric_direction",
    "save_baseline",
]

BASELINE_FORMAT = "rolleval-baseline"
BASELINE_SCHEMA = 1

#: Health metrics available to compare, all "lower is better", per problem:
HEALTH_METRICS = {
    "unextracted_rate": "gradable rollouts with no extracted answer / gradable rollouts",
    "truncation_rate": "completed rollouts cut at max_tokens / completed rollouts",
    "infra_error_rate": "rollouts lost to infra errors or timeouts / requested rollouts",
    "grader_error_rate": "completed rollouts whose grading failed / completed rollouts",
    "output_tokens": "mean completion tokens of completed rollouts",
}

# settings that must agree for two frames to be comparable, and those that are only noted
_MUST_MATCH = ("grader_identity", "score_key")
_NOTED = ("sampling", "n_rollouts", "denominator_policy", "source")


def metric_direction(name: str) -> int:
    """+1 when higher is better, -1 for the health metrics (lower is better)."""
    return -1 if name in HEALTH_METRICS else +1


@dataclass
class ProblemFrame:
    """One task of one run, problem by problem (canonical order: sorted ids)."""

    task: str
    ids: list[str]
    hashes: list[str | None]
    clusters: list[str | None]
    n: np.ndarray  # gradable rollouts per problem
    c: np.ndarray  # correct among them
    requested: np.ndarray
    values: dict[str, np.ndarray]  # metric name -> per-problem value (NaN = not eligible)
    settings: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    kind: str = "run"
    run_id: str | None = None
    model: str | None = None

    @property
    def has_hashes(self) -> bool:
        return bool(self.ids) and all(h is not None for h in self.hashes)

    def value(self, metric: str) -> np.ndarray:
        try:
            return self.values[metric]
        except KeyError:
            names = ", ".join(sorted(self.values))
            raise UsageError(
                f"{self.source}: task {self.task!r} has no metric {metric!r} (available: {names})"
            ) from None


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(len(num), np.nan)
    ok = den > 0
    out[ok] = num[ok] / den[ok]
    return out


def frame_from_table(
    table: TaskTable,
    settings: dict[str, Any],
    *,
    source: str = "",
    run_id: str | None = None,
    model: str | None = None,
) -> ProblemFrame:
    """All per-problem metric values of a task (the report's metrics plus health rates)."""
    req = table.requested
    ks = [int(k) for k in (settings.get("ks") or _default_ks(req))]
    taus = tuple(float(t) for t in settings.get("taus", DEFAULT_TAUS))
    vals = per_problem_values(
        table,
        ks=ks,
        taus=taus,
        denominator_policy=settings.get("denominator_policy", "judged"),
        score_key=settings.get("score_key", "correct"),
    )
    values = {name: v for name, (v, _p, _r) in vals.items()}
    g = table.r_gradable
    st = table.r_status
    ok = st == STATUS_CODES["ok"]
    n_g = table.per_problem(g)
    n_ok = table.per_problem(ok)
    values["unextracted_rate"] = _ratio(table.per_problem(g & ~table.r_extracted), n_g)
    values["truncation_rate"] = _ratio(table.per_problem(ok & table.r_truncated), n_ok)
    infra = (st == STATUS_CODES["infra_error"]) | (st == STATUS_CODES["timeout"])
    values["infra_error_rate"] = _ratio(table.per_problem(infra), req.astype(float))
    values["grader_error_rate"] = _ratio(table.per_problem(ok & table.r_grader_error), n_ok)
    has_tok = ok & ~np.isnan(table.r_output_tokens)
    values["output_tokens"] = _ratio(
        table.per_problem(has_tok, np.nan_to_num(table.r_output_tokens)), table.per_problem(has_tok)
    )
    return ProblemFrame(
        task=settings.get("name") or "",
        ids=list(table.problem_ids),
        hashes=list(table.content_hashes),
        clusters=list(table.clusters),
        n=n_g.astype(np.int64),
        c=table.per_problem(g & table.r_correct).astype(np.int64),
        requested=req.copy(),
        values=values,
        settings={
            k: settings.get(k)
            for k in (
                "name",
                "grader_identity",
                "score_key",
                "sampling",
                "n_rollouts",
                "denominator_policy",
                "source",
                "ks",
            )
        },
        source=source,
        run_id=run_id,
        model=model,
    )


def _default_ks(req: np.ndarray) -> list[int]:
    from ..metrics import default_ks

    return default_ks(max(int(req.min()) if len(req) else 1, 1))


def frames_from_run(path: str | os.PathLike[str]) -> dict[str, ProblemFrame]:
    run = RunDir.open(path)
    out: dict[str, ProblemFrame] = {}
    with collect_warnings():
        for tf in run.tasks():
            settings = tf.read_task()
            settings.setdefault("name", tf.name)
            table = load_task_table(tf, settings=settings)
            out[tf.name] = frame_from_table(
                table,
                settings,
                source=str(path),
                run_id=run.manifest.get("run_id"),
                model=(run.manifest.get("config") or {}).get("model"),
            )
    return out


def _json_floats(a: np.ndarray) -> list[float | None]:
    return [None if np.isnan(x) else float(x) for x in a.tolist()]


def save_baseline(
    run_path: str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool = False
) -> dict[str, Any]:
    """Write a compact baseline (per-problem counts, metric values, hashes, provenance)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise UsageError(f"{out}: file exists; pass --force to replace it, or choose another --out")
    run = RunDir.open(run_path)
    frames = frames_from_run(run_path)
    doc: dict[str, Any] = {
        "format": BASELINE_FORMAT,
        "schema_version": BASELINE_SCHEMA,
        "rolleval_version": __version__,
        "run_id": run.manifest.get("run_id"),
        "model": (run.manifest.get("config") or {}).get("model"),
        "provenance": run.manifest.get("provenance"),
        "measurement": run.manifest.get("measurement"),
        "tasks": {},
    }
    for name, fr in frames.items():
        doc["tasks"][name] = {
            "settings": fr.settings,
            "ids": fr.ids,
            "hashes": fr.hashes,
            "clusters": fr.clusters,
            "n": fr.n.tolist(),
            "c": fr.c.tolist(),
            "requested": fr.requested.tolist(),
            "values": {k: _json_floats(v) for k, v in sorted(fr.values.items())},
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, doc)
    return doc


def frames_from_baseline(path: str | os.PathLike[str]) -> dict[str, ProblemFrame]:
    doc = read_json(path, what="baseline file")
    if not isinstance(doc, dict) or doc.get("format") != BASELINE_FORMAT:
        raise DataError(
            f"not a rolleval baseline file (format must be {BASELINE_FORMAT!r}); write one with `rolleval baseline save`",
            path=path,
        )
    if doc.get("schema_version") != BASELINE_SCHEMA:
        raise DataError(
            f"baseline schema version {doc.get('schema_version')!r} (written by rolleval {doc.get('rolleval_version')}) "
            f"is not readable by this rolleval (reads {BASELINE_SCHEMA})",
            path=path,
        )
    out: dict[str, ProblemFrame] = {}
    tasks = doc.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise DataError(
            f"'tasks' must map task names to per-problem data, got {type(tasks).__name__}; "
            "write the baseline again with `rolleval baseline save`",
            path=path,
        )
    for name, t in tasks.items():
        try:
            if not isinstance(t, dict) or not isinstance(t["ids"], list):
                raise TypeError("not an object with an 'ids' list")
            if len(set(map(str, t["ids"]))) != len(t["ids"]):
                raise ValueError("a problem id is listed twice")
            T = len(t["ids"])
            values = {
                k: np.array([np.nan if x is None else x for x in v], dtype=float)
                for k, v in t["values"].items()
            }
            lists = [t["n"], t["c"], t["hashes"], t["requested"], *values.values()]
            if t.get("clusters") is not None:
                lists.append(t["clusters"])
            if any(len(v) != T for v in lists):
                raise ValueError("per-problem lists differ in length")
            out[name] = ProblemFrame(
                task=name,
                ids=list(t["ids"]),
                hashes=list(t["hashes"]),
                clusters=list(t.get("clusters") or [None] * T),
                n=np.array(t["n"], dtype=np.int64),
                c=np.array(t["c"], dtype=np.int64),
                requested=np.array(t["requested"], dtype=np.int64),
                values=values,
                settings=dict(t.get("settings") or {}),
                source=str(path),
                kind="baseline",
                run_id=doc.get("run_id"),
                model=doc.get("model"),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise DataError(
                f"task {name!r} is malformed ({exc}); write the baseline again with `rolleval baseline save`",
                path=path,
            ) from None
    return out


def load_frames(path: str | os.PathLike[str]) -> dict[str, ProblemFrame]:
    """Frames of every task from a run directory or a baseline file."""
    p = Path(path)
    if p.is_file():
        return frames_from_baseline(p)
    return frames_from_run(p)
