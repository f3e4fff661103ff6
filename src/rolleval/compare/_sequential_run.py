"""``rolleval compare BASE CAND`` when CAND is a sequential run (``run --until-decided``).

The run's recorded design decides: the paired differences are recomputed from the two runs
in the recorded visit order, the confidence sequence at the recorded looks and the rule
(:mod:`._sequential`) give each task's verdict, and it must equal the recorded one. Against
any other baseline the comparison is refused (exit 2): after optional stopping the
fixed-sample interval does not hold, and the run's sequence was built against its BASE.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EXIT_OK, DataError, UsageError
from ..records import SequentialDesign, SequentialTask
from ..rundir._store import RunDir, collect_warnings
from ..stats import betting_cs
from ._align import align_frames
from ._changed import WhatChanged, side_record, what_changed
from ._frame import ProblemFrame, load_frames
from ._sequential import SEQUENTIAL_DESIGN, sequential_overall, sequential_verdict, stopped_line

__all__ = [
    "SequentialCompareResult",
    "compare_sequential_run",
    "refuse_sequential",
    "sequential_design_of",
]


def sequential_design_of(path: str | os.PathLike[str]) -> SequentialDesign | None:
    """The recorded design of a sequential run directory; None for anything else."""
    p = Path(path)
    if not p.is_dir():
        return None
    try:
        return RunDir.open(p).info.sequential
    except Exception:  # not a run directory: the normal path reports it
        return None


def refuse_sequential(
    baseline: str | os.PathLike[str], candidate: str | os.PathLike[str], *, hint: str
) -> None:
    """``UsageError`` (exit 2) when either side is a sequential run: a fixed-sample interval
    does not hold after optional stopping."""
    for side, path in (("candidate", candidate), ("baseline", baseline)):
        if sequential_design_of(path) is not None:
            raise UsageError(
                f"{path}: the {side} is a sequential run (--until-decided): the fixed-sample "
                f"interval does not hold after optional stopping; {hint} gives its sequential "
                "verdict"
            )


@dataclass(frozen=True)
class SequentialCompareResult:
    """The final verdict of a sequential run against its BASE.

    ``design`` is the recorded design (``SequentialDesign``, as JSON) with only the tasks
    compared; ``exit_code`` is 0 under ``observe``."""

    baseline: str
    candidate: str
    design: dict[str, Any]
    verdicts: dict[str, str]
    verdict: str
    exit_code: int
    changed: WhatChanged | None = field(default=None)
    """What changed between the two sides' recorded settings (beside what moved)."""
    observe: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = self.design
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "what_changed": self.changed.to_dict() if self.changed else None,
            "method": f"{SEQUENTIAL_DESIGN}: {d['method']}",
            "design": SEQUENTIAL_DESIGN,
            "metric": d["metric"],
            "unit": "problem",
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "observe": self.observe,
            "alpha": d["alpha"],
            "threshold": d["threshold"],
            "multiplicity": d["multiplicity"],
            "order_seed": d["order_seed"],
            "round_problems": d["round_problems"],
            "max_problems": d["max_problems"],
            "stopping_reason": d.get("stopping_reason"),
            "tasks": [self._task(name, rec) for name, rec in d["tasks"].items()],
        }

    def _task(self, name: str, rec: dict[str, Any]) -> dict[str, Any]:
        """One task: its verdict, where it stopped, and (``sequence``) every look."""
        return {
            "task": name,
            "verdict": self.verdicts[name],
            "stopped_after": rec["stopped_after"],
            "budget": len(rec["order"]),
            "ci_low": rec["looks"][-1]["lower"] if rec["looks"] else None,
            "ci_high": rec["looks"][-1]["upper"] if rec["looks"] else None,
            "looks": len(rec["looks"]),
            "summary": stopped_line(name, rec),
            "alpha": rec["alpha"],
            "reason": rec.get("reason"),
            "sequence": rec["looks"],
        }


def _same_base(
    recorded: dict[str, Any], baseline: str | os.PathLike[str], run_id: str | None
) -> bool:
    if recorded.get("run_id") is not None and run_id is not None:
        return bool(recorded["run_id"] == run_id)
    return Path(str(recorded.get("path"))).resolve() == Path(baseline).resolve()


