"""Anytime-valid confidence sequences for the mean of bounded values: the hedged betting CS.

A *confidence sequence* at level ``1 - alpha`` is a sequence of intervals ``C_1, C_2, ...``
that contain the mean at every look *simultaneously* with probability at least
``1 - alpha``: ``P(for all t: mu in C_t) >= 1 - alpha``. So it may be looked at after every
problem and the run stopped whenever it is convenient (optional stopping) without losing
its level, which a fixed-sample interval does not allow.

The construction is Waudby-Smith & Ramdas's hedged capital process [1]_ with their
predictable plug-in bets. Values ``v_i`` in ``[low, high]`` are mapped to
``x_i = (v_i - low) / (high - low)`` in ``[0, 1]``; for a candidate mean ``m`` in ``[0, 1]``::

    K+_t(m) = prod_{i<=t} (1 + lam+_i(m) (x_i - m)),   lam+_i(m) = min(lam_i, c / m)
    K-_t(m) = prod_{i<=t} (1 - lam-_i(m) (x_i - m)),   lam-_i(m) = min(lam_i, c / (1 - m))
    lam_t   = sqrt(2 log(2 / alpha) / (s2_{t-1} t log(1 + t)))
    mu_t    = (1/2 + sum_{i<=t} x_i) / (t + 1)
    s2_t    = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)          (s2_0 = 1/4)

with truncation ``c`` in (0, 1) (default 1/2, the paper's choice). Both are nonnegative
martingales under the mean ``m`` (the bets ``lam_t`` use only ``x_1 .. x_{t-1}``), so by
Ville's inequality the hedged capital ``max(K+/2, K-/2)`` exceeds ``1/alpha`` at *any* time
with probability at most ``alpha``. The sequence is ``C_t = {m : K+_t(m) < 2/alpha and
K-_t(m) < 2/alpha}``; ``K+`` is nonincreasing and ``K-`` nondecreasing in ``m`` (each factor
is), so ``C_t`` is the open interval ``(L_t, U_t)`` between the two crossing points, found
by bisection, and the running intersection ``(max_s L_s, min_s U_s)`` is reported (also
valid, never wider).

References
----------
.. [1] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by
   betting", Journal of the Royal Statistical Society Series B 86(1), 2024 (arXiv:2010.09686),
   section 4 (hedged capital process, Theorem 3) and eq. (26)-(27) (predictable plug-in bets).
.. [2] J. Ville, *Etude critique de la notion de collectif*, Gauthier-Villars, 1939
   (the maximal inequality for nonnegative supermartingales).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..errors import UsageError
from ._validate import as_scores, check_open_unit, describe, is_real

__all__ = [
    "BETTING_METHOD",
    "BettingCapital",
    "ConfidenceSequence",
    "betting_bets",
    "betting_capital",
    "betting_cs",
]

#: The method's name as results and run files record it.
BETTING_METHOD = (
    "hedged betting confidence sequence (Waudby-Smith & Ramdas 2024), predictable plug-in bets"
)

# Bisection stops when the bracket is this narrow (on the [0, 1] scale); the reported
# bound is the bracket's outer end, so the interval is never narrower than the exact one.
_BISECT_TOL = 1e-12
# Looks evaluated together by the vectorised bisection, and at most this many floats
# per matrix (looks x values): about 32 MiB.
_LOOKS_PER_BLOCK = 256
_BLOCK_FLOATS = 2**22


@dataclass(frozen=True)
class ConfidenceSequence:
    """Result of :func:`betting_cs`: one interval per look, valid at every look at once.

    Attributes
    ----------
    lower, upper : numpy.ndarray
        ``lower[j]``, ``upper[j]``: the running-intersection bounds at look ``j`` (after the
        first ``looks[j]`` values), in the values' units (outer ends of a bisection to 1e-12 of the range).
        Nondecreasing / nonincreasing in ``t``. The sequence is the open interval
        ``(lower, upper)``; with probability at most ``alpha`` it misses the mean at some look.
    alpha : float
        One minus the simultaneous coverage.
    value_range : tuple of float
        ``(low, high)``: the range every value lies in.
    truncation : float
        ``c``: the largest bet as a share of what the null allows.
    looks : numpy.ndarray
        The number of values seen at each look (1, 2, ..., n by default).
    n : int
        Number of values.
    method : str
        :data:`BETTING_METHOD`.
    """

    lower: np.ndarray = field(repr=False, compare=False)
    upper: np.ndarray = field(repr=False, compare=False)
    looks: np.ndarray = field(repr=False, compare=False)
    alpha: float
    value_range: tuple[float, float]
    truncation: float
    n: int
    method: str = BETTING_METHOD


@dataclass(frozen=True)
class BettingCapital:
    """Result of :func:`betting_capital`: the two capital processes at one null mean.

    ``log_positive[t-1]`` is ``log K+_t(m)`` (grows when the mean is above ``m``),
    ``log_negative[t-1]`` is ``log K-_t(m)`` (grows when it is below). ``m`` is rejected at
    look ``t`` (lies outside that look's interval) when either reaches ``log(2/alpha)``
    (:attr:`log_threshold`).
    """

    log_positive: np.ndarray = field(repr=False, compare=False)
    log_negative: np.ndarray = field(repr=False, compare=False)
    null: float
    alpha: float
    log_threshold: float


class _Args(NamedTuple):
    x: np.ndarray  # values mapped to [0, 1]
    alpha: float
    low: float
    high: float
    truncation: float


def _validate(values: object, alpha: object, value_range: object, truncation: object) -> _Args:
    alpha_ = check_open_unit(alpha, "alpha")
    c = check_open_unit(truncation, "truncation")
    if (
        not isinstance(value_range, tuple | list)
        or len(value_range) != 2
        or not all(is_real(v) and math.isfinite(float(v)) for v in value_range)
        or not float(value_range[0]) < float(value_range[1])
    ):
        raise UsageError(
            f"`value_range` must be (low, high) with finite low < high; got {describe(value_range)}"
        )
    low, high = float(value_range[0]), float(value_range[1])
    v = as_scores(values, "values")
    outside = np.flatnonzero((v < low) | (v > high))
    if outside.size:
        i = int(outside[0])
        raise UsageError(
            f"`values` must lie in value_range [{low:g}, {high:g}]; got {v[i]!r} at index {i}"
        )
    x = np.clip((v - low) / (high - low), 0.0, 1.0)
    return _Args(x, alpha_, low, high, c)


def betting_bets(x: object, *, alpha: float = 0.05) -> np.ndarray:
    """The predictable plug-in bets ``lam_1 .. lam_T`` of :func:`betting_cs`, before truncation.

    For values ``x`` in ``[0, 1]`` (eq. (26)-(27) of [1]_)::

        lam_t = sqrt(2 log(2 / alpha) / (s2_{t-1} t log(1 + t)))
        mu_t  = (1/2 + sum_{i<=t} x_i) / (t + 1),  s2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)

    with ``s2_0 = 1/4``: ``lam_t`` uses only ``x_1 .. x_{t-1}`` (predictable).

    Parameters
    ----------
    x : array-like
        Values in ``[0, 1]``, in order.
    alpha : float, default 0.05
        The level the bets are tuned for.

    Returns
    -------
    numpy.ndarray
        One bet per value.

    References
    ----------
    .. [1] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by
       betting", JRSS-B 86(1), 2024.

    Examples
    --------
    >>> from rolleval.stats import betting_bets
    >>> bets = betting_bets([0.5, 0.5, 0.5])
    >>> round(float(bets[0]), 4)  # sqrt(2 log 40 / (1/4 * 1 * log 2))
    6.525
    """
    x = np.asarray(x, dtype=np.float64)
    alpha = check_open_unit(alpha, "alpha")
    t = np.arange(1, x.size + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(x)) / (t + 1.0)
    s2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1.0)
    s2_prev = np.concatenate(([0.25], s2[:-1]))
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (s2_prev * t * np.log1p(t)))


def _bounds_block(
    x: np.ndarray, lam: np.ndarray, looks: np.ndarray, c: float, log_thr: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact (to 1e-12, outer) lower and upper crossing points at each look in ``looks``."""
    t_max = int(looks.max())
    mask = np.arange(t_max)[None, :] < looks[:, None]  # value i counts at look t when i < t
    xs, ls = x[None, :t_max], lam[None, :t_max]

    def log_pos(m: np.ndarray) -> np.ndarray:  # log K+(m), one m per look
        mm = m[:, None]
        with np.errstate(divide="ignore"):
            bet = np.minimum(ls, c / mm)
        logs: np.ndarray = np.where(mask, np.log1p(bet * (xs - mm)), 0.0).sum(axis=1)
        return logs

    def log_neg(m: np.ndarray) -> np.ndarray:  # log K-(m), one m per look
        mm = m[:, None]
        with np.errstate(divide="ignore"):
            bet = np.minimum(ls, c / (1.0 - mm))
        logs: np.ndarray = np.where(mask, np.log1p(-bet * (xs - mm)), 0.0).sum(axis=1)
        return logs

    k = looks.size
    # lower: sup{m : K+(m) >= 2/alpha}, K+ nonincreasing: lo stays rejected, hi does not.
    has_lower = log_pos(np.zeros(k)) >= log_thr
    lo, hi = np.zeros(k), np.ones(k)
    while True:
        live = has_lower & (hi - lo > _BISECT_TOL)
        if not live.any():
            break
        mid = 0.5 * (lo + hi)
        rej = log_pos(mid) >= log_thr
        lo = np.where(live & rej, mid, lo)
        hi = np.where(live & ~rej, mid, hi)
    # upper: inf{m : K-(m) >= 2/alpha}, K- nondecreasing: hi2 stays rejected, lo2 does not.
    has_upper = log_neg(np.ones(k)) >= log_thr
    lo2, hi2 = np.zeros(k), np.ones(k)
    while True:
        live = has_upper & (hi2 - lo2 > _BISECT_TOL)
        if not live.any():
            break
        mid = 0.5 * (lo2 + hi2)
        rej = log_neg(mid) >= log_thr
        hi2 = np.where(live & rej, mid, hi2)
        lo2 = np.where(live & ~rej, mid, lo2)
    return np.where(has_lower, lo, 0.0), np.where(has_upper, hi2, 1.0)


