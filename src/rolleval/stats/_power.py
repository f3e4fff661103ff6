"""Power planning for a paired, two-sided comparison of two runs."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

from ..errors import UsageError
from ._validate import check_count, check_nonnegative, check_open_unit, check_positive

__all__ = [
    "minimum_detectable_effect",
    "regression_power",
    "required_problems",
    "required_rollouts",
]

# A planner answer within this relative distance of an integer is that integer:
# float noise must not turn an exact 7 into 8 via ceil (see the ceil trap in the
# estimator notes).
_INTEGER_RTOL = 1e-9


_STD_NORMAL = NormalDist()  # inverse CDF to ~1e-15 (Wichura AS241), without importing scipy


def _ceil(x: float) -> int:
    nearest = round(x)
    if abs(x - nearest) <= _INTEGER_RTOL * max(1.0, abs(x)):
        return int(nearest)
    return math.ceil(x)


class _Design(NamedTuple):
    z: float  # z_{alpha/2} + z_beta
    omega2: float
    sigma2_baseline: float
    sigma2_candidate: float


def _design(
    omega2: object, sigma2_baseline: object, sigma2_candidate: object, alpha: object, power: object
) -> _Design:
    alpha_ = check_open_unit(alpha, "alpha")
    power_ = check_open_unit(power, "power")
    if power_ <= alpha_ / 2:
        raise UsageError(f"`power` must be greater than `alpha`/2 = {alpha_ / 2}; got {power_}")
    z = _STD_NORMAL.inv_cdf(1.0 - alpha_ / 2.0) + _STD_NORMAL.inv_cdf(power_)
    return _Design(
        z,
        check_nonnegative(omega2, "omega2"),
        check_nonnegative(sigma2_baseline, "sigma2_baseline"),
        check_nonnegative(sigma2_candidate, "sigma2_candidate"),
    )


def _target_se_factor(delta: float, threshold: float, alpha: float, power: float) -> float:
    """``s* / 1``: the largest standard error at which the verdict reaches ``power``.

    Significance alone (``threshold = 0``): ``s* = delta / (z_{alpha/2} + z_beta)``. The
    regression verdict also needs ``effect <= -threshold``; with ``effect ~ N(-delta, s^2)``
    that adds ``s* <= (delta - threshold) / z_beta``.
    """
    z_a = _STD_NORMAL.inv_cdf(1.0 - alpha / 2.0)
    z_b = _STD_NORMAL.inv_cdf(power)
    s = delta / (z_a + z_b)
    if threshold > 0.0:
        if delta <= threshold:
            raise UsageError(
                f"`delta` = {delta:g} must exceed `threshold` = {threshold:g}: a true drop of at "
                "most the threshold gives the regression verdict at most about half the time, "
                "whatever the size"
            )
        if z_b > 0.0:
            s = min(s, (delta - threshold) / z_b)
    return s


def _check_threshold(threshold: object) -> float:
    if threshold is None:
        return 0.0
    return check_nonnegative(threshold, "threshold")


class _PlanArgs(NamedTuple):
    design: _Design
    per_problem_variance: float  # omega2 + sigma2_baseline/n_rollouts_baseline + sigma2_candidate/n_rollouts_candidate


def _plan(
    omega2: object,
    sigma2_baseline: object,
    n_rollouts_baseline: object,
    sigma2_candidate: object,
    n_rollouts_candidate: object,
    alpha: object,
    power: object,
) -> _PlanArgs:
    design = _design(omega2, sigma2_baseline, sigma2_candidate, alpha, power)
    n_rollouts_baseline_ = check_positive(n_rollouts_baseline, "n_rollouts_baseline")
    n_rollouts_candidate_ = check_positive(n_rollouts_candidate, "n_rollouts_candidate")
    variance = (
        design.omega2
        + design.sigma2_baseline / n_rollouts_baseline_
        + design.sigma2_candidate / n_rollouts_candidate_
    )
    return _PlanArgs(design, variance)


class _RequiredProblemsArgs(NamedTuple):
    delta: float
    plan: _PlanArgs


def _validate_required_problems(
    delta: object,
    omega2: object,
    sigma2_baseline: object,
    n_rollouts_baseline: object,
    sigma2_candidate: object,
    n_rollouts_candidate: object,
    alpha: object,
    power: object,
) -> _RequiredProblemsArgs:
    delta_ = check_positive(delta, "delta")
    return _RequiredProblemsArgs(
        delta_,
        _plan(
            omega2,
            sigma2_baseline,
            n_rollouts_baseline,
            sigma2_candidate,
            n_rollouts_candidate,
            alpha,
            power,
        ),
    )


def required_problems(
    delta: float,
    *,
    omega2: float,
    sigma2_baseline: float,
    n_rollouts_baseline: float,
    sigma2_candidate: float,
    n_rollouts_candidate: float,
    alpha: float = 0.05,
    power: float = 0.8,
    threshold: float = 0.0,
) -> int:
    """Problems needed to detect a paired difference ``delta`` with the given power.

    With ``threshold > 0`` the size is for the ``regression`` verdict of
    :func:`rolleval.compare.paired_compare` (significant *and* ``effect <= -threshold``) at a
    true drop ``delta > threshold``: the target standard error is
    ``s* = min(delta / (z_{alpha/2} + z_beta), (delta - threshold) / z_beta)`` and
    ``T = ceil(V / s*^2)`` (see :func:`regression_power`). ``threshold = 0`` gives the
    classical size for significance below.

    Normal approximation for a two-sided paired test at level ``alpha`` [1]_ [2]_::

        T = ceil((z_{alpha/2} + z_beta)**2 * (omega2 + sigma2_baseline/n_rollouts_baseline + sigma2_candidate/n_rollouts_candidate) / delta**2)

    with ``z_{alpha/2} = norm.ppf(1 - alpha/2)``, ``z_beta = norm.ppf(power)``,
    ``omega2 = Var(x_baseline - x_candidate)`` across problems and ``sigma2_*`` the mean
    within-problem variance of one rollout (see
    :func:`paired_variance_components`). A value within ``1e-9`` (relative) of
    an integer counts as that integer, so float noise does not add a problem.
    The answer is at least 1; with few problems also check
    :func:`min_attainable_pvalue`, since the exact sign-flip test needs
    ``T >= 6`` to ever reach 0.05.

    Parameters
    ----------
    delta : float
        Smallest difference in mean score worth detecting, > 0 (score units).
    omega2, sigma2_baseline, sigma2_candidate : float
        Variance components, >= 0.
    n_rollouts_baseline, n_rollouts_candidate : float
        Rollouts per problem of the baseline and of the candidate, > 0.
    alpha : float, default 0.05
        Two-sided significance level, in (0, 1).
    power : float, default 0.8
        Desired power ``1 - beta``, in (alpha/2, 1).

    Returns
    -------
    int
        The number of problems.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024, section on power.
    .. [2] J. Cohen, *Statistical Power Analysis for the Behavioral Sciences*,
       2nd ed., Lawrence Erlbaum, 1988.

    Examples
    --------
    >>> from rolleval.stats import required_problems
    >>> required_problems(0.03, omega2=0.02, sigma2_baseline=0.15, n_rollouts_baseline=8, sigma2_candidate=0.15, n_rollouts_candidate=8)
    502
    """
    args = _validate_required_problems(
        delta,
        omega2,
        sigma2_baseline,
        n_rollouts_baseline,
        sigma2_candidate,
        n_rollouts_candidate,
        alpha,
        power,
    )
    threshold = _check_threshold(threshold)
    if threshold == 0.0:
        z = args.plan.design.z
        return max(1, _ceil(z * z * args.plan.per_problem_variance / (args.delta * args.delta)))
    s = _target_se_factor(args.delta, threshold, float(alpha), float(power))
    return max(1, _ceil(args.plan.per_problem_variance / (s * s)))


class _MdeArgs(NamedTuple):
    n_problems: int
    plan: _PlanArgs


def _validate_minimum_detectable_effect(
    n_problems: object,
    omega2: object,
    sigma2_baseline: object,
    n_rollouts_baseline: object,
    sigma2_candidate: object,
    n_rollouts_candidate: object,
    alpha: object,
    power: object,
) -> _MdeArgs:
    n_problems_ = check_count(n_problems, "n_problems", minimum=1)
    return _MdeArgs(
        n_problems_,
        _plan(
            omega2,
            sigma2_baseline,
            n_rollouts_baseline,
            sigma2_candidate,
            n_rollouts_candidate,
            alpha,
            power,
        ),
    )


def minimum_detectable_effect(
    n_problems: int,
    *,
    omega2: float,
    sigma2_baseline: float,
    n_rollouts_baseline: float,
    sigma2_candidate: float,
    n_rollouts_candidate: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Smallest paired difference detectable with ``n_problems`` problems.

    The inverse of :func:`required_problems` [1]_::

        MDE = (z_{alpha/2} + z_beta) * sqrt((omega2 + sigma2_baseline/n_rollouts_baseline + sigma2_candidate/n_rollouts_candidate) / T)

    Parameters
    ----------
    n_problems : int
        Number of paired problems ``T``, >= 1.
    omega2, sigma2_baseline, sigma2_candidate : float
        Variance components, >= 0 (see :func:`paired_variance_components`).
    n_rollouts_baseline, n_rollouts_candidate : float
        Rollouts per problem of the baseline and of the candidate, > 0.
    alpha : float, default 0.05
        Two-sided significance level.
    power : float, default 0.8
        Desired power.

    Returns
    -------
    float
        The minimum detectable effect in score units.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.

    Examples
    --------
    >>> from rolleval.stats import minimum_detectable_effect, required_problems
    >>> kw = dict(omega2=0.02, sigma2_baseline=0.15, n_rollouts_baseline=8, sigma2_candidate=0.15, n_rollouts_candidate=8)
    >>> mde = minimum_detectable_effect(500, **kw)
    >>> round(mde, 4)
    0.03
    >>> required_problems(mde, **kw)
    500
    """
    args = _validate_minimum_detectable_effect(
        n_problems,
        omega2,
        sigma2_baseline,
        n_rollouts_baseline,
        sigma2_candidate,
        n_rollouts_candidate,
        alpha,
        power,
    )
    return args.plan.design.z * math.sqrt(args.plan.per_problem_variance / args.n_problems)


