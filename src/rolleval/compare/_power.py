"""The power of :func:`paired_compare` (step 10): the MDE, and what it would take to decide.

:func:`minimum_detectable` gives the minimum detectable effect at the sample's size (which
the verdict's equivalence condition needs); :func:`planning_figures` adds, for an
inconclusive comparison or one without enough evidence, the problems and the rollouts per
problem at which the MDE reaches the threshold.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

from ..stats import (
    min_attainable_pvalue,
    minimum_detectable_effect,
    paired_variance_components,
    required_problems,
    required_rollouts,
)
from ._bound import Bound
from ._input import Sample, Settings

__all__ = ["Mde", "Plan", "minimum_detectable", "planning_figures"]

_STD_NORMAL = NormalDist()
_NOT_ESTIMABLE = "MDE not estimable with fewer than 2 problems"


class Mde(NamedTuple):
    """The minimum detectable effect at the sample's size and how it was computed."""

    value: float | None
    """None: not estimable (fewer than 2 problems, or no SE)."""
    components: dict[str, float] | None
    """The binomial variance components it used (``power_kwargs()``), or None (paired SE)."""
    path: str
    notes: tuple[str, ...]
    z: float
    """``z_{alpha/2} + z_beta``."""
    se: float | None
    """The problem-level SE of the effect it started from."""


class Plan(NamedTuple):
    """The power part of a :class:`Comparison`."""

    mde: float | None
    needed_problems: int | None
    needed_rollouts: int | None
    note: str
    path: str | None
    """What the MDE came from (None: nothing was planned, no problem matched)."""


def _min_problems(n_resamples: int, alpha: float) -> int | None:
    """Smallest ``T`` at which the two-sided sign-flip test can reach ``p <= alpha``."""
    t = 2
    while t <= n_resamples.bit_length() - 1:  # 2**t <= n_resamples: exact test
        if min_attainable_pvalue(t, n_resamples=n_resamples) <= alpha:
            return t
        t += 1
    return t if min_attainable_pvalue(t, n_resamples=n_resamples) <= alpha else None


def _components(sample: Sample, notes: list[str]) -> dict[str, float] | None:
    """The variance components of binomial counts (unclustered, 2 or more problems)."""
    c = sample.counts
    if c is None or sample.size < 2 or sample.clusters is not None:
        return None
    pvc = paired_variance_components(c.c_baseline, c.n_baseline, c.c_candidate, c.n_candidate)
    if pvc.status == "ok":
        return pvc.power_kwargs()
    notes.append(f"variance components unavailable ({pvc.reason}); MDE from the paired SE")
    return None


def minimum_detectable(sample: Sample, settings: Settings, se: float | None) -> Mde:
    """The MDE at power ``settings.power``, two-sided ``alpha``, at this ``T`` (from the
    variance components of counts, else from ``se``, the problem-level SE), with the
    run-level variance of the effect added."""
    t, alpha, power = sample.size, settings.alpha, settings.power
    notes: list[str] = []
    kw = _components(sample, notes)
    z = _STD_NORMAL.inv_cdf(1.0 - alpha / 2.0) + _STD_NORMAL.inv_cdf(power)
    if kw is not None:
        mde = minimum_detectable_effect(t, **kw, alpha=alpha, power=power)
        path = "binomial variance components (Miller 2024)"
        notes.append(
            f"MDE = z * sqrt((omega2 + sigma2_baseline/n_rollouts_baseline + "
            f"sigma2_candidate/n_rollouts_candidate) / T) with omega2 = {kw['omega2']:.4g}, "
            f"sigma2_baseline = {kw['sigma2_baseline']:.4g} (n_rollouts = {kw['n_rollouts_baseline']:g}), "
            f"sigma2_candidate = {kw['sigma2_candidate']:.4g} (n_rollouts = {kw['n_rollouts_candidate']:g})"
        )
    elif se is not None:
        mde = z * se
        path = "clustered SE (CR1)" if sample.clusters is not None else "paired SE"
        notes.append(f"MDE = (z_{{alpha/2}} + z_beta) * {path}")
    else:
        return Mde(None, None, "none", (_NOT_ESTIMABLE,), z, se)
    if mde == 0.0:
        notes.append("every paired difference is equal: the observed variance is 0")
    v = sample.run_variance
    if v > 0:
        mde = math.sqrt(mde * mde + z * z * v)
        notes.append(
            f"the MDE includes the run-level variance of the effect: sqrt(MDE_problems^2 + "
            f"z^2 * {v:.4g})"
        )
    return Mde(mde, kw, path, tuple(notes), z, se)