def betting_cs(
    values: object,
    *,
    alpha: float = 0.05,
    value_range: tuple[float, float] = (-1.0, 1.0),
    truncation: float = 0.5,
    looks: object = None,
) -> ConfidenceSequence:
    """Anytime-valid confidence sequence for the mean of bounded values, one interval per look.

    The hedged betting confidence sequence with predictable plug-in bets [1]_ (formulas in
    the module docstring of :mod:`rolleval.stats._confidence_sequence`). Assumptions: the values are
    independent with one common mean (i.i.d. suffices; so is a random order of an i.i.d.
    sample) and lie in ``value_range``; nothing else (no normality, no variance bound).
    For rolleval's paired comparisons a value is one problem's difference
    ``candidate rate - baseline rate`` in ``[-1, 1]``, in the order the problems were run.

    Parameters
    ----------
    values : array-like
        The observations in the order they were seen, finite, inside ``value_range``.
    alpha : float, default 0.05
        ``1 -`` the simultaneous coverage, in (0, 1). Each side (below, above) errs with
        probability at most ``alpha / 2``.
    value_range : (float, float), default (-1, 1)
        Bounds every value lies in.
    truncation : float, default 0.5
        ``c`` in (0, 1): bets are at most ``c`` times what keeps the capital positive.
    looks : array-like of int, optional
        The looks taken: strictly increasing counts of values seen, from 1 to ``len(values)``
        (a sequential run looks after each round). Default: after every value. The running
        intersection is over these looks; the bets never depend on them.

    Returns
    -------
    ConfidenceSequence
        ``lower``/``upper`` per look (running intersection), in the values' units.

    References
    ----------
    .. [1] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by
       betting", JRSS-B 86(1), 2024, Theorem 3 and eq. (26)-(27).

    Examples
    --------
    >>> import numpy as np
    >>> from rolleval.stats import betting_cs
    >>> cs = betting_cs(np.tile([-0.5, 0.0, 0.25, -0.25], 50))
    >>> bool(cs.lower[-1] < -0.125 < cs.upper[-1]), bool(cs.upper[-1] < 0)
    (True, True)
    """
    args = _validate(values, alpha, value_range, truncation)
    x, n = args.x, args.x.size
    at = _check_looks(looks, n)
    lam = betting_bets(x, alpha=args.alpha)
    log_thr = math.log(2.0 / args.alpha)
    lower = np.empty(at.size)
    upper = np.empty(at.size)
    block = max(1, min(_LOOKS_PER_BLOCK, _BLOCK_FLOATS // max(n, 1)))
    for start in range(0, at.size, block):
        part = at[start : start + block]
        lo, hi = _bounds_block(x, lam, part, args.truncation, log_thr)
        lower[start : start + part.size] = lo
        upper[start : start + part.size] = hi
    width = args.high - args.low
    if at.size:
        lower = args.low + width * np.maximum.accumulate(lower)
        upper = args.low + width * np.minimum.accumulate(upper)
    return ConfidenceSequence(
        lower=lower,
        upper=upper,
        looks=at,
        alpha=args.alpha,
        value_range=(args.low, args.high),
        truncation=args.truncation,
        n=n,
    )


def _check_looks(looks: object, n: int) -> np.ndarray:
    if looks is None:
        return np.arange(1, n + 1)
    arr = np.asarray(looks)
    if (
        arr.ndim != 1
        or arr.dtype.kind not in "iu"
        or (arr.size and (arr[0] < 1 or arr[-1] > n or np.any(np.diff(arr) <= 0)))
    ):
        raise UsageError(
            f"`looks` must be strictly increasing integers from 1 to len(values) = {n}; "
            f"got {describe(looks)}"
        )
    return arr.astype(np.int64)


def betting_capital(
    values: object,
    null: float,
    *,
    alpha: float = 0.05,
    value_range: tuple[float, float] = (-1.0, 1.0),
    truncation: float = 0.5,
) -> BettingCapital:
    """The two capital processes of :func:`betting_cs` at one null mean, after every value.

    ``null`` (in the values' units) lies outside the look-``t`` interval of
    :func:`betting_cs`, *before* the running intersection, exactly when
    ``log_positive[t-1] >= log(2/alpha)`` (the mean is above ``null``) or
    ``log_negative[t-1] >= log(2/alpha)`` (below). The running maximum of each gives the
    running intersection. This is the sequential test of ``H0: mean = null`` by betting
    [1]_; it costs O(T) where the interval costs a bisection per look, which is what the
    decision rule and the calibration use at the band edges.

    Parameters
    ----------
    values : array-like
        As for :func:`betting_cs`.
    null : float
        The mean tested, inside ``value_range``.
    alpha, value_range, truncation
        As for :func:`betting_cs`.

    Returns
    -------
    BettingCapital

    References
    ----------
    .. [1] I. Waudby-Smith and A. Ramdas, JRSS-B 86(1), 2024, section 4.

    Examples
    --------
    >>> from rolleval.stats import betting_capital
    >>> cap = betting_capital([-1.0] * 20, 0.0)
    >>> bool(cap.log_negative[-1] >= cap.log_threshold), bool(cap.log_positive[-1] < 0)
    (True, True)
    """
    args = _validate(values, alpha, value_range, truncation)
    if not is_real(null) or not args.low <= float(null) <= args.high:
        raise UsageError(
            f"`null` must be a number in value_range [{args.low:g}, {args.high:g}]; got {describe(null)}"
        )
    m = (float(null) - args.low) / (args.high - args.low)
    x = args.x
    lam = betting_bets(x, alpha=args.alpha)
    c = args.truncation
    lam_pos = np.minimum(lam, c / m) if m > 0 else lam
    lam_neg = np.minimum(lam, c / (1.0 - m)) if m < 1 else lam
    diff = x - m
    return BettingCapital(
        log_positive=np.cumsum(np.log1p(lam_pos * diff)),
        log_negative=np.cumsum(np.log1p(-lam_neg * diff)),
        null=float(null),
        alpha=args.alpha,
        log_threshold=math.log(2.0 / args.alpha),
    )