class _RolloutsArgs(NamedTuple):
    delta: float
    n_problems: int
    design: _Design


def _validate_required_rollouts(
    delta: object,
    n_problems: object,
    omega2: object,
    sigma2_baseline: object,
    sigma2_candidate: object,
    alpha: object,
    power: object,
) -> _RolloutsArgs:
    return _RolloutsArgs(
        check_positive(delta, "delta"),
        check_count(n_problems, "n_problems", minimum=1),
        _design(omega2, sigma2_baseline, sigma2_candidate, alpha, power),
    )


def required_rollouts(
    delta: float,
    n_problems: int,
    *,
    omega2: float,
    sigma2_baseline: float,
    sigma2_candidate: float,
    alpha: float = 0.05,
    power: float = 0.8,
    threshold: float = 0.0,
) -> int | None:
    """Rollouts per problem (the same ``K`` for both runs) needed at ``n_problems`` problems.

    The smallest integer ``K >= 1`` with [1]_::

        (z_{alpha/2} + z_beta)**2 * (omega2 + (sigma2_baseline + sigma2_candidate) / K) / T <= delta**2

    i.e. ``K = ceil((sigma2_baseline + sigma2_candidate) / (T delta**2 / z**2 - omega2))``.
    With ``threshold > 0``, ``delta / z`` is replaced by the target standard error
    of the regression verdict, as in :func:`required_problems`.
    More rollouts only shrink the within-problem noise; when ``omega2`` alone
    already needs more problems (``T delta**2 / z**2 <= omega2``), no ``K`` is
    enough and the answer is None.

    Parameters
    ----------
    delta : float
        Smallest difference worth detecting, > 0.
    n_problems : int
        Number of paired problems ``T``, >= 1.
    omega2, sigma2_baseline, sigma2_candidate : float
        Variance components, >= 0 (see :func:`paired_variance_components`).
    alpha : float, default 0.05
        Two-sided significance level.
    power : float, default 0.8
        Desired power.

    Returns
    -------
    int or None
        ``K``, or None when unreachable at this ``T``.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.

    Examples
    --------
    >>> from rolleval.stats import required_rollouts
    >>> required_rollouts(0.03, 600, omega2=0.02, sigma2_baseline=0.15, sigma2_candidate=0.15)
    7
    >>> required_rollouts(0.03, 100, omega2=0.02, sigma2_baseline=0.15, sigma2_candidate=0.15) is None
    True
    """
    args = _validate_required_rollouts(
        delta, n_problems, omega2, sigma2_baseline, sigma2_candidate, alpha, power
    )
    design = args.design
    threshold = _check_threshold(threshold)
    s = _target_se_factor(args.delta, threshold, float(alpha), float(power))
    budget = args.n_problems * s * s
    room = budget - design.omega2
    noise = design.sigma2_baseline + design.sigma2_candidate
    if noise == 0.0:
        return 1 if room >= 0.0 else None
    if room <= 0.0:
        return None
    return max(1, _ceil(noise / room))


