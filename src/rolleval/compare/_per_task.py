"""One task of two runs compared on one metric: what ``rolleval compare`` does per task.

Match the task's problems (:mod:`._align`), take the chosen metric's per-problem values on
each side, run the paired comparison (:func:`paired_compare`), and add the secondary panels
(health deltas, self-consistency delta, problems that moved most): :func:`compare_frames`
for one run per side, :func:`compare_replicate_frames` for several. :mod:`._runs` does this
for every task of two runs and decides overall.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._report._build import THOUGHT_HEALTH, pooled_rate
from ..errors import UsageError
from ._align import Alignment, UnmatchedSetBy, align_frames
from ._common_k import COMMON_K_METRICS, common_k_values
from ._evidence import drop_accounting, unjudged_bound
from ._frame import (
    HEALTH_METRICS,
    ProblemFrame,
    canonical_metric,
    metric_direction,
)
from ._movers import problem_movers
from ._options import CompareOptions, one_of
from ._paired import Comparison, PairedInput, paired_compare
from ._pairs import TaskPair
from ._replicates import (
    ReplicateCounts,
    RunLevel,
    pool_task,
    refuse_metric,
)
from ._rule import verdict_exit_code

__all__ = [
    "TaskComparison",
    "TaskSettings",
    "compare_frames",
    "compare_replicate_frames",
    "compare_task",
    "default_threshold",
]


_RATE_METRICS_PREFIX = ("pass@", "pass^", "G-Pass@", "mG-Pass@", "maj@", "consecutive-pass^")


def _is_rate(metric: str) -> bool:
    return metric.startswith(_RATE_METRICS_PREFIX) or metric in (
        "self_consistency",
        *[m for m in HEALTH_METRICS if m.endswith("_rate")],
    )


def default_threshold(metric: str) -> float:
    """0.02 for metrics on a 0-1 scale; other metrics need an explicit threshold."""
    metric = canonical_metric(metric)
    if _is_rate(metric):
        return 0.02
    raise UsageError(
        f"metric {metric!r} is not a rate on a 0-1 scale: pass --threshold in its own units"
    )


@dataclass(frozen=True)
class TaskComparison:
    """One task of two runs compared on one metric (:func:`compare_frames`).

    ``to_dict()`` is the entry of ``tasks`` in ``rolleval compare --format json`` (the
    comparison's fields flattened into it). Frozen: a field cannot be reassigned (the dicts
    and lists it holds are the JSON parts, not copies).

    Attributes
    ----------
    task : str
        The baseline's task name (the candidate's is ``pair.candidate`` when they differ).
    metric : str
        The compared metric, canonical name (``"pass@1"``, ``"maj@n"``...).
    comparison : Comparison
        The paired comparison of the per-problem values (:func:`paired_compare`): effect,
        interval, p-value and ``verdict`` (a :data:`ComparisonVerdict`), in the metric's units.
    alignment : Alignment
        Which problems of the two sides are the same problem, and the ones left out.
    sides : dict of str to dict
        ``"baseline"`` and ``"candidate"``: the side's ``source``, ``kind``, ``run_id``,
        ``model``, ``run_status``, ``label`` (model and run directory), counts of
        ``problems`` and ``matched_problems``, and of rollouts over the matched problems
        (``gradable_rollouts``, ``requested_rollouts``, ``correct_rollouts``,
        ``missing_rollouts``), its ``denominator_policy`` and ``timeout_policy``.
    health : dict of str to dict
        Per health rate both sides have: pooled ``baseline`` and ``candidate`` rates (0-1,
        None when undefined), ``delta`` (candidate - baseline), ``direction`` and
        ``definition``. Not gating.
    self_consistency : dict or None
        The self-consistency comparison (``verdict``, ``effect``, ``ci_low``, ``ci_high``,
        ``pvalue``, ``note``) when both sides stored votes; not gating.
    movers : list of dict
        The problems that moved most (:func:`problem_movers`), per-problem Fisher tests.
    problems : dict
        Problems compared and dropped, by reason (counts and ids), per side.
    unjudged : dict
        The worst-case check of rollouts without a score (shares per side, difference,
        whether it was bounded).
    warnings : list of str
        One line each: many problems dropped, a thought running out of budget...
    forced_inconclusive : bool
        The verdict was made ``inconclusive`` by the unjudged rollouts' worst case.
    pair : TaskPair or None
        How the candidate's task was paired with this baseline task (``None``: by name).
    run_level : RunLevel or None
        The run-level variance from replicate runs and where it comes from (``None``: one
        run per side).
    """

    task: str
    metric: str
    comparison: Comparison
    alignment: Alignment
    sides: dict[str, dict[str, Any]]
    health: dict[str, dict[str, Any]]
    self_consistency: dict[str, Any] | None
    movers: list[dict[str, Any]]
    problems: dict[str, Any] = field(default_factory=dict)
    unjudged: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    forced_inconclusive: bool = False
    pair: TaskPair | None = None
    run_level: RunLevel | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "candidate_task": self.pair.candidate if self.pair else self.task,
            "pairing": self._pairing(),
            "metric": self.metric,
            **self.comparison.to_dict(),
            "better": "higher" if metric_direction(self.metric) > 0 else "lower",
            "alignment": self.alignment.to_dict(),
            "problems": self.problems,
            "unjudged": self.unjudged,
            "warnings": self.warnings,
            "sides": self.sides,
            "health": self.health,
            "self_consistency": self.self_consistency,
            "movers": self.movers,
            "run_level": self.run_level.to_dict() if self.run_level else None,
        }

    def _pairing(self) -> dict[str, Any] | None:
        """How the tasks were paired, with the problems left out by reason (counts)."""
        if self.pair is None:
            return None
        left_out = self.alignment.excluded if self.alignment.unmatched == "exclude" else {}
        return {
            **self.pair.to_dict(),
            "left_out": {k: len(v) for k, v in left_out.items()},
            "note": self.pair.left_out_note(left_out),
        }


def _side_counts(fr: ProblemFrame, pos: np.ndarray) -> dict[str, Any]:
    assert fr.gradable is not None and fr.missing is not None
    return {
        "source": fr.source,
        "kind": fr.kind,
        "run_id": fr.run_id,
        "model": fr.model,
        "run_status": fr.run_status,
        "problems": len(fr.ids),
        "matched_problems": len(pos),
        "gradable_rollouts": int(fr.gradable[pos].sum()),
        "requested_rollouts": int(fr.requested[pos].sum()),
        "correct_rollouts": int(fr.c[pos].sum()),
        "missing_rollouts": int(fr.missing[pos].sum()),
        "denominator_policy": fr.settings.get("denominator_policy"),
        "timeout_policy": fr.settings.get("timeout_policy"),
    }


def _health_values(fr: ProblemFrame, pos: np.ndarray, name: str) -> np.ndarray:
    """Per-problem values of a pooled health rate over the problems ``pos`` whose mean is
    exactly the pooled rate ``R = sum(num) / sum(den)``: the ratio estimator linearised
    (delta method), ``z_i = num_i / m + R (1 - den_i / m)`` with ``m = mean(den)``."""
    num, den = (a[pos].astype(np.float64) for a in fr.health[name])
    rate = pooled_rate(num, den)
    if rate is None:
        return np.full(len(pos), np.nan)
    m = float(den.mean())
    values: np.ndarray = num / m + rate * (1.0 - den / m)
    return values


def _metric_values(fr: ProblemFrame, pos: np.ndarray, metric: str) -> np.ndarray:
    if metric in HEALTH_METRICS:
        if metric not in fr.health:
            raise UsageError(f"{fr.source}: task {fr.task!r} has no health counts for {metric!r}")
        return _health_values(fr, pos, metric)
    values: np.ndarray = fr.value(metric)[pos]
    return values


def unmatched_policy(
    unmatched: Literal["error", "exclude"] | None, pair: TaskPair | None
) -> tuple[Literal["error", "exclude"], UnmatchedSetBy]:
    """What to do with problems that do not match, and who chose it.

    The user's ``--unmatched`` wins. Otherwise tasks paired by content leave their
    unmatched problems out: the pairing itself defines the comparison as the problems both
    sides hold (harnesses run different subsets of one benchmark), and which problems a
    harness ran was fixed before any rollout, so leaving the others out selects nothing by
    outcome. Tasks paired by name or by ``--task-map`` refuse (exit 2): the user expects one
    problem set there, and a problem on one side only says the data or a ``--limit`` changed.
    """
    if unmatched is not None:
        return unmatched, "--unmatched"
    if pair is not None and pair.by == "content":
        return "exclude", "content pairing"
    return "error", "default"


@dataclass(frozen=True)
class TaskSettings:
    """What every task of one comparison is compared with (:func:`compare_runs` threads it
    to each task)."""

    metric: str
    """Canonical metric name."""
    options: CompareOptions
    unmatched: Literal["error", "exclude"] | None = None
    require_provenance: bool = False
    top: int = 10
    """Problems that moved most, listed."""


def compare_frames(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    *,
    metric: str = "pass@1",
    options: CompareOptions | None = None,
    threshold: float | None = None,
    alpha: float = 0.05,
    confidence_level: float | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
    unmatched: Literal["error", "exclude"] | None = None,
    require_provenance: bool = False,
    top: int = 10,
    run_variance: float = 0.0,
    pair: TaskPair | None = None,
    replicates: ReplicateCounts | None = None,
) -> TaskComparison:
    """Compare one task of two runs on one metric (see :func:`compare_runs`).

    ``options`` (:class:`CompareOptions`) or the keywords ``threshold`` to ``power``: not
    both. ``unmatched`` (``None``: by pairing, :func:`unmatched_policy`) decides what happens
    to problems that do not match. ``run_variance``: what run-level shocks add to the
    variance of the effect (:attr:`PairedInput.run_variance`); 0 = the problem-level test
    alone. ``replicates`` (frames pooled over replicate runs, :func:`compare_replicate_frames`):
    the run-level variance is then resolved from the per-run counts over the aligned problems
    and replaces ``run_variance``."""
    keywords = CompareOptions(
        threshold=threshold,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=rng,
        power=power,
    )
    settings = TaskSettings(
        metric=canonical_metric(metric),
        options=one_of(options, keywords, CompareOptions(), "compare_frames"),
        unmatched=unmatched,
        require_provenance=require_provenance,
        top=top,
    )
    return compare_task(baseline, candidate, settings, run_variance, pair, replicates)


def compare_task(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    settings: TaskSettings,
    run_variance: float = 0.0,
    pair: TaskPair | None = None,
    replicates: ReplicateCounts | None = None,
) -> TaskComparison:
    """:func:`compare_frames` with its settings in one object."""
    metric = settings.metric
    al = _align(baseline, candidate, settings, pair)
    threshold = settings.options.threshold
    options = dataclasses.replace(
        settings.options, threshold=default_threshold(metric) if threshold is None else threshold
    )
    pb, pc = al.pos_baseline, al.pos_candidate
    run_level = replicates.resolve(pb, pc) if replicates is not None else None
    inp = _paired_input(baseline, candidate, al, metric, run_variance, run_level)
    comp = paired_compare(inp, options=options)
    problems, warnings = drop_accounting(
        al, inp.baseline, inp.candidate, metric, baseline, candidate
    )
    unjudged, why = unjudged_bound(baseline, candidate, al, metric, comp, options)
    if why is not None:
        comp = dataclasses.replace(
            comp,
            verdict="inconclusive",
            exit_code=verdict_exit_code("inconclusive"),
            reason=why,
        )
    health = _health(baseline, candidate, pb, pc)
    return TaskComparison(
        task=baseline.task,
        metric=metric,
        comparison=comp,
        alignment=al,
        sides={"baseline": _side_counts(baseline, pb), "candidate": _side_counts(candidate, pc)},
        health=health,
        self_consistency=_self_consistency(baseline, candidate, al, inp, settings),
        movers=problem_movers(
            al.ids,
            baseline.c[pb],
            baseline.n[pb],
            candidate.c[pc],
            candidate.n[pc],
            direction=+1,
            top=settings.top,
        ),
        problems=problems,
        unjudged=unjudged,
        warnings=warnings + thought_warning(health),
        forced_inconclusive=why is not None,
        pair=pair if pair is not None and pair.by != "name" else None,
        run_level=run_level,
    )


def _align(
    baseline: ProblemFrame, candidate: ProblemFrame, settings: TaskSettings, pair: TaskPair | None
) -> Alignment:
    """The problems of the two sides matched (:func:`align_frames`), with the pairing's note."""
    policy, set_by = unmatched_policy(settings.unmatched, pair)
    try:
        al = align_frames(
            baseline, candidate, unmatched=policy, require_provenance=settings.require_provenance
        )
    except UsageError as exc:
        if pair is None or pair.note is None:
            raise
        raise UsageError(f"{pair.note}; {exc}") from None
    al.unmatched_set_by = set_by
    if pair is not None and pair.note:
        al.notes.insert(0, pair.left_out_note(al.excluded) or pair.note)
    return al


