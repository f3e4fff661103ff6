"""The exact bound of :func:`paired_compare` on a near-degenerate sample (its step 7).

When fewer than 10 problems moved, or every paired difference is equal, the bootstrap's
percentiles sit on a handful of lattice points and cannot bound the difference; the bound
is then the exact (Clopper-Pearson) bound on the share of problems that moved, times the
metric's range.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._input import Settings

__all__ = ["MIN_MOVERS", "Bound", "exact_bound"]

# Below this many problems whose paired difference is not 0, the bootstrap distribution of
# the mean sits on a handful of lattice points and its percentiles cannot be trusted to bound
# the difference (the usual "n p >= 10" rule for normal approximations of a binomial count);
# an exact binomial bound on the share of problems that moved is used as well.
MIN_MOVERS = 10


class Bound(NamedTuple):
    low: float
    high: float
    needed_problems: int | None
    """``T`` at which the bound fits in the band, with the same share of problems moved."""


def _beta_ppf(level: float, a: float, b: float) -> float:
    """The Beta(a, b) quantile at ``level``: scipy imported here, where a near-degenerate
    sample needs it, so that importing the compare path (every CLI start) stays fast."""
    from scipy.stats import beta

    return float(beta.ppf(level, a, b))


def _share_upper(moved: int, total: int, level: float) -> float:
    """Exact (Clopper-Pearson) one-sided upper bound at ``level`` on a binomial share."""
    if moved >= total:
        return 1.0
    return _beta_ppf(level, moved + 1, total - moved)


def exact_bound(d: np.ndarray, span: float, settings: Settings) -> Bound | None:
    """Exact bound on ``mean(d)`` for a near-degenerate sample; None when not needed.

    Near-degenerate: fewer than :data:`MIN_MOVERS` problems have ``d != 0``, or all ``d`` are
    equal. With ``m-`` problems moving down and ``m+`` up among ``T``, each by at most
    ``D = span`` (``high - low`` of ``value_range``), and the one-sided Clopper-Pearson
    bounds ``u(m, T)`` at ``1 - alpha_ci / 2``: ``mean(d) >= -u(m-, T) D`` and
    ``<= u(m+, T) D``.
    """
    t = d.size
    moved_down = int(np.count_nonzero(d < 0))
    moved_up = int(np.count_nonzero(d > 0))
    all_equal = bool(np.all(d == d[0]))
    if moved_down + moved_up >= MIN_MOVERS and not all_equal:
        return None
    moved = moved_down + moved_up
    if (all_equal and d[0] != 0.0) or not math.isfinite(span):
        # no finite bound; with the same share of movers, ceil(10 T / m) problems would
        # hold enough movers for the bootstrap
        needed: int | None = None if moved == 0 or moved == t else math.ceil(MIN_MOVERS * t / moved)
        return Bound(-math.inf, math.inf, needed)
    level = 1.0 - (1.0 - settings.confidence_level) / 2.0
    low = -_share_upper(moved_down, t, level) * span
    high = _share_upper(moved_up, t, level) * span
    # With the same share of problems moved, the sample stops being near-degenerate at
    # ceil(10 T / m) problems (the bootstrap takes over), or the bound fits in the band.
    needed = math.ceil(MIN_MOVERS * t / moved) if moved else None
    threshold = settings.threshold
    if 0.0 < threshold < span:
        fits_at = _problems_to_fit(max(moved_down, moved_up) / t, t, span, threshold, level, needed)
        if fits_at == t:
            return Bound(low, high, t)  # the bound already fits: it asks for no more problems
        if fits_at is not None:
            needed = fits_at if needed is None else min(needed, fits_at)
    return Bound(low, high, needed)


def _problems_to_fit(
    share: float, t: int, span: float, threshold: float, level: float, cap: int | None
) -> int | None:
    """The smallest ``T' >= t`` at which the exact bound, with the share of problems moved
    ``share``, lies inside ``(-threshold, threshold)``; None when none up to ``cap`` (or 10**8) does.

    The search doubles ``T'`` from ``t``, then bisects."""

    def fits(n: int) -> bool:
        # the Clopper-Pearson bound with the mover count share * n taken as a real
        # number, so that it decreases smoothly with n (a floor would make it jump)
        m = share * n
        return _beta_ppf(level, m + 1.0, n - m) * span < threshold

    if fits(t):
        return t
    lo_t, hi_t = t, 2 * t
    limit = cap if cap is not None else 10**8
    while not fits(hi_t) and hi_t < limit:
        lo_t, hi_t = hi_t, 2 * hi_t
    if not fits(hi_t):
        return None
    while hi_t - lo_t > 1:
        mid = (lo_t + hi_t) // 2
        lo_t, hi_t = (lo_t, mid) if fits(mid) else (mid, hi_t)
    return hi_t
