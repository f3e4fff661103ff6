"""``rolleval compare`` over run directories (or baseline files): align, compare, decide.

For every task both sides have: match problems (:mod:`._align`), take the chosen metric's
per-problem values on each side, run the paired comparison (:func:`paired_compare`), and add
the secondary panels (health deltas, self-consistency delta, problems that moved most). The
overall verdict applies Holm across tasks (:func:`gate_decision`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import EXIT_OK, UsageError
from ._align import Alignment, align_frames
from ._common_k import COMMON_K_METRICS, common_k_values
from ._frame import HEALTH_METRICS, ProblemFrame, load_frames, metric_direction
from ._movers import problem_movers
from ._paired import PairedInput, paired_compare
from ._verdict import gate_decision

__all__ = ["CompareResult", "TaskComparison", "compare_frames", "compare_runs", "default_threshold"]

_RATE_METRICS_PREFIX = ("pass@", "pass^", "G-Pass@", "mG-Pass@", "maj@", "consecutive-pass^")


def _is_rate(metric: str) -> bool:
    return metric.startswith(_RATE_METRICS_PREFIX) or metric in (
        "self_consistency",
        *[m for m in HEALTH_METRICS if m.endswith("_rate")],
    )


def default_threshold(metric: str) -> float:
    """0.02 for metrics on a 0-1 scale; other metrics need an explicit threshold."""
    if _is_rate(metric):
        return 0.02
    raise UsageError(
        f"metric {metric!r} is not a rate on a 0-1 scale: pass --threshold in its own units"
    )


@dataclass
class TaskComparison:
    task: str
    metric: str
    comparison: Any  # Comparison
    alignment: Alignment
    sides: dict[str, dict[str, Any]]
    health: dict[str, dict[str, Any]]
    self_consistency: dict[str, Any] | None
    movers: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "metric": self.metric,
            **self.comparison.to_dict(),
            "better": "higher" if metric_direction(self.metric) > 0 else "lower",
            "alignment": self.alignment.to_dict(),
            "sides": self.sides,
            "health": self.health,
            "self_consistency": self.self_consistency,
            "movers": self.movers,
        }


@dataclass
class CompareResult:
    baseline: str
    candidate: str
    metric: str
    tasks: list[TaskComparison]
    verdict: str
    exit_code: int
    adjusted_pvalues: dict[str, float | None] = field(default_factory=dict)
    skipped_tasks: dict[str, str] = field(default_factory=dict)
    observe: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "metric": self.metric,
            "unit": "problem",
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "observe": self.observe,
            "multiplicity": "Holm across tasks",
            "adjusted_pvalues": self.adjusted_pvalues,
            "skipped_tasks": self.skipped_tasks,
            "tasks": [t.to_dict() for t in self.tasks],
        }


def _side_counts(fr: ProblemFrame, pos: np.ndarray) -> dict[str, Any]:
    return {
        "source": fr.source,
        "kind": fr.kind,
        "run_id": fr.run_id,
        "model": fr.model,
        "problems": len(fr.ids),
        "matched_problems": len(pos),
        "gradable_rollouts": int(fr.n[pos].sum()),
        "requested_rollouts": int(fr.requested[pos].sum()),
        "correct_rollouts": int(fr.c[pos].sum()),
    }


def _mean(a: np.ndarray) -> float | None:
    a = a[~np.isnan(a)]
    return float(a.mean()) if len(a) else None


def compare_frames(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    *,
    metric: str = "pass@1",
    threshold: float | None = None,
    alpha: float = 0.05,
    confidence_level: float | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
    unmatched: Literal["error", "exclude"] = "error",
    require_provenance: bool = False,
    top: int = 10,
) -> TaskComparison:
    """Compare one task of two runs on one metric (see :func:`compare_runs`)."""
    al = align_frames(
        baseline, candidate, unmatched=unmatched, require_provenance=require_provenance
    )
    tau = default_threshold(metric) if threshold is None else threshold
    direction = metric_direction(metric)
    pb, pc = al.pos_baseline, al.pos_candidate
    if metric in COMMON_K_METRICS:
        vb, vc, common_k = common_k_values(baseline, candidate, pb, pc, metric)
        al.notes.append(common_k["note"])
    else:
        vb = baseline.value(metric)[pb]
        vc = candidate.value(metric)[pc]
    clusters = [baseline.clusters[i] for i in pb.tolist()]
    binomial = metric == "pass@1" and baseline.settings.get("score_key", "correct") == "correct"
    inp = PairedInput(
        baseline=vb,
        candidate=vc,
        direction=direction,
        c_baseline=baseline.c[pb] if binomial else None,
        n_baseline=baseline.n[pb] if binomial else None,
        c_candidate=candidate.c[pc] if binomial else None,
        n_candidate=candidate.n[pc] if binomial else None,
        value_range=(0.0, 1.0) if _is_rate(metric) else None,
        clusters=clusters if any(c is not None for c in clusters) else None,
    )
    stats = {
        "alpha": alpha,
        "confidence_level": confidence_level,
        "n_resamples": n_resamples,
        "rng": rng,
        "power": power,
    }
    comp = paired_compare(inp, threshold=tau, **stats)
    health = {}
    for name in HEALTH_METRICS:
        hb, hc = _mean(baseline.value(name)[pb]), _mean(candidate.value(name)[pc])
        health[name] = {
            "baseline": hb,
            "candidate": hc,
            "delta": None if hb is None or hc is None else hc - hb,
            "direction": "lower is better",
        }
    sc = None
    if metric != "self_consistency" and baseline.votes is not None and candidate.votes is not None:
        sc_b, sc_c, _ = common_k_values(baseline, candidate, pb, pc, "self_consistency")
        sc_comp = paired_compare(
            PairedInput(sc_b, sc_c, value_range=(0.0, 1.0), clusters=inp.clusters),
            threshold=0.02,
            **stats,
        )
        sc = {k: sc_comp.to_dict()[k] for k in ("verdict", "effect", "ci_low", "ci_high", "pvalue")}
        sc["note"] = (
            "not gating; a drop in self-consistency at equal accuracy is an early sign of a degraded model"
        )
    movers = problem_movers(
        al.ids,
        baseline.c[pb],
        baseline.n[pb],
        candidate.c[pc],
        candidate.n[pc],
        direction=+1,
        top=top,
    )
    return TaskComparison(
        task=baseline.task,
        metric=metric,
        comparison=comp,
        alignment=al,
        sides={"baseline": _side_counts(baseline, pb), "candidate": _side_counts(candidate, pc)},
        health=health,
        self_consistency=sc,
        movers=movers,
    )


def compare_runs(
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    *,
    metric: str = "pass@1",
    threshold: float | None = None,
    alpha: float = 0.05,
    confidence_level: float | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
    tasks: list[str] | None = None,
    unmatched: Literal["error", "exclude"] = "error",
    require_provenance: bool = False,
    observe: bool = False,
) -> CompareResult:
    """Compare a candidate run with a baseline (run directory or baseline file), task by task.

    Exit code of the result: 1 when any task shows an established regression (Holm across
    tasks), 3 when any task is inconclusive or lacks evidence, 0 otherwise; with
    ``observe`` always 0 (input errors still raise).
    """
    fa = load_frames(baseline)
    fb = load_frames(candidate)
    names = tasks or sorted(fa.keys() & fb.keys(), key=lambda t: list(fa).index(t))
    skipped: dict[str, str] = {}
    for t in sorted(fa.keys() ^ fb.keys()):
        if tasks is None:
            skipped[t] = "only in the baseline" if t in fa else "only in the candidate"
    for t in names:
        if t not in fa or t not in fb:
            where = "baseline" if t not in fa else "candidate"
            raise UsageError(
                f"task {t!r} is not in the {where} ({baseline if where == 'baseline' else candidate})"
            )
    if not names:
        raise UsageError(
            f"the runs share no task (baseline: {', '.join(fa) or 'none'}; candidate: {', '.join(fb) or 'none'})"
        )
    results = [
        compare_frames(
            fa[t],
            fb[t],
            metric=metric,
            threshold=threshold,
            alpha=alpha,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            rng=rng,
            power=power,
            unmatched=unmatched,
            require_provenance=require_provenance,
        )
        for t in names
    ]
    gate = gate_decision({r.task: r.comparison for r in results}, alpha=alpha)
    exit_code = EXIT_OK if observe else gate.exit_code
    return CompareResult(
        baseline=str(baseline),
        candidate=str(candidate),
        metric=metric,
        tasks=results,
        verdict=gate.verdict,
        exit_code=exit_code,
        adjusted_pvalues=dict(gate.adjusted_pvalues),
        skipped_tasks=skipped,
        observe=observe,
    )
