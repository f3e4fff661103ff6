"""Standard errors of a suite mean and the variance components behind them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, NamedTuple

import numpy as np

from ..errors import UsageError
from ._validate import as_counts, as_paired_scores, as_scores

__all__ = [
    "PairedVarianceComponents",
    "VarianceComponents",
    "clt_se",
    "clustered_se",
    "paired_se",
    "paired_variance_components",
    "variance_components",
]


def _centered_sum_of_squares(x: np.ndarray) -> float:
    """``sum (x_i - mean)**2`` with correctly rounded sums (``math.fsum``).

    Correct rounding makes the result independent of the order of the terms, so
    estimators that are equal in exact arithmetic are equal in floats too.
    """
    centered = x - math.fsum(x) / x.size
    return math.fsum(centered * centered)


# --------------------------------------------------------------------- CLT SE


class _ScoresArgs(NamedTuple):
    scores: np.ndarray


def _validate_clt_se(scores: object) -> _ScoresArgs:
    return _ScoresArgs(as_scores(scores, "scores"))


def clt_se(scores: object) -> float | None:
    """Central-limit standard error of the mean score over problems.

    ``SE = sqrt(sum_i (s_i - mean)**2 / (T * (T - 1)))`` [1]_, the sample
    standard deviation over ``sqrt(T)``.

    The unit of analysis is the problem: with ``K`` rollouts per problem pass
    the ``T`` per-problem means, never the ``T*K`` rollout outcomes (which
    treats correlated rollouts as independent and understates the SE).

    Parameters
    ----------
    scores : array_like, 1-D
        One finite score per problem.

    Returns
    -------
    float or None
        The standard error; None when ``T < 2`` (not estimable).

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.

    Examples
    --------
    >>> from rolleval.stats import clt_se
    >>> clt_se([1.0, 0.0, 1.0, 1.0])
    0.25
    >>> clt_se([0.5]) is None
    True
    """
    args = _validate_clt_se(scores)
    t = args.scores.size
    if t < 2:
        return None
    return math.sqrt(_centered_sum_of_squares(args.scores) / (t * (t - 1)))


# ----------------------------------------------------------------- paired SE


class _PairedArgs(NamedTuple):
    candidate: np.ndarray
    baseline: np.ndarray


def _validate_paired_se(candidate: object, baseline: object) -> _PairedArgs:
    return _PairedArgs(*as_paired_scores(candidate, baseline, nonempty=False))


def paired_se(candidate: object, baseline: object) -> float | None:
    """Standard error of the mean paired difference ``mean(candidate - baseline)``.

    With ``d_i = candidate_i - baseline_i`` over the ``T`` problems,
    ``SE = sqrt(Var(d) / T)`` with ``Var`` the sample variance (``ddof=1``) of
    the per-problem differences [1]_. Pairing removes the between-problem
    variance both sides share, so this is usually much smaller than
    ``sqrt(SE_candidate**2 + SE_baseline**2)``. Assumes the problems are
    independent draws (the pairs, not the sides, are the units).

    Parameters
    ----------
    candidate, baseline : array_like, 1-D
        Paired finite scores, one per problem, in the same problem order.

    Returns
    -------
    float or None
        The standard error; None when ``T < 2``.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.

    Examples
    --------
    >>> from rolleval.stats import paired_se
    >>> round(paired_se([1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]), 6)
    0.288675
    """
    args = _validate_paired_se(candidate, baseline)
    return clt_se(args.candidate - args.baseline)


# ------------------------------------------------------------- clustered SE


class _ClusteredArgs(NamedTuple):
    scores: np.ndarray
    cluster_index: np.ndarray  # 0..C-1 per problem
    n_clusters: int


def _validate_clustered_se(scores: object, clusters: object) -> _ClusteredArgs:
    scores_ = as_scores(scores, "scores")
    labels = np.asarray(clusters)
    if labels.ndim != 1 or labels.size != scores_.size:
        raise UsageError(
            "`clusters` must be 1-D with one label per score; "
            f"got shape {labels.shape} for {scores_.size} scores"
        )
    if labels.dtype.kind == "f" and np.any(np.isnan(labels)):
        raise UsageError("`clusters` must not contain NaN labels")
    try:
        unique, index = np.unique(labels, return_inverse=True)
    except TypeError as exc:
        raise UsageError(f"`clusters` labels must be mutually comparable; {exc}") from exc
    return _ClusteredArgs(scores_, index.reshape(-1), unique.size)


def clustered_se(scores: object, clusters: object) -> float | None:
    """Cluster-robust (CR1) standard error of the mean score over problems.

    Use it when problems come in groups whose errors are correlated (several
    questions on one passage, subjects, templates). With ``e_i = s_i - mean``,
    ``S_c`` the sum of ``e_i`` over cluster ``c`` and ``C`` clusters [1]_ [2]_::

        SE**2 = C / (C - 1) * sum_c S_c**2 / T**2

    When every problem is its own cluster this is exactly :func:`clt_se`
    (``C = T``); the implementation divides ``sum_c S_c**2`` by the correctly
    rounded ``T**2 (C - 1) / C`` and sums with ``math.fsum`` so the equality
    also holds in floating point.

    Parameters
    ----------
    scores : array_like, 1-D
        One finite score per problem.
    clusters : array_like, 1-D
        One cluster label per problem (ints or strings).

    Returns
    -------
    float or None
        The standard error; None when there are fewer than 2 clusters.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.
    .. [2] A. C. Cameron and D. L. Miller, "A Practitioner's Guide to
       Cluster-Robust Inference", *Journal of Human Resources* 50(2):317-372,
       2015.

    Examples
    --------
    >>> from rolleval.stats import clustered_se, clt_se
    >>> scores = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    >>> round(clustered_se(scores, ["x", "x", "y", "y", "z", "z"]), 6)
    0.288675
    >>> clustered_se(scores, range(6)) == clt_se(scores)
    True
    """
    args = _validate_clustered_se(scores, clusters)
    t, c = args.scores.size, args.n_clusters
    if c < 2:
        return None
    centered = args.scores - math.fsum(args.scores) / t
    # A singleton's sum is its residual exactly (0 + e_i), so with C == T this is
    # the CLT sum of squares, and fsum makes the order of the clusters irrelevant.
    sums = np.bincount(args.cluster_index, weights=centered, minlength=c)
    denominator = float(Fraction(t * t * (c - 1), c))
    return math.sqrt(math.fsum(sums * sums) / denominator)


# ------------------------------------------------------- variance components

Status = Literal["ok", "unavailable"]


@dataclass(frozen=True)
class VarianceComponents:
    """Result of :func:`variance_components`.

    Attributes
    ----------
    between : float or None
        ``Var(x)``: variance of the problems' true success rates across
        problems, estimated and floored at 0.
    within : float or None
        ``E[sigma_i**2]``: mean within-problem variance of one rollout's score,
        ``sigma_i**2 = x_i (1 - x_i)``.
    observed : float or None
        Sample variance (``ddof=1``) of the observed per-problem means.
    n_rollouts : float
        Mean number of rollouts per problem.
    n : int
        Number of problems ``T``.
    status : {"ok", "unavailable"}
    reason : str or None
        Why the components are unavailable.
    """

    between: float | None
    within: float | None
    observed: float | None
    n_rollouts: float
    n: int
    status: Status
    reason: str | None


@dataclass(frozen=True)
class PairedVarianceComponents:
    """Result of :func:`paired_variance_components`.

    The fields ``omega2``, ``sigma2_baseline``, ``n_rollouts_baseline``, ``sigma2_candidate`` and ``n_rollouts_candidate`` have the
    names of the keywords of :func:`required_problems` and
    :func:`minimum_detectable_effect`; :meth:`power_kwargs` returns them as a dict.

    Attributes
    ----------
    omega2 : float or None
        ``Var(x_baseline - x_candidate)``: variance across problems of the true per-problem
        difference, estimated and floored at 0.
    sigma2_baseline, sigma2_candidate : float or None
        Mean within-problem variance of one rollout of the baseline and of the candidate.
    n_rollouts_baseline, n_rollouts_candidate : float
        Mean rollouts per problem of the baseline and of the candidate.
    n : int
        Number of paired problems ``T``.
    status : {"ok", "unavailable"}
    reason : str or None
    """

    omega2: float | None
    sigma2_baseline: float | None
    n_rollouts_baseline: float
    sigma2_candidate: float | None
    n_rollouts_candidate: float
    n: int
    status: Status
    reason: str | None

    def power_kwargs(self) -> dict[str, float]:
        """``omega2``, ``sigma2_baseline``, ``n_rollouts_baseline``, ``sigma2_candidate``, ``n_rollouts_candidate`` for the power planners.

        Raises :class:`rolleval.errors.UsageError` when ``status`` is not ``"ok"``.
        """
        values = {
            "omega2": self.omega2,
            "sigma2_baseline": self.sigma2_baseline,
            "n_rollouts_baseline": self.n_rollouts_baseline,
            "sigma2_candidate": self.sigma2_candidate,
            "n_rollouts_candidate": self.n_rollouts_candidate,
        }
        if self.status != "ok" or any(v is None for v in values.values()):
            raise UsageError(f"variance components are unavailable: {self.reason}")
        return {name: value for name, value in values.items() if value is not None}


class _Counts(NamedTuple):
    c: np.ndarray
    n: np.ndarray


def _counts(c: object, n: object, c_name: str, n_name: str) -> _Counts:
    c_ = as_counts(c, c_name, minimum=0)
    if c_.ndim != 1:
        raise UsageError(f"`{c_name}` must be 1-D (correct rollouts per problem); got a scalar")
    n_ = as_counts(n, n_name, minimum=1)
    if n_.ndim == 0:
        n_ = np.full(c_.shape, int(n_), dtype=np.int64)
    elif n_.size != c_.size:
        raise UsageError(
            f"`{n_name}` must be a scalar or have one entry per problem; "
            f"got {n_.size} entries for {c_.size} problems"
        )
    over = np.flatnonzero(c_ > n_)
    if over.size:
        i = int(over[0])
        raise UsageError(
            f"`{c_name}` must not exceed `{n_name}`; got {c_[i]} > {n_[i]} at index {i}"
        )
    return _Counts(c_, n_)


class _Within(NamedTuple):
    means: np.ndarray  # c / n per problem
    sigma2: float  # mean unbiased within-problem variance
    noise: float  # mean of s_i**2 / n_i: within-noise part of Var(observed mean)


def _within(counts: _Counts) -> _Within:
    c = counts.c.astype(np.float64)
    n = counts.n.astype(np.float64)
    s2 = c * (n - c) / (n * (n - 1.0))  # unbiased for x(1-x) when n >= 2
    return _Within(c / n, math.fsum(s2) / c.size, math.fsum(s2 / n) / c.size)


def _unavailable_reason(counts: _Counts) -> str | None:
    if counts.c.size < 2:
        return f"fewer than 2 problems ({counts.c.size}): no variance across problems"
    if np.any(counts.n < 2):
        i = int(np.flatnonzero(counts.n < 2)[0])
        return (
            f"problem at index {i} has {counts.n[i]} rollout(s); the within-problem "
            "variance needs at least 2 per problem"
        )
    return None


def _validate_variance_components(c: object, n: object) -> _Counts:
    return _counts(c, n, "c", "n")


def variance_components(c: object, n: object) -> VarianceComponents:
    """Split the variance of per-problem pass rates into between- and within-problem parts.

    Problem ``i`` has ``n_i`` rollouts scored 0/1, ``c_i`` of them correct, and a
    true success rate ``x_i``; one rollout has variance
    ``sigma_i**2 = x_i (1 - x_i)``. With ``K`` rollouts per problem the suite
    mean over ``T`` problems has [1]_::

        Var(mean) = (Var(x) + E[sigma_i**2] / K) / T

    The estimates:

    1. ``within = mean_i s_i**2`` with ``s_i**2 = c_i (n_i - c_i) / (n_i (n_i - 1))``,
       the unbiased within-problem variance.
    2. ``observed = Var(c_i / n_i)`` (``ddof=1``).
    3. ``between = max(0, observed - mean_i(s_i**2 / n_i))``; with equal ``n_i = K``
       the subtracted term is ``within / K``. Before the floor it is unbiased
       for ``Var(x)``.

    To start from a ``(T, K)`` 0/1 matrix ``m`` pass ``c=m.sum(axis=1)``, ``n=K``.

    Parameters
    ----------
    c : array_like of int, 1-D
        Correct rollouts per problem, ``0 <= c_i <= n_i``.
    n : int or array_like of int
        Rollouts per problem (a scalar applies to all), >= 1.

    Returns
    -------
    VarianceComponents
        ``between``, ``within``, ``observed``, ``n_rollouts`` (mean ``n_i``), ``n`` (``T``).
        ``status="unavailable"`` (components None) when ``T < 2`` or some
        problem has fewer than 2 rollouts.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.

    Examples
    --------
    >>> from rolleval.stats import variance_components
    >>> vc = variance_components([4, 0, 2, 4], 4)
    >>> round(vc.between, 6), round(vc.within, 6), vc.n_rollouts, vc.n
    (0.208333, 0.083333, 4.0, 4)
    """
    counts = _validate_variance_components(c, n)
    t = counts.c.size
    n_rollouts = float(np.mean(counts.n)) if t else 0.0
    reason = _unavailable_reason(counts)
    if reason is not None:
        return VarianceComponents(None, None, None, n_rollouts, t, "unavailable", reason)
    w = _within(counts)
    observed = _centered_sum_of_squares(w.means) / (t - 1)
    return VarianceComponents(
        between=max(0.0, observed - w.noise),
        within=w.sigma2,
        observed=observed,
        n_rollouts=n_rollouts,
        n=t,
        status="ok",
        reason=None,
    )


class _PairedCounts(NamedTuple):
    baseline: _Counts
    candidate: _Counts


def _validate_paired_variance_components(
    c_baseline: object, n_baseline: object, c_candidate: object, n_candidate: object
) -> _PairedCounts:
    baseline = _counts(c_baseline, n_baseline, "c_baseline", "n_baseline")
    candidate = _counts(c_candidate, n_candidate, "c_candidate", "n_candidate")
    if baseline.c.size != candidate.c.size:
        raise UsageError(
            "`c_baseline` and `c_candidate` must have one entry per problem of the same aligned problem "
            f"list; got {baseline.c.size} and {candidate.c.size}"
        )
    return _PairedCounts(baseline, candidate)


def paired_variance_components(
    c_baseline: object, n_baseline: object, c_candidate: object, n_candidate: object
) -> PairedVarianceComponents:
    """Variance components of a paired comparison, for the power planners.

    Two runs, baseline and candidate, on the same ``T`` problems (aligned, same order) have
    per-problem true rates ``x_baseline``, ``x_candidate``. The mean paired difference has
    ``Var = (omega2 + sigma2_baseline / n_rollouts_baseline + sigma2_candidate / n_rollouts_candidate) / T`` [1]_ with
    ``omega2 = Var(x_baseline - x_candidate)``, assuming the rollouts of the two runs are
    independent given the problem. The estimates:

    1. ``sigma2_baseline``, ``sigma2_candidate``: mean unbiased within-problem variances
       ``c (n - c) / (n (n - 1))`` of each run.
    2. ``omega2 = max(0, Var(c_baseline/n_baseline - c_candidate/n_candidate) - mean(s_baseline**2/n_baseline) - mean(s_candidate**2/n_candidate))``
       (``ddof=1``), unbiased before the floor.
    3. ``n_rollouts_baseline``, ``n_rollouts_candidate``: mean rollouts per problem.

    Parameters
    ----------
    c_baseline, c_candidate : array_like of int, 1-D
        Correct rollouts per problem of the baseline and of the candidate.
    n_baseline, n_candidate : int or array_like of int
        Rollouts per problem of the baseline and of the candidate (scalars apply to all).

    Returns
    -------
    PairedVarianceComponents
        ``status="unavailable"`` (components None) when ``T < 2`` or a problem
        has fewer than 2 rollouts in either run.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.

    Examples
    --------
    >>> from rolleval.stats import paired_variance_components, required_problems
    >>> pvc = paired_variance_components([8, 2, 5, 7, 0, 6], 8, [7, 1, 5, 8, 1, 4], 8)
    >>> round(pvc.omega2, 6), round(pvc.sigma2_baseline, 6), pvc.n_rollouts_baseline
    (0.0, 0.136905, 8.0)
    >>> required_problems(0.05, **pvc.power_kwargs())
    115
    """
    pair = _validate_paired_variance_components(c_baseline, n_baseline, c_candidate, n_candidate)
    t = pair.baseline.c.size
    n_rollouts_baseline = float(np.mean(pair.baseline.n)) if t else 0.0
    n_rollouts_candidate = float(np.mean(pair.candidate.n)) if t else 0.0
    reason = _unavailable_reason(pair.baseline) or _unavailable_reason(pair.candidate)
    if reason is not None:
        return PairedVarianceComponents(
            None, None, n_rollouts_baseline, None, n_rollouts_candidate, t, "unavailable", reason
        )
    w_baseline, w_candidate = _within(pair.baseline), _within(pair.candidate)
    observed = _centered_sum_of_squares(w_baseline.means - w_candidate.means) / (t - 1)
    return PairedVarianceComponents(
        omega2=max(0.0, observed - w_baseline.noise - w_candidate.noise),
        sigma2_baseline=w_baseline.sigma2,
        n_rollouts_baseline=n_rollouts_baseline,
        sigma2_candidate=w_candidate.sigma2,
        n_rollouts_candidate=n_rollouts_candidate,
        n=t,
        status="ok",
        reason=None,
    )
