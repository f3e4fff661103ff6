"""Power of the regression verdict at a small number of problems, by simulating compare's rule.

The normal approximation of :func:`rolleval.stats.required_problems` is optimistic when the
planned size is small: the verdict's test is the sign-flip test (exact or with random sign
vectors) and the percentile bootstrap, on per-problem pass@1 values that sit on a lattice of
``1/k`` with many ties and zeros. At 19 problems a size planned for power 0.80 reached 0.70
(issue 19); a t quantile with ``T - 1`` degrees of freedom recovers only half of the gap (the
sign-flip test is more conservative than the t-test on such data). So at sizes up to
:data:`SMALL_T` the plan simulates the verdict itself (:func:`rolleval.compare.paired_compare`)
on runs drawn from the pilot (:func:`regression_power_by_simulation`), and grows the size until
the simulated power reaches the target (:func:`small_sample_problems`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ._paired import PairedInput, paired_compare

__all__ = [
    "SMALL_T",
    "SimulatedPower",
    "TruthModel",
    "regression_power_by_simulation",
    "small_sample_problems",
    "truth_model",
]

#: Planned sizes at or below this many problems are checked by simulation.
SMALL_T = 100


@dataclass(frozen=True)
class TruthModel:
    """True per-problem success rates of both sides, and rollouts per problem, of the plan.

    Attributes
    ----------
    baseline, candidate : numpy.ndarray
        True pass@1 rate of each pilot problem on each side.
    n_rollouts_baseline, n_rollouts_candidate : numpy.ndarray
        Rollouts per problem of each side (the pilot's ``n``).
    drop : float
        ``mean(baseline - candidate)``: the planned drop.
    """

    baseline: np.ndarray
    candidate: np.ndarray
    n_rollouts_baseline: np.ndarray
    n_rollouts_candidate: np.ndarray
    drop: float


@dataclass(frozen=True)
class SimulatedPower:
    """Share of simulated comparisons that gave ``regression``.

    Attributes
    ----------
    power : float
        ``hits / sims``.
    se : float
        Its Monte Carlo standard error ``sqrt(power (1 - power) / sims)``.
    problems : int
        Problems per simulated comparison.
    sims : int
        Simulated comparisons.
    """

    power: float
    se: float
    problems: int
    sims: int


def _noise(p: np.ndarray, n: np.ndarray) -> float:
    """Mean sampling variance of observed rates ``c/n``: ``mean(p (1 - p) / (n - 1))``."""
    return float(np.mean(p * (1.0 - p) / np.maximum(n - 1.0, 1.0)))


def _shrunk(x: np.ndarray, noise: float) -> np.ndarray:
    """``x`` pulled towards its mean so that its variance is the method-of-moments variance
    of the truth, ``var(x) - noise`` (the sampling noise of observed rates is no part of the
    truth): ``m + lambda (x - m)``, ``lambda = sqrt((var(x) - noise) / var(x))``."""
    m = float(x.mean())
    observed = float(x.var(ddof=1)) if x.size > 1 else 0.0
    between = max(observed - noise, 0.0)
    lam = math.sqrt(between / observed) if observed > 0.0 else 0.0
    return m + lam * (x - m)


def _shift_to(baseline: np.ndarray, candidate: np.ndarray, drop: float) -> np.ndarray:
    """``clip(candidate - u, 0, 1)`` with ``u`` such that the mean drop is ``drop``."""

    def mean_drop(u: float) -> float:
        return float(np.mean(baseline - np.clip(candidate - u, 0.0, 1.0)))

    lo, hi = -1.0, 1.0
    if not mean_drop(lo) <= drop <= mean_drop(hi):
        raise UsageError(
            f"a mean pass@1 drop of {drop:g} is impossible from the pilot's rates (mean "
            f"{float(baseline.mean()):.4g}): plan for a smaller effect"
        )
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mean_drop(mid) < drop:
            lo = mid
        else:
            hi = mid
    return np.clip(candidate - hi, 0.0, 1.0)


def truth_model(
    c_baseline: np.ndarray,
    n_baseline: np.ndarray,
    drop: float,
    c_candidate: np.ndarray | None = None,
    n_candidate: np.ndarray | None = None,
) -> TruthModel:
    """The plan's truth for a simulation, from the pilot's per-problem counts.

    The baseline's true rates are its pilot rates shrunk to the between-problem variance
    (:func:`_shrunk`). With one pilot the candidate is the baseline shifted down equally on
    every problem (the plan's ``omega2 = 0``); with a candidate run, the baseline less the
    pair's per-problem differences shrunk to their between-problem variance ``omega2``, then
    shifted so that the mean drop is ``drop``. Rates are clipped to [0, 1] and the shift is
    solved so that the mean drop after clipping is exactly ``drop``.
    """
    nb = np.asarray(n_baseline, dtype=np.float64)
    pb = np.asarray(c_baseline, dtype=np.float64) / nb
    base = np.clip(_shrunk(pb, _noise(pb, nb)), 0.0, 1.0)
    if c_candidate is None or n_candidate is None:
        cand, nc = base, nb
    else:
        nc = np.asarray(n_candidate, dtype=np.float64)
        pc = np.asarray(c_candidate, dtype=np.float64) / nc
        # the per-problem difference shrunk to omega2 (its variance less both sides' noise)
        diff = _shrunk(pb - pc, _noise(pb, nb) + _noise(pc, nc))
        cand = base - diff
    return TruthModel(
        baseline=base,
        candidate=_shift_to(base, cand, drop),
        n_rollouts_baseline=nb.astype(np.int64),
        n_rollouts_candidate=nc.astype(np.int64),
        drop=drop,
    )


def regression_power_by_simulation(
    truth: TruthModel,
    problems: int,
    *,
    threshold: float,
    alpha: float,
    n_resamples: int = 2000,
    n_sims: int = 1000,
    rng: int = 0,
) -> SimulatedPower:
    """Power of the ``regression`` verdict of :func:`rolleval.compare.paired_compare` at
    ``problems`` problems, by simulation.

    Each simulation draws ``problems`` problems from ``truth`` with replacement, a pass@1 of
    ``Binomial(k, rate) / k`` on each side, and runs the verdict's own rule (sign-flip test
    with ``n_resamples`` sign vectors, exact when ``2**T <= n_resamples``, percentile
    bootstrap, ``effect <= -threshold``). Seeded by ``rng``: the same seed gives the same
    draws at every size (common random numbers), so sizes compare without extra noise.

    Returns
    -------
    SimulatedPower
        The share of regression verdicts and its Monte Carlo standard error.
    """
    hits = 0
    for s in range(n_sims):
        gen = np.random.default_rng(np.random.SeedSequence([rng, s]))
        i = gen.integers(0, truth.baseline.size, problems)
        nb, nc = truth.n_rollouts_baseline[i], truth.n_rollouts_candidate[i]
        b = gen.binomial(nb, truth.baseline[i]) / nb
        c = gen.binomial(nc, truth.candidate[i]) / nc
        res = paired_compare(
            PairedInput(b, c, value_range=(0.0, 1.0)),
            threshold=threshold,
            alpha=alpha,
            n_resamples=n_resamples,
            rng=s,
        )
        hits += res.verdict == "regression"
    power = hits / n_sims
    return SimulatedPower(power, math.sqrt(power * (1.0 - power) / n_sims), problems, n_sims)


def small_sample_problems(
    truth: TruthModel,
    start: int,
    *,
    power: float,
    threshold: float,
    alpha: float,
    n_resamples: int = 2000,
    n_sims: int = 1000,
    rng: int = 0,
) -> SimulatedPower:
    """The smallest size from ``start`` up whose simulated power reaches ``power``.

    ``start`` is the normal approximation's size (a lower bound at small ``T``). The size
    grows by 10% (at least 1) until the simulated power
    (:func:`regression_power_by_simulation`) reaches ``power``, then the smallest passing
    size is found by bisection between the last failing and the first passing size. Past
    ``4 * SMALL_T`` problems the search stops and returns the power reached there (the
    normal approximation is good by then).

    Returns
    -------
    SimulatedPower
        The size found and its simulated power.
    """
    kw = {
        "threshold": threshold,
        "alpha": alpha,
        "n_resamples": n_resamples,
        "n_sims": n_sims,
        "rng": rng,
    }
    t = max(2, int(start))
    at = regression_power_by_simulation(truth, t, **kw)  # type: ignore[arg-type]
    if at.power >= power:
        return at
    low = t
    while at.power < power and t < 4 * SMALL_T:
        low = t
        t = t + max(1, math.ceil(0.1 * t))
        at = regression_power_by_simulation(truth, t, **kw)  # type: ignore[arg-type]
    if at.power < power:
        return at
    high, best = t, at
    while high - low > 1:
        mid = (low + high) // 2
        m = regression_power_by_simulation(truth, mid, **kw)  # type: ignore[arg-type]
        if m.power >= power:
            high, best = mid, m
        else:
            low = mid
    return best
