"""An endpoint's run-level noise, measured from A/A replicate runs, for ``rolleval compare``.

``measure_run_noise(runs)`` reads n_runs >= 2 run directories of one configuration (the same
model, serving, tasks and rollouts per problem; only the run seed differs) and gives, per
task, :func:`rolleval.stats.run_noise` over the problems all of them judged.
``save_run_noise`` writes it as a small JSON file (``format: rolleval-run-noise``) and
``load_run_noise`` reads the per-task run-level variance back for
``compare_runs(..., run_noise=...)``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import UsageError
from ..stats import RunNoise, run_noise
from ._frame import load_frames

__all__ = [
    "NOISE_FORMAT",
    "VALIDITY_NOTE",
    "load_run_noise",
    "measure_run_noise",
    "save_run_noise",
]

NOISE_FORMAT = "rolleval-run-noise"

#: What a comparison of one run per side rests on, said in its output when no measured
#: run-level noise is given (docs/contract.md, "Run-level noise").
VALIDITY_NOTE = (
    "validity: the interval and p-value treat the problems of one run as independent "
    "(no run-level variance); with one run per side rolleval cannot check this. Measure the "
    "endpoint's run-level noise from A/A replicate runs (rolleval noise RUN RUN ... "
    "--output noise.json, at least 8 runs) and compare with rolleval compare --run-noise "
    "noise.json"
)


def measure_run_noise(runs: Sequence[str | os.PathLike[str]]) -> dict[str, RunNoise]:
    """Per task, the run-level noise of ``runs`` (A/A replicates; see the module docstring).

    Every run must hold the same tasks; a task's problems are those every run judged
    (``n >= 1``). Raises ``UsageError`` with fewer than 2 runs, different task sets, or a
    task with no problem judged in every run.
    """
    if len(runs) < 2:
        raise UsageError(f"measuring run-level noise needs at least 2 runs, got {len(runs)}")
    frames = [load_frames(r) for r in runs]
    names = list(frames[0])
    for r, fr in zip(runs, frames):
        if sorted(fr) != sorted(names):
            raise UsageError(
                f"{r}: tasks {', '.join(sorted(fr))} differ from {runs[0]}'s "
                f"({', '.join(sorted(names))}); replicate runs must hold the same tasks"
            )
    out: dict[str, RunNoise] = {}
    for task in names:
        common = set(frames[0][task].ids)
        for fr in frames[1:]:
            common &= set(fr[task].ids)
        rows_c, rows_n = [], []
        for fr in frames:
            f = fr[task]
            pos = {pid: i for i, pid in enumerate(f.ids)}
            idx = [pos[pid] for pid in sorted(common)]
            rows_c.append(np.asarray(f.c)[idx])
            rows_n.append(np.asarray(f.n)[idx])
        c, n = np.array(rows_c), np.array(rows_n)
        judged_everywhere = np.all(n >= 1, axis=0)
        if not judged_everywhere.any():
            raise UsageError(f"task {task!r}: no problem was judged in every run")
        out[task] = run_noise(c[:, judged_everywhere], n[:, judged_everywhere])
    return out


def save_run_noise(
    path: str | os.PathLike[str],
    noise: dict[str, RunNoise],
    runs: Sequence[str | os.PathLike[str]],
) -> dict[str, Any]:
    """Write ``noise`` (from :func:`measure_run_noise`) as JSON; returns the document."""
    from ..rundir._store import atomic_write_json

    doc = {
        "format": NOISE_FORMAT,
        "version": 1,
        "runs": [str(r) for r in runs],
        "tasks": {t: v.to_dict() for t, v in noise.items()},
    }
    atomic_write_json(path, doc)
    return doc


def load_run_noise(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Per task, the stored figures of a run-noise file (``run_variance`` among them)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.loads(fh.read())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the run-noise file: {exc.strerror}") from None
    except ValueError:
        raise UsageError(f"{path}: not JSON; make it with `rolleval noise ... --output`") from None
    if not isinstance(doc, dict) or doc.get("format") != NOISE_FORMAT:
        raise UsageError(
            f"{path}: not a run-noise file (format {NOISE_FORMAT!r}); make it with "
            "`rolleval noise RUN RUN ... --output FILE`"
        )
    tasks = doc.get("tasks")
    if not isinstance(tasks, dict):
        raise UsageError(f"{path}: no 'tasks' object; remake it with `rolleval noise`")
    for name, rec in tasks.items():
        v = rec.get("run_variance") if isinstance(rec, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise UsageError(
                f"{path}: task {name!r} has no valid run_variance (a number >= 0); remake the file"
            )
    return tasks