def _paired_input(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    al: Alignment,
    metric: str,
    run_variance: float,
    run_level: RunLevel | None,
) -> PairedInput:
    """The aligned per-problem values of ``metric`` (with the counts of a binomial pass@1,
    the clusters and the run-level variance: replicate runs' where there are any)."""
    pb, pc = al.pos_baseline, al.pos_candidate
    if run_level is not None:
        run_variance = run_level.run_variance
    if metric in COMMON_K_METRICS:
        vb, vc, common_k = common_k_values(baseline, candidate, pb, pc, metric)
        al.notes.append(common_k["note"])
    else:
        vb = _metric_values(baseline, pb, metric)
        vc = _metric_values(candidate, pc, metric)
    clusters = [baseline.clusters[i] for i in pb.tolist()]
    binomial = metric == "pass@1" and baseline.settings.get("score_key", "correct") == "correct"
    return PairedInput(
        baseline=vb,
        candidate=vc,
        direction=metric_direction(metric),
        c_baseline=baseline.c[pb] if binomial else None,
        n_baseline=baseline.n[pb] if binomial else None,
        c_candidate=candidate.c[pc] if binomial else None,
        n_candidate=candidate.n[pc] if binomial else None,
        value_range=(0.0, 1.0) if _is_rate(metric) else None,
        clusters=clusters if any(c is not None for c in clusters) else None,
        run_variance=run_variance,
        run_variance_se=run_level.run_variance_se if run_level is not None else 0.0,
    )