def regression_power(
    delta: float, *, se: float, threshold: float = 0.0, alpha: float = 0.05, df: float = math.inf
) -> float:
    r"""Probability that a true drop ``delta`` gives the ``regression`` verdict.

    Normal approximation: the observed effect is ``N(-delta, se^2)``; the verdict needs a
    significant drop (``effect <= -z_{alpha/2} se``) of at least the threshold
    (``effect <= -threshold``), so [1]_

    .. math:: P = \Phi\left(\frac{\delta - \max(\theta, z_{\alpha/2}\,se)}{se}\right).

    At ``delta = threshold`` (and ``z se < threshold``) this is 1/2: a drop of exactly the threshold is
    flagged about half the time, whatever the size. The other tail (a significant gain) is
    ignored; it is below ``alpha/2``.

    With ``df < inf`` (a Student t reference: ``rolleval compare`` with a run-level variance
    estimated from replicate runs, Satterthwaite ``df``) the significance part is the
    noncentral t power of the studentized drop, and the threshold part stays normal:

    .. math:: P = \min\left(1 - F_{t'}(t_{1-\alpha/2,\,df};\ df,\ \delta / se),\;
              \Phi\left(\frac{\delta - \theta}{se}\right)\right),

    ``F_{t'}`` the noncentral t CDF (``scipy.stats.nct``). The regression verdict needs both
    events; for a known ``se`` the joint probability is exactly the smaller of the two (both
    are ``effect <= -c`` for some ``c``), which is the formula above at ``df = inf``.

    Parameters
    ----------
    delta : float
        True drop, >= 0, in the metric's units.
    se : float
        Standard error of the effect at the design, > 0.
    threshold : float, default 0
        ``threshold >= 0`` of the verdict.
    alpha : float, default 0.05
        Two-sided level.
    df : float, default inf
        Degrees of freedom of the test's reference (``inf``: normal).

    Returns
    -------
    float
        The probability, in (0, 1).

    References
    ----------
    .. [1] J. Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.,
       1988 (normal power function), applied to the decision rule of
       :func:`rolleval.compare.paired_compare`.

    Examples
    --------
    >>> round(regression_power(0.03, se=0.03 / 2.8016, threshold=0.0), 3)
    0.8
    >>> round(regression_power(0.02, se=0.005, threshold=0.02), 3)
    0.5
    """
    delta_ = check_nonnegative(delta, "delta")
    se_ = check_positive(se, "se")
    threshold = _check_threshold(threshold)
    alpha_ = check_open_unit(alpha, "alpha")
    if not (isinstance(df, (int, float)) and df > 0):
        raise UsageError(f"df must be > 0 (inf: normal), got {df!r}")
    if math.isinf(df):
        z_a = _STD_NORMAL.inv_cdf(1.0 - alpha_ / 2.0)
        return _STD_NORMAL.cdf((delta_ - max(threshold, z_a * se_)) / se_)
    from scipy.stats import nct
    from scipy.stats import t as t_dist

    q = float(t_dist.isf(alpha_ / 2.0, df))
    significant = float(nct.sf(q, df, delta_ / se_))
    return min(significant, _STD_NORMAL.cdf((delta_ - threshold) / se_))
