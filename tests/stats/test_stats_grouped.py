"""The grouped (distinct-value) bootstrap: same resampling distribution as the index bootstrap."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from rolleval.errors import UsageError
from rolleval.stats import bootstrap_ci, grouped_bootstrap_ci, grouped_bootstrap_columns


def _exact_distribution(x):
    """Exact distribution of the bootstrap mean: all T^T index resamples, as Fractions."""
    T = len(x)
    fx = [Fraction(v).limit_denominator(1000) for v in x]
    dist = Counter(sum(fx[i] for i in idx) / T for idx in itertools.product(range(T), repeat=T))
    return {float(k): Fraction(v, T**T) for k, v in dist.items()}


@pytest.mark.parametrize("x", [[0.0, 1.0, 1.0, 0.5], [0.25, 0.25, 1.0], [0.0, 0.0, 0.0, 1.0, 1.0]])
def test_resampled_means_follow_the_exact_bootstrap_distribution(x):
    B = 40_000
    res = grouped_bootstrap_ci(np.array(x), n_resamples=B, rng=7)
    exact = _exact_distribution(x)
    observed = Counter(np.round(res.bootstrap_distribution, 12))
    # chi-square style check: every atom's frequency within 5 binomial SDs of its exact probability
    for value, p in exact.items():
        p = float(p)
        got = observed.get(round(value, 12), 0) / B
        assert abs(got - p) <= 5 * np.sqrt(p * (1 - p) / B) + 1e-12, (value, got, p)
    assert sum(observed.values()) == B


def test_agrees_with_index_bootstrap_within_monte_carlo_error():
    rng = np.random.default_rng(0)
    x = rng.binomial(8, rng.beta(2, 2, size=400)) / 8
    g = grouped_bootstrap_ci(x, n_resamples=20_000, rng=1)
    b = bootstrap_ci(x, n_resamples=20_000, rng=2)
    assert g.statistic == pytest.approx(b.statistic)
    assert g.low == pytest.approx(b.low, abs=4e-3) and g.high == pytest.approx(b.high, abs=4e-3)
    assert g.standard_error == pytest.approx(b.standard_error, rel=0.05)


def test_many_distinct_values_use_index_draws_with_the_same_distribution():
    x = np.linspace(0, 1, 300)  # V = T: indices are cheaper than multinomial counts
    g = grouped_bootstrap_ci(x, n_resamples=4000, rng=3)
    assert g.draw == "indices"
    se = x.std(ddof=0) / np.sqrt(len(x))
    assert g.standard_error == pytest.approx(se, rel=0.08)


def test_columns_share_resamples_and_drop_rows_with_nan():
    x = np.array([[0.0, 1.0], [1.0, np.nan], [1.0, 0.0], [0.5, 0.5]])
    a, b = grouped_bootstrap_columns(x, n_resamples=1000, rng=0)
    assert a.n == b.n == 3
    assert a.statistic == pytest.approx(0.5) and b.statistic == pytest.approx(0.5)
    # columns 0 and 1 sum to 1 on every kept row: shared resamples keep that exactly
    assert np.allclose(a.bootstrap_distribution + b.bootstrap_distribution, 1.0)


def test_availability_statuses():
    assert grouped_bootstrap_ci(np.array([np.nan, np.nan]), rng=0).status == "unavailable"
    one = grouped_bootstrap_ci(np.array([0.5, np.nan]), rng=0)
    assert one.status == "degenerate" and one.low == one.high == 0.5 and one.standard_error is None


def test_same_seed_same_interval_and_seed_recorded():
    x = np.array([0.0, 0.25, 1.0, 1.0, 0.5])
    a = grouped_bootstrap_ci(x, n_resamples=2000, rng=np.int64(5))
    b = grouped_bootstrap_ci(x, n_resamples=2000, rng=5)
    assert (a.low, a.high) == (b.low, b.high) and a.seed == 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_resamples": 0}, "`n_resamples` must be a positive integer"),
        ({"confidence_level": 1.0}, "confidence_level"),
        ({"rng": -1}, "`rng` must be None"),
    ],
)
def test_validation_messages(kwargs, message):
    with pytest.raises(UsageError, match=message):
        grouped_bootstrap_ci(np.array([0.0, 1.0]), **kwargs)
    with pytest.raises(UsageError, match="2-D"):
        grouped_bootstrap_columns(np.array([0.0, 1.0]))