def _health(
    baseline: ProblemFrame, candidate: ProblemFrame, pb: np.ndarray, pc: np.ndarray
) -> dict[str, dict[str, Any]]:
    """Pooled health rates of both sides over the matched problems, with their deltas."""
    health = {}
    for name in HEALTH_METRICS:
        if name not in baseline.health or name not in candidate.health:
            continue
        hb = pooled_rate(*(a[pb] for a in baseline.health[name]))
        hc = pooled_rate(*(a[pc] for a in candidate.health[name]))
        if name in THOUGHT_HEALTH and hb is None and hc is None:
            continue  # no thought on either side: not a reasoning model
        health[name] = {
            "baseline": hb,
            "candidate": hc,
            "delta": None if hb is None or hc is None else hc - hb,
            "direction": "lower is better",
            "definition": HEALTH_METRICS[name],
        }
    return health


def _self_consistency(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    al: Alignment,
    inp: PairedInput,
    settings: TaskSettings,
) -> dict[str, Any] | None:
    """The self-consistency comparison (not gating) when both sides stored votes."""
    if settings.metric == "self_consistency" or baseline.votes is None or candidate.votes is None:
        return None
    pb, pc = al.pos_baseline, al.pos_candidate
    sc_b, sc_c, _ = common_k_values(baseline, candidate, pb, pc, "self_consistency")
    sc_comp = paired_compare(
        PairedInput(sc_b, sc_c, value_range=(0.0, 1.0), clusters=inp.clusters),
        options=dataclasses.replace(settings.options, threshold=0.02),
    )
    sc = {k: sc_comp.to_dict()[k] for k in ("verdict", "effect", "ci_low", "ci_high", "pvalue")}
    sc["note"] = (
        "not gating; a drop in self-consistency at equal accuracy is an early sign of a degraded model"
    )
    return sc


