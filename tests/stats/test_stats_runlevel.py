"""run_noise and run_level_adjustment: exact values, scipy as oracle, and the null."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps

from rolleval.errors import UsageError
from rolleval.stats import run_level_adjustment, run_noise


def _exact_noise(c: list[list[int]], n: list[list[int]]) -> dict[str, Fraction]:
    """The figures of run_noise in exact rational arithmetic (independent of numpy)."""
    k, t = len(c), len(c[0])
    rates = [[Fraction(c[r][i], n[r][i]) for i in range(t)] for r in range(k)]
    means = [sum(row) / t for row in rates]
    mbar = sum(means) / k
    variance = sum((m - mbar) ** 2 for m in means) / (k - 1)
    big_c = [sum(c[r][i] for r in range(k)) for i in range(t)]
    big_n = [sum(n[r][i] for r in range(k)) for i in range(t)]
    s2 = [
        Fraction(big_c[i], big_n[i])
        * (1 - Fraction(big_c[i], big_n[i]))
        * Fraction(big_n[i], big_n[i] - 1)
        for i in range(t)
    ]
    binomial = sum(sum(s2[i] / n[r][i] for i in range(t)) / t**2 for r in range(k)) / k
    own = Fraction(0)
    for i in range(t):
        col = [rates[r][i] for r in range(k)]
        cbar = sum(col) / k
        own += sum((x - cbar) ** 2 for x in col) / (k - 1)
    expected_own = sum(sum(s2[i] / n[r][i] for r in range(k)) / k for i in range(t))
    return {"variance": variance, "binomial": binomial, "own": own, "expected_own": expected_own}


C = [[3, 1, 0, 4], [1, 2, 0, 3], [4, 0, 1, 4]]
N = [[4, 4, 4, 4], [4, 4, 4, 4], [4, 4, 4, 4]]


def test_run_noise_matches_exact_arithmetic_and_scipy() -> None:
    res = run_noise(C, N)
    ex = _exact_noise(C, N)
    assert res.n_runs == 3 and res.n_problems == 4 and res.df == 2
    assert res.run_means == pytest.approx((8 / 16, 6 / 16, 9 / 16), abs=1e-15)
    assert res.variance == pytest.approx(float(ex["variance"]), rel=1e-12)
    assert res.binomial_variance == pytest.approx(float(ex["binomial"]), rel=1e-12)
    ratio = ex["variance"] / ex["binomial"]
    assert res.ratio == pytest.approx(float(ratio), rel=1e-12)
    assert res.chi2 == pytest.approx(2 * float(ratio), rel=1e-12)
    assert res.pvalue == pytest.approx(sps.chi2.sf(2 * float(ratio), 2), rel=1e-12)
    assert res.run_variance == max(0.0, res.variance - res.binomial_variance)
    upper = 2 * res.variance / sps.chi2.ppf(0.05, 2) - res.binomial_variance
    assert res.run_variance_upper == pytest.approx(max(0.0, upper), rel=1e-12)
    assert res.problem_variance_ratio == pytest.approx(
        float(ex["own"] / ex["expected_own"]), rel=1e-12
    )
    share = 1 - ex["own"] / (16 * ex["variance"])
    assert res.between_problem_share == pytest.approx(float(share), rel=1e-12)


def test_unequal_rollouts_use_each_runs_own_binomial_variance() -> None:
    c = [[1, 2], [3, 0], [2, 1]]
    n = [[2, 4], [4, 1], [3, 3]]
    res = run_noise(c, n)
    ex = _exact_noise(c, n)
    assert res.binomial_variance == pytest.approx(float(ex["binomial"]), rel=1e-12)
    assert res.variance == pytest.approx(float(ex["variance"]), rel=1e-12)


def test_a_common_shock_is_seen_and_independent_runs_are_not() -> None:
    """Independent binomial runs: the ratio averages 1 and the test holds its level; a
    shared per-run shift of the success probability shows up as between-problem covariance.
    Chance: with 400 simulations the mean ratio's SE is about 0.035 (chi2(7)/7 has SD 0.53,
    /sqrt(400)); the bounds are more than 4 SE wide."""
    rng = np.random.default_rng(7)
    t, k, m = 60, 8, 8
    p = rng.beta(0.7, 2.0, t)
    ratios, rejects = [], 0
    for _ in range(400):
        c = rng.binomial(m, p, size=(k, t))
        res = run_noise(c, np.full((k, t), m))
        ratios.append(res.ratio)
        rejects += res.pvalue <= 0.05
    assert abs(np.mean(ratios) - 1.0) < 0.15
    assert rejects / 400 < 0.1  # nominal 0.05; SE 0.011
    shocked = []
    for _ in range(100):
        shift = rng.normal(0, 0.05, size=(k, 1))
        c = rng.binomial(m, np.clip(p + shift, 0, 1))
        shocked.append(run_noise(c, np.full((k, t), m)).between_problem_share)
    assert np.mean(shocked) > 0.5


def test_no_informative_problem_gives_no_ratio() -> None:
    res = run_noise([[0, 4], [0, 4]], [[4, 4], [4, 4]])
    assert res.ratio is None and res.pvalue is None and res.binomial_variance == 0.0
    assert res.variance == 0.0 and res.between_problem_share is None


@pytest.mark.parametrize(
    ("c", "n", "match"),
    [
        ([[1, 2]], [[2, 2]], "at least 2 replicate runs"),
        ([[1, 2], [1]], [[2, 2], [2]], "2-D|shape"),
        ([[1, 3], [1, 1]], [[2, 2], [2, 2]], "0 <= c <= n"),
        ([[1, 0], [1, 1]], [[2, 0], [2, 2]], "n >= 1"),
        ([[0.5, 1], [1, 1]], [[2, 2], [2, 2]], "whole"),
        ([1, 2], [2, 2], "2-D"),
    ],
)
def test_run_noise_rejects_bad_input(c: object, n: object, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        run_noise(c, n)


def test_adjustment_is_the_design_effect_on_interval_and_the_total_score() -> None:
    effect, lo, hi, p, se, v = -0.03, -0.055, -0.004, 0.02, 0.013, 0.0002
    res = run_level_adjustment(effect, lo, hi, p, se, run_variance=v)
    lam = math.sqrt(se**2 + v) / se
    assert res.inflation == pytest.approx(lam, rel=1e-15)
    assert res.se == pytest.approx(math.sqrt(se**2 + v), rel=1e-15)
    assert res.ci_low == pytest.approx(effect + lam * (lo - effect), rel=1e-15)
    assert res.ci_high == pytest.approx(effect + lam * (hi - effect), rel=1e-15)
    assert res.pvalue == pytest.approx(2 * sps.norm.sf(0.03 / math.sqrt(se**2 + v)), rel=1e-12)
    assert res.pvalue > p and res.ci_high > hi and res.ci_low < lo


def test_adjustment_p_value_does_not_saturate_at_a_randomized_floor() -> None:
    # a randomized sign-flip p-value floors at 1/(B+1): its normal score (3.89 for
    # B = 10,000) divided by a design effect of 3 gave p' = 0.19 for an effect 10 total
    # SEs from 0; the score on the total SE keeps it significant
    effect, se, v = -0.30, 0.01, 8e-4
    floor = 1 / 10_001
    res = run_level_adjustment(effect, -0.32, -0.28, floor, se, run_variance=v)
    assert res.inflation == pytest.approx(3.0, rel=1e-12)
    # 2 * sf(10) is 1.5e-23: p' is the problem-level p-value, its floor
    assert res.pvalue == floor


def test_adjustment_with_df_uses_student_t() -> None:
    effect, lo, hi, p, se, v, df = -0.03, -0.055, -0.004, 0.02, 0.013, 0.0002, 7.5
    res = run_level_adjustment(effect, lo, hi, p, se, run_variance=v, df=df)
    total = math.sqrt(se**2 + v)
    stretch = total / se * sps.t.isf(0.025, df) / sps.norm.isf(0.025)
    assert res.ci_low == pytest.approx(effect + stretch * (lo - effect), rel=1e-12)
    assert res.ci_high == pytest.approx(effect + stretch * (hi - effect), rel=1e-12)
    assert res.pvalue == pytest.approx(2 * sps.t.sf(0.03 / total, df), rel=1e-12)
    assert res.df == df
    # an estimated run variance of 0 still widens by the t quantile
    zero = run_level_adjustment(effect, lo, hi, p, se, run_variance=0.0, df=df)
    assert zero.inflation == 1.0 and zero.ci_low < lo and zero.ci_high > hi


def test_adjustment_without_run_variance_changes_nothing() -> None:
    assert tuple(run_level_adjustment(0.01, -0.02, 0.04, 0.4, 0.015, run_variance=0.0)) == (
        -0.02,
        0.04,
        0.4,
        0.015,
        1.0,
    )


def test_adjustment_of_a_degenerate_sample_is_the_run_part_alone() -> None:
    res = run_level_adjustment(
        -0.05, -0.05, -0.05, 0.0001, 0.0, run_variance=0.0004, confidence_level=0.9
    )
    z = sps.norm.isf(0.05)
    assert res.ci_low == pytest.approx(-0.05 - z * 0.02) and res.ci_high == pytest.approx(
        -0.05 + z * 0.02
    )
    assert res.pvalue == pytest.approx(2 * sps.norm.sf(2.5))
    assert math.isinf(res.inflation)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"pvalue": 1.5}, "pvalue"),
        ({"se": -1.0}, "se"),
        ({"run_variance": -1e-3}, "run_variance"),
        ({"run_variance": math.nan}, "run_variance"),
        ({"confidence_level": 1.0}, "confidence_level"),
        ({"ci_low": math.inf}, "ci_low"),
        ({"df": 0.0}, "df"),
    ],
)
def test_adjustment_rejects_bad_input(kw: dict[str, float], match: str) -> None:
    base = {
        "effect": 0.0,
        "ci_low": -0.01,
        "ci_high": 0.01,
        "pvalue": 0.5,
        "se": 0.01,
        "run_variance": 0.0001,
        "confidence_level": 0.95,
    }
    base.update(kw)
    with pytest.raises(UsageError, match=match):
        run_level_adjustment(**base)  # type: ignore[arg-type]
