"""Cluster bootstrap, cluster sign-flip test and the regression-verdict power: exact checks."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm

from rolleval.errors import UsageError
from rolleval.stats import (
    cluster_bootstrap_ci,
    cluster_sign_flip_test,
    grouped_bootstrap_ci,
    regression_power,
    required_problems,
    required_rollouts,
)


def brute_force_cluster_p(candidate, baseline, labels):
    """Two-sided p of the cluster sign flip, every sign vector, exact fractions."""
    d = [
        Fraction(x).limit_denominator(10**6) - Fraction(y).limit_denominator(10**6)
        for x, y in zip(candidate, baseline)
    ]
    keys = sorted(set(labels), key=str)
    sums = [sum(di for di, lab in zip(d, labels) if lab == k) for k in keys]
    observed = abs(sum(sums))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, sums))) >= observed
        for signs in itertools.product((1, -1), repeat=len(sums))
    )
    return Fraction(hits, 2 ** len(sums))


@pytest.mark.parametrize("seed", range(25))
def test_cluster_sign_flip_is_exact(seed):
    rng = np.random.default_rng(seed)
    t = int(rng.integers(2, 14))
    labels = [f"s{int(x)}" for x in rng.integers(0, int(rng.integers(1, 7)), t)]
    candidate = rng.integers(0, 9, t) / 8
    baseline = rng.integers(0, 9, t) / 8
    res = cluster_sign_flip_test(candidate, baseline, labels)
    assert res.exact and res.n == len(set(labels))
    assert res.pvalue == float(brute_force_cluster_p(candidate, baseline, labels))
    assert res.statistic == pytest.approx(float(np.mean(candidate - baseline)))


def test_cluster_sign_flip_with_singletons_is_the_problem_test():
    rng = np.random.default_rng(1)
    candidate, baseline = rng.random(40), rng.random(40)
    from rolleval.stats import sign_flip_test

    flat = sign_flip_test(candidate, baseline, n_resamples=3000, rng=4)
    clus = cluster_sign_flip_test(candidate, baseline, [None] * 40, n_resamples=3000, rng=4)
    assert clus.pvalue == flat.pvalue and clus.n == 40


def exact_cluster_bootstrap_cdf(x, labels):
    """Every ordered draw of C clusters with replacement, equally likely: exact law."""
    keys = sorted(set(labels))
    sums = [sum(Fraction(v) for v, lab in zip(x, labels) if lab == k) for k in keys]
    sizes = [sum(lab == k for lab in labels) for k in keys]
    values = []
    for draw in itertools.product(range(len(keys)), repeat=len(keys)):
        values.append(sum(sums[i] for i in draw) / sum(sizes[i] for i in draw))
    return sorted(values)


def test_cluster_bootstrap_draws_the_exact_cluster_resampling_law():
    x = [0.0, 0.25, 1.0, 0.5, 0.5, 0.75, 0.0, 1.0]
    labels = ["a", "a", "a", "b", "b", "c", "d", "d"]
    exact = exact_cluster_bootstrap_cdf(x, labels)  # 4**4 = 256 equally likely draws
    res = cluster_bootstrap_ci(x, labels, n_resamples=40_000, rng=2)
    draws = res.bootstrap_distribution
    for q in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)):
        value = exact[int(q * len(exact))]
        share_exact = sum(v <= value for v in exact) / len(exact)
        share_drawn = float(np.mean(draws <= float(value) + 1e-12))
        # binomial MC error at B = 40,000 is below 0.0025; 0.01 is four of them
        assert abs(share_drawn - share_exact) < 0.01
    assert res.status == "ok" and res.n == 4 and res.draw == "clusters"
    assert res.statistic == pytest.approx(float(np.mean(x)), abs=1e-15)


def test_cluster_bootstrap_uses_the_expanded_percentile_levels():
    from scipy.stats import norm, t

    from rolleval.stats._bootstrap import _quantile_type7

    rng = np.random.default_rng(8)
    x = rng.random(90)
    labels = [i % 30 for i in range(90)]
    res = cluster_bootstrap_ci(x, labels, n_resamples=5000, rng=3)
    a = 2 * norm.sf(math.sqrt(30 / 29) * t.ppf(0.975, 29))
    assert a == pytest.approx(0.0375, abs=5e-4)
    ordered = np.sort(res.bootstrap_distribution)
    assert res.low == _quantile_type7(ordered, a / 2)
    assert res.high == _quantile_type7(ordered, 1 - a / 2)


def test_cluster_bootstrap_with_singletons_matches_the_problem_bootstrap_in_law():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, 300) / 4
    clus = cluster_bootstrap_ci(x, [None] * 300, n_resamples=20_000, rng=1)
    flat = grouped_bootstrap_ci(x, n_resamples=20_000, rng=1)
    assert clus.standard_error == pytest.approx(flat.standard_error, rel=0.03)
    # with 300 singleton clusters the expanded level is 0.0492 instead of 0.05
    assert clus.low == pytest.approx(flat.low, abs=0.005)
    assert clus.high == pytest.approx(flat.high, abs=0.005)


def test_cluster_bootstrap_degenerate_and_unavailable():
    same = cluster_bootstrap_ci([0.5, 0.5, 1.0, 0.0], ["a", "a", "b", "b"], rng=0)
    assert same.status == "degenerate" and same.low == same.high == 0.5
    one = cluster_bootstrap_ci([0.1, 0.9], ["a", "a"], rng=0)
    assert one.status == "degenerate" and one.n == 1
    none = cluster_bootstrap_ci([], [], rng=0)
    assert none.status == "unavailable" and none.low is None
    with pytest.raises(UsageError, match="one label per problem"):
        cluster_bootstrap_ci([0.1, 0.2], ["a"])


def test_grouped_bootstrap_calls_all_equal_scores_degenerate():
    res = grouped_bootstrap_ci(np.ones(50), rng=0)
    assert res.status == "degenerate" and res.low == res.high == 1.0
    assert "equal" in res.reason


@pytest.mark.parametrize(
    "delta, tau, se",
    [(0.03, 0.0, 0.01), (0.04, 0.02, 0.01), (0.02, 0.02, 0.005), (0.1, 0.03, 0.05)],
)
def test_regression_power_formula(delta, tau, se):
    expected = norm.cdf((delta - max(tau, norm.ppf(0.975) * se)) / se)
    assert regression_power(delta, se=se, threshold=tau) == pytest.approx(expected, rel=1e-12)


def test_required_sizes_reach_the_regression_power_and_not_one_less():
    kw = {
        "omega2": 0.01,
        "sigma2_baseline": 0.2,
        "n_rollouts_baseline": 8,
        "sigma2_candidate": 0.2,
        "n_rollouts_candidate": 8,
    }
    var = 0.01 + 0.2 / 8 + 0.2 / 8
    for delta, tau in ((0.03, 0.02), (0.025, 0.02), (0.05, 0.02), (0.04, 0.0)):
        t = required_problems(delta, threshold=tau, **kw)
        assert regression_power(delta, se=math.sqrt(var / t), threshold=tau) >= 0.8 - 1e-9
        if t > 1:
            assert regression_power(delta, se=math.sqrt(var / (t - 1)), threshold=tau) < 0.8
        k = required_rollouts(
            delta, 3 * t, omega2=0.01, sigma2_baseline=0.2, sigma2_candidate=0.2, threshold=tau
        )
        se_k = math.sqrt((0.01 + 0.4 / k) / (3 * t))
        assert regression_power(delta, se=se_k, threshold=tau) >= 0.8 - 1e-9
    # without a threshold the classical size
    assert required_problems(0.03, **kw) == required_problems(0.03, threshold=0.0, **kw)
    with pytest.raises(UsageError, match="half the time"):
        required_problems(0.02, threshold=0.02, **kw)