def compare_replicate_frames(
    baseline: Sequence[ProblemFrame],
    candidate: Sequence[ProblemFrame],
    *,
    file_variance: float | None = None,
    pair: TaskPair | None = None,
    metric: str = "pass@1",
    options: CompareOptions | None = None,
    unmatched: Literal["error", "exclude"] | None = None,
    require_provenance: bool = False,
    top: int = 10,
    **keywords: Any,
) -> TaskComparison:
    """Compare one task of several runs per side (the first run of each side first).

    Each side's correct and judged rollouts are pooled over its runs (:func:`pool_task`),
    the pooled frames are compared as by :func:`compare_frames` (``options``, or the keywords
    of :class:`CompareOptions`), and the interval and p-value include
    ``v_baseline / n_runs_baseline + v_candidate / n_runs_candidate`` (:meth:`ReplicateCounts.resolve`;
    ``file_variance``: a run-noise file's ``v`` for a side of one run). pass@1 only."""
    settings = TaskSettings(
        metric=canonical_metric(metric),
        options=one_of(
            options, CompareOptions(**keywords), CompareOptions(), "compare_replicate_frames"
        ),
        unmatched=unmatched,
        require_provenance=require_provenance,
        top=top,
    )
    return compare_task_replicates(baseline, candidate, settings, file_variance, pair)