def compare_sequential_run(
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    *,
    tasks: list[str] | None = None,
    observe: bool = False,
    require_provenance: bool = False,
) -> SequentialCompareResult:
    """The verdict of sequential run ``candidate`` against its BASE ``baseline`` (see the
    module docstring); ``UsageError`` (exit 2) against another baseline.

    ``tasks``: only these tasks of the design (each keeps its recorded level, alpha over
    the run's tasks, so the overall verdict over fewer tasks stays valid); ``observe``: exit
    0 whatever the verdict; ``require_provenance``: refuse a task whose sides lack content
    hashes or a grader identity, as compare does."""
    design = sequential_design_of(candidate)
    if design is None:
        raise UsageError(f"{candidate}: not a sequential run (rolleval run --until-decided)")
    names = _selected_tasks(design, tasks, candidate)
    with collect_warnings():
        base_frames = load_frames(baseline)
        cand_frames = load_frames(candidate)
    first = next(iter(base_frames.values()), None)
    rec = design.model_dump(mode="json")
    if first is None or not _same_base(rec["baseline"], baseline, first.run_id):
        raise UsageError(
            f"{candidate} is a sequential run against {rec['baseline'].get('path')} "
            f"(run id {rec['baseline'].get('run_id')}): it stopped on that comparison, so a "
            "fixed-sample interval against another baseline does not hold after optional "
            "stopping; compare it with its own BASE"
        )
    rec["tasks"] = {name: rec["tasks"][name] for name in names}
    verdicts: dict[str, str] = {}
    for name in names:
        task = design.tasks[name]
        verdicts[name] = _replay(name, task, base_frames, cand_frames, design, candidate)
        if require_provenance:
            align_frames(
                base_frames[name], cand_frames[name], unmatched="exclude", require_provenance=True
            )
    overall, code = sequential_overall(verdicts)
    changed = what_changed(
        side_record(baseline, {t: fr.settings for t, fr in base_frames.items()}),
        side_record(candidate, {t: fr.settings for t, fr in cand_frames.items()}),
        [(name, name) for name in names],
    )
    return SequentialCompareResult(
        baseline=str(baseline),
        candidate=str(candidate),
        design=rec,
        verdicts=verdicts,
        verdict=overall,
        exit_code=EXIT_OK if observe else code,
        changed=changed,
        observe=observe,
    )


def _selected_tasks(
    design: SequentialDesign, tasks: list[str] | None, candidate: str | os.PathLike[str]
) -> list[str]:
    """The design's tasks, or those of ``tasks`` (``UsageError`` naming one it lacks)."""
    if not tasks:
        return list(design.tasks)
    for name in tasks:
        if name not in design.tasks:
            raise UsageError(
                f"--task {name}: not a task of the sequential run {candidate} "
                f"(its tasks: {', '.join(design.tasks)})"
            )
    return list(dict.fromkeys(tasks))


def _replay(
    name: str,
    task: SequentialTask,
    base_frames: Mapping[str, ProblemFrame],
    cand_frames: Mapping[str, ProblemFrame],
    design: SequentialDesign,
    candidate: str | os.PathLike[str],
) -> str:
    """Recompute the task's sequence at its recorded looks; it must give the recorded verdict."""
    if name not in base_frames or name not in cand_frames:
        raise DataError(
            f"task {name!r} of the sequential design is missing from a run", path=candidate
        )
    base, cand = base_frames[name], cand_frames[name]
    vb = dict(zip(base.ids, base.value("pass@1").tolist()))
    vc = dict(zip(cand.ids, cand.value("pass@1").tolist()))
    visited = (
        task.stopped_after
        if task.stopped_after is not None
        else (task.looks[-1].problems if task.looks else 0)
    )
    d = [
        vc[pid] - vb[pid]
        for pid in task.order[:visited]
        if math.isfinite(vb.get(pid, math.nan)) and math.isfinite(vc.get(pid, math.nan))
    ]
    counts = sorted({look.values for look in task.looks if look.values > 0})
    if not counts:
        return task.verdict or "inconclusive"
    cs = betting_cs(d, alpha=task.alpha, looks=counts) if len(d) == counts[-1] else None
    if (
        cs is None
        or abs(cs.upper[-1] - task.looks[-1].upper) > 1e-9
        or abs(cs.lower[-1] - task.looks[-1].lower) > 1e-9
    ):
        raise DataError(
            f"task {name!r}: the recorded looks do not match the runs' judgements (was a run "
            "regraded or edited?); the sequential verdict cannot be replayed",
            path=candidate,
        )
    spent = visited >= len(task.order)
    decision = sequential_verdict(
        float(cs.lower[-1]),
        float(cs.upper[-1]),
        effect=math.fsum(d) / len(d),
        threshold=design.threshold,
        spent=spent,
    )
    verdict = decision.verdict or "inconclusive"
    if task.verdict is not None and verdict != task.verdict:
        raise DataError(
            f"task {name!r}: replayed verdict {verdict!r} differs from the recorded {task.verdict!r}",
            path=candidate,
        )
    return verdict
