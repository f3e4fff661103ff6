"""Run-level noise: the variance a whole run shares, beyond independent rollouts.

The problem-level test of :func:`rolleval.compare.paired_compare` treats the problems of a
run as independent: its interval and p-value describe the spread of ``mean(d)`` when every
rollout is an independent draw given its problem. If a run carries a common shock (every
problem of one run a little luckier than in another), ``Var(mean)`` has an extra part that
no resampling of problems within one run can see. Replicate runs of one configuration
measure it (:func:`run_noise`); :func:`run_level_adjustment` widens a comparison by it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError

__all__ = ["RunLevelAdjustment", "RunNoise", "run_level_adjustment", "run_noise"]


@dataclass(frozen=True)
class RunNoise:
    """Result of :func:`run_noise` (``n_runs`` replicate runs of one configuration, T problems).

    Attributes
    ----------
    n_runs, n_problems : int
        ``n_runs`` and ``T``.
    run_means : tuple of float
        pass@1 of each run: ``mean_i c_ri / n_ri``.
    variance : float
        Sample variance of the run means (``ddof = 1``).
    binomial_variance : float
        What that variance is expected to be when every rollout is an independent draw
        given its problem: ``mean_r (1/T^2) sum_i s2_i / n_ri`` with ``s2_i`` the unbiased
        estimate ``p_i (1 - p_i) N_i / (N_i - 1)`` from the pooled ``p_i = C_i / N_i``
        (``C_i``, ``N_i`` summed over runs).
    ratio : float or None
        ``variance / binomial_variance``; None when the binomial variance is 0 (every
        problem always or never solved).
    chi2, df, pvalue : float, int, float or None
        ``chi2 = df * ratio`` with ``df = n_runs - 1``, and its upper-tail p-value under the
        chi-square distribution (the run means are close to normal): a test of "no
        run-level variance". None with the ratio.
    run_variance : float
        Method-of-moments estimate of the run-level variance of one run's mean:
        ``max(0, variance - binomial_variance)``.
    run_variance_upper : float
        One-sided upper confidence bound at ``confidence_level``:
        ``max(0, df * variance / chi2.ppf(1 - confidence_level, df) - binomial_variance)``.
    problem_variance_ratio : float or None
        ``sum_i Var_r(c_ri / n_ri) / sum_i mean_r(s2_i / n_ri)``: the problems' own spread
        across runs against binomial (near 1 when each problem alone behaves binomially).
    between_problem_share : float or None
        Share of ``variance`` that is covariance between problems:
        ``1 - sum_i Var_r(c_ri / n_ri) / (T^2 variance)`` (0 in expectation without a
        run-level shock; can be negative). None when ``variance`` is 0.
    confidence_level : float
    """

    n_runs: int
    n_problems: int
    run_means: tuple[float, ...]
    variance: float
    binomial_variance: float
    ratio: float | None
    chi2: float | None
    df: int
    pvalue: float | None
    run_variance: float
    run_variance_upper: float
    problem_variance_ratio: float | None
    between_problem_share: float | None
    confidence_level: float

    def to_dict(self) -> dict[str, object]:
        return {
            "n_runs": self.n_runs,
            "n_problems": self.n_problems,
            "run_means": list(self.run_means),
            "variance": self.variance,
            "binomial_variance": self.binomial_variance,
            "ratio": self.ratio,
            "chi2": self.chi2,
            "df": self.df,
            "pvalue": self.pvalue,
            "run_variance": self.run_variance,
            "run_variance_upper": self.run_variance_upper,
            "problem_variance_ratio": self.problem_variance_ratio,
            "between_problem_share": self.between_problem_share,
            "confidence_level": self.confidence_level,
        }


def _as_count_matrix(x: object, name: str) -> np.ndarray:
    try:
        a = np.asarray(x)
    except Exception as exc:  # pragma: no cover - numpy rejects very odd objects
        raise UsageError(f"{name} must be a 2-D array of counts: {exc}") from None
    if a.ndim != 2:
        raise UsageError(f"{name} must be 2-D (runs x problems), got {a.ndim}-D")
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise UsageError(f"{name} must hold integer counts, got dtype {a.dtype}")
    if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
        raise UsageError(f"{name} must hold whole, finite counts")
    return a.astype(np.int64)


def run_noise(c: object, n: object, *, confidence_level: float = 0.95) -> RunNoise:
    """Run-level variance of pass@1 from ``n_runs >= 2`` replicate runs of one configuration.

    ``c[r, i]`` correct among ``n[r, i] >= 1`` judged rollouts of problem ``i`` in run
    ``r``; every run holds the same ``T`` problems in the same order. The replicates
    must differ only in what should not matter (the run seed, the time of day): the
    same model, serving, tasks and rollouts per problem. See :class:`RunNoise` for the
    figures; the test of "no run-level variance" is ``chi2 = (n_runs - 1) * ratio`` against
    chi-square with ``n_runs - 1`` degrees of freedom.

    Raises
    ------
    rolleval.errors.UsageError
        If ``c``/``n`` are not 2-D integer arrays of one shape, ``n_runs < 2``, ``T < 1``,
        ``n < 1`` or ``c`` outside ``[0, n]``, or ``confidence_level`` not in (0, 1).

    References
    ----------
    .. [1] R. A. Fisher, *Statistical Methods for Research Workers*, 5th ed., Oliver &
       Boyd, 1934 (the index of dispersion: variance against its binomial expectation,
       referred to chi-square).
    .. [2] S. R. Searle, G. Casella and C. E. McCulloch, *Variance Components*, Wiley,
       1992 (method-of-moments estimates truncated at 0).

    Examples
    --------
    >>> from rolleval.stats import run_noise
    >>> c = [[3, 1, 0, 4], [1, 2, 0, 3], [4, 0, 1, 4]]   # 3 runs x 4 problems, 4 rollouts
    >>> res = run_noise(c, [[4] * 4] * 3)
    >>> res.n_runs, res.df, [round(m, 4) for m in res.run_means]
    (3, 2, [0.5, 0.375, 0.5625])
    >>> round(res.ratio, 3), round(res.pvalue, 3)
    (0.951, 0.387)
    """
    cc, nn = _as_count_matrix(c, "c"), _as_count_matrix(n, "n")
    if cc.shape != nn.shape:
        raise UsageError(f"c and n differ in shape: {cc.shape} vs {nn.shape}")
    n_runs, t = cc.shape
    if n_runs < 2:
        raise UsageError(f"run_noise needs at least 2 replicate runs, got {n_runs}")
    if t < 1:
        raise UsageError("run_noise needs at least 1 problem")
    if np.any(nn < 1):
        raise UsageError("every problem needs n >= 1 judged rollouts in every run")
    if np.any(cc < 0) or np.any(cc > nn):
        raise UsageError("counts must satisfy 0 <= c <= n")
    if not (isinstance(confidence_level, float) and 0.0 < confidence_level < 1.0):
        raise UsageError(f"confidence_level must be a float in (0, 1), got {confidence_level!r}")
    from scipy.stats import chi2 as chi2_dist

    rates = cc / nn
    means = rates.mean(axis=1)
    variance = float(np.var(means, ddof=1))
    big_c, big_n = cc.sum(axis=0), nn.sum(axis=0)
    p = big_c / big_n
    s2 = p * (1.0 - p) * big_n / (big_n - 1)  # N_i >= n_runs >= 2
    per_run = (s2[None, :] / nn).sum(axis=1) / (t * t)
    binomial = float(per_run.mean())
    df = n_runs - 1
    ratio = chi2 = pvalue = None
    if binomial > 0.0:
        ratio = variance / binomial
        chi2 = df * ratio
        pvalue = float(chi2_dist.sf(chi2, df))
    upper_total = df * variance / float(chi2_dist.ppf(1.0 - confidence_level, df))
    own = float(np.var(rates, axis=0, ddof=1).sum())
    expected_own = float((s2[None, :] / nn).mean(axis=0).sum())
    return RunNoise(
        n_runs=n_runs,
        n_problems=t,
        run_means=tuple(float(m) for m in means),
        variance=variance,
        binomial_variance=binomial,
        ratio=ratio,
        chi2=chi2,
        df=df,
        pvalue=pvalue,
        run_variance=max(0.0, variance - binomial),
        run_variance_upper=max(0.0, upper_total - binomial),
        problem_variance_ratio=own / expected_own if expected_own > 0 else None,
        between_problem_share=1.0 - own / (t * t * variance) if variance > 0 else None,
        confidence_level=confidence_level,
    )


@dataclass(frozen=True)
class RunLevelAdjustment:
    """A comparison widened by run-level variance (see :func:`run_level_adjustment`).

    Attributes
    ----------
    ci_low, ci_high, pvalue, se : float
        The widened interval, p-value and standard error.
    inflation : float
        ``se_total / se`` (inf when ``se`` is 0 and the run variance is not).
    df : float
        Degrees of freedom of the t reference (``inf``: normal).
    """

    ci_low: float
    ci_high: float
    pvalue: float
    se: float
    inflation: float
    df: float = math.inf

    def __iter__(self) -> Iterator[float]:
        return iter((self.ci_low, self.ci_high, self.pvalue, self.se, self.inflation))


def run_level_adjustment(
    effect: float,
    ci_low: float,
    ci_high: float,
    pvalue: float,
    se: float,
    *,
    run_variance: float,
    confidence_level: float = 0.95,
    df: float = math.inf,
) -> RunLevelAdjustment:
    """Widen a problem-level interval and p-value by a run-level variance of the effect.

    ``run_variance`` is the variance the run-level shocks add to ``effect`` (for one run
    per side, twice the run-level variance of one run's mean). With
    ``se_total = sqrt(se^2 + run_variance)``, ``lam = se_total / se`` (a design effect, as
    in the first-order Rao-Scott correction), ``z`` the normal and ``q`` the Student t
    (``df`` degrees of freedom; ``q = z`` for ``df = inf``) quantiles at
    ``confidence_level``:

    * the interval is stretched about the effect by ``lam * q / z``:
      ``effect + lam * q / z * (ci_low - effect)``, and so for ``ci_high``;
    * ``p' = max(p, 2 * t_df.sf(|effect| / se_total))``: the effect's score on the total
      standard error, never below the problem-level p-value.

    ``df`` (Satterthwaite) accounts for a run-level variance estimated from few runs;
    ``inf`` treats it as known. With ``run_variance = 0`` and ``df = inf`` nothing changes.
    When ``se`` is 0 (every paired difference equal) only the run part is left:
    ``effect -/+ q * sqrt(run_variance)`` and ``p' = 2 * t_df.sf(|effect| / sqrt(run_variance))``.

    Raises
    ------
    rolleval.errors.UsageError
        If an input is not finite, ``pvalue`` is outside [0, 1], ``se`` or
        ``run_variance`` is negative, ``df`` is not positive, or ``confidence_level`` is
        not in (0, 1).

    References
    ----------
    .. [1] J. N. K. Rao and A. J. Scott, "On chi-squared tests for multiway contingency
       tables with cell proportions estimated from survey data", *Annals of Statistics*
       12(1):46-60, 1984 (first-order correction by a design effect).
    .. [2] L. Kish, *Survey Sampling*, Wiley, 1965 (the design effect).

    Examples
    --------
    >>> from rolleval.stats import run_level_adjustment
    >>> adj = run_level_adjustment(-0.04, -0.06, -0.02, 0.001, 0.01, run_variance=0.0003)
    >>> round(adj.inflation, 4), round(adj.ci_low, 4), round(adj.ci_high, 4)
    (2.0, -0.08, 0.0)
    >>> round(adj.pvalue, 4)   # 2 * norm.sf(0.04 / 0.02)
    0.0455
    """
    for name, v in (("effect", effect), ("ci_low", ci_low), ("ci_high", ci_high)):
        if not math.isfinite(v):
            raise UsageError(f"{name} must be finite, got {v!r}")
    if not (0.0 <= pvalue <= 1.0):
        raise UsageError(f"pvalue must be in [0, 1], got {pvalue!r}")
    if not (math.isfinite(se) and se >= 0.0):
        raise UsageError(f"se must be finite and >= 0, got {se!r}")
    if not (math.isfinite(run_variance) and run_variance >= 0.0):
        raise UsageError(f"run_variance must be finite and >= 0, got {run_variance!r}")
    if not (0.0 < confidence_level < 1.0):
        raise UsageError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    if not (isinstance(df, (int, float)) and df > 0):
        raise UsageError(f"df must be > 0 (inf: normal), got {df!r}")
    from scipy.stats import norm
    from scipy.stats import t as t_dist

    total = math.sqrt(se * se + run_variance)
    if (run_variance == 0.0 and math.isinf(df)) or total == 0.0:
        return RunLevelAdjustment(ci_low, ci_high, pvalue, se, 1.0)
    tail = (1.0 - confidence_level) / 2.0
    z = float(norm.isf(tail))
    ref = norm if math.isinf(df) else t_dist(df)
    q = float(ref.isf(tail))
    p = float(2.0 * ref.sf(abs(effect) / total))
    if se == 0.0:
        return RunLevelAdjustment(
            effect - q * total, effect + q * total, min(1.0, p), total, math.inf, float(df)
        )
    lam = total / se
    stretch = lam * q / z
    return RunLevelAdjustment(
        effect + stretch * (ci_low - effect),
        effect + stretch * (ci_high - effect),
        min(1.0, max(p, pvalue)),
        total,
        lam,
        float(df),
    )


def satterthwaite_df(se: float, run_variance: float, run_variance_se: float, n_units: int) -> float:
    r"""Degrees of freedom of ``se_total^2 = se^2 + run_variance`` (Satterthwaite 1946).

    .. math:: \nu = \frac{(se^2 + v_{run})^2}{se^4 / (U - 1) + SE(v_{run})^2 / 2}

    with ``U`` the units (problems or clusters) behind ``se`` (``se^2`` on ``U - 1`` degrees
    of freedom) and ``SE(v_run)`` the standard error of the run-level variance as an
    estimate (``Var(S^2) = 2 sigma^4 / (k - 1)`` for ``k`` normal run means, so an
    estimate on ``k - 1`` degrees of freedom has ``SE^2 / 2 = sigma^4 / (k - 1)``).
    ``inf`` (a normal reference) when the run-level variance is known
    (``run_variance_se = 0``) or the total is 0. ``rolleval compare`` uses it for the
    interval and p-value, ``rolleval plan`` for the size of a replicate design.

    References
    ----------
    .. [1] F. E. Satterthwaite, "An approximate distribution of estimates of variance
       components", *Biometrics Bulletin* 2(6):110-114, 1946.
    """
    total2 = se * se + run_variance
    if run_variance_se == 0 or total2 == 0:
        return math.inf
    problem_part = se**4 / (n_units - 1) if n_units >= 2 else 0.0
    return total2 * total2 / (problem_part + run_variance_se**2 / 2.0)