def compare_task_replicates(
    baseline: Sequence[ProblemFrame],
    candidate: Sequence[ProblemFrame],
    settings: TaskSettings,
    file_variance: float | None,
    pair: TaskPair | None,
) -> TaskComparison:
    """:func:`compare_replicate_frames` with its settings in one object."""
    refuse_metric(settings.metric, [*baseline, *candidate])
    pb, pc = pool_task(baseline), pool_task(candidate)
    counts = ReplicateCounts(pb.c, pb.n, pc.c, pc.n, file_variance)
    tc = compare_task(pb.frame, pc.frame, settings, pair=pair, replicates=counts)
    tc.sides["baseline"]["runs"], tc.sides["candidate"]["runs"] = len(baseline), len(candidate)
    return tc


def thought_warning(health: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One sentence when the candidate runs out of budget inside its thought more often than
    the baseline (by more than 2 points): how much more, and how much longer it thinks."""
    trunc = health.get("truncated_in_thought_rate") or {}
    hb, hc = trunc.get("baseline"), trunc.get("candidate")
    if hc is None or hc - (hb or 0.0) <= 0.02:
        return []
    how = f"{hc / hb:.1f}x as often" if hb else "where the baseline never did"
    line = (
        f"the candidate runs out of budget inside its thought {how} "
        f"({100 * hc:.1f}% vs {'N/A' if hb is None else f'{100 * hb:.1f}%'} of completed rollouts)"
    )
    for name, unit in (("reasoning_tokens", "reasoning tokens"), ("thought_chars", "characters")):
        t = health.get(name) or {}
        tb, tc = t.get("baseline"), t.get("candidate")
        if tb and tc is not None:
            change = 100 * (tc / tb - 1)
            longer = "longer" if change >= 0 else "shorter"
            line += (
                f" and thinks {abs(change):.0f}% {longer} ({tc:.0f} vs {tb:.0f} {unit} per rollout)"
            )
            break
    return [line + ": raise max_tokens; truncated answers count as wrong"]