def planning_figures(
    sample: Sample, settings: Settings, mde: Mde, verdict: str, bound: Bound | None
) -> Plan:
    """The MDE and, for an inconclusive comparison or one without enough evidence, the
    problems and rollouts per problem at which it reaches the threshold (see
    :func:`paired_compare`, step 10); ``note`` says how, and why a figure is missing."""
    notes = list(mde.notes)
    if mde.value is None:
        return Plan(None, None, None, "; ".join(notes), mde.path)
    if verdict not in ("inconclusive", "insufficient_evidence"):
        return Plan(mde.value, None, None, "; ".join(notes), mde.path)
    tau_plan = _planning_threshold(sample, settings, mde.z, notes)
    if tau_plan is None:
        return Plan(mde.value, None, None, "; ".join(notes), mde.path)
    t_min = _min_problems(settings.n_resamples, settings.alpha)
    problems = _needed_problems(sample, settings, mde, tau_plan, bound, t_min, notes)
    rollouts = _needed_rollouts(sample, settings, mde, tau_plan, bound, t_min, notes)
    return Plan(mde.value, problems, rollouts, "; ".join(notes), mde.path)


def _planning_threshold(
    sample: Sample, settings: Settings, z: float, notes: list[str]
) -> float | None:
    """The MDE the problems must reach for the total MDE to be the threshold: ``threshold``, less
    the run-level variance's part; None (with a note) when no size reaches it."""
    threshold, v = settings.threshold, sample.run_variance
    if threshold == 0.0:
        notes.append("threshold 0: no finite sample has power against a drop of size 0")
        return None
    if v <= 0:
        return threshold
    room = threshold * threshold - z * z * v
    if room <= 0:
        notes.append(
            "the run-level variance alone keeps the MDE above the threshold: no number of "
            "problems or rollouts per run reaches it with these runs per side; compare "
            "(more) replicate runs per side or reduce the endpoint's run-level noise"
        )
        return None
    return math.sqrt(room)


def _needed_problems(
    sample: Sample,
    settings: Settings,
    mde: Mde,
    tau_plan: float,
    bound: Bound | None,
    t_min: int | None,
    notes: list[str],
) -> int | None:
    """Problems (at the current rollouts) for MDE = threshold, at least ``t_min`` and the
    size at which a near-degenerate sample's exact bound fits in the band."""
    t, alpha, power = sample.size, settings.alpha, settings.power
    kw = mde.components
    if kw is None:
        var_d = 0.0 if mde.se is None else mde.se * mde.se * t
        kw = {
            "omega2": var_d,
            "sigma2_baseline": 0.0,
            "n_rollouts_baseline": 1.0,
            "sigma2_candidate": 0.0,
            "n_rollouts_candidate": 1.0,
        }
    needed = required_problems(tau_plan, **kw, alpha=alpha, power=power)
    if bound is not None:
        if bound.needed_problems is None:
            notes.append(
                "near-degenerate sample: its exact bound cannot be planned from it (no "
                "problem moved, or every problem moved by the same amount)"
            )
        else:
            needed = max(needed, bound.needed_problems)
    if t_min is None:
        notes.append(
            f"n_resamples={settings.n_resamples} cannot give p <= alpha at any T; raise n_resamples"
        )
        return None
    if needed is None:
        return None
    needed = max(needed, t_min)
    unit = "clusters' worth of problems" if sample.clusters is not None else "problems"
    notes.append(
        f"needed_problems = {needed}: {unit} (at the current rollouts) for "
        f"MDE = threshold = {settings.threshold:g}, i.e. power {power:g} against a drop of the "
        "threshold" + (", and an exact bound inside the band" if bound is not None else "")
    )
    if needed <= t:
        notes.append(
            "the current T already reaches that power: the effect lies near the threshold, "
            "and more problems narrow the interval around it"
        )
    return needed


def _needed_rollouts(
    sample: Sample,
    settings: Settings,
    mde: Mde,
    tau_plan: float,
    bound: Bound | None,
    t_min: int | None,
    notes: list[str],
) -> int | None:
    """Rollouts per problem (both sides) at the current ``T`` for MDE = threshold: only
    with counts, and None when the between-problem variance alone keeps the MDE above it."""
    t, kw = sample.size, mde.components
    if kw is None:
        notes.append("needed_rollouts needs per-problem counts (c/n) of a binomial metric")
        return None
    if t_min is None or t < t_min:
        notes.append(f"needed_rollouts: no number of rollouts helps at T = {t} problems")
        return None
    if bound is not None:
        notes.append("needed_rollouts: a near-degenerate sample needs more problems")
        return None
    needed = required_rollouts(
        tau_plan,
        t,
        omega2=kw["omega2"],
        sigma2_baseline=kw["sigma2_baseline"],
        sigma2_candidate=kw["sigma2_candidate"],
        alpha=settings.alpha,
        power=settings.power,
    )
    if needed is None:
        notes.append(
            f"needed_rollouts: unreachable at T = {t}: the between-problem variance of the "
            f"difference (omega2 = {kw['omega2']:.4g}) alone keeps the MDE above the "
            "threshold; add problems"
        )
    else:
        notes.append(
            f"needed_rollouts = {needed} per problem on both sides at T = {t} for MDE = threshold"
        )
    return needed
