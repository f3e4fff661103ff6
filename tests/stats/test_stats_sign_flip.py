"""rolleval.stats.sign_flip_test and min_attainable_pvalue."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from rolleval.errors import UsageError
from rolleval.stats import _permutation, min_attainable_pvalue, sign_flip_test

ALTERNATIVES = ("two-sided", "greater", "less")


def mean_difference(x, y, axis):
    return np.mean(x - y, axis=axis)


def scipy_pvalue(candidate, baseline, alternative, n_resamples=10_000):
    return stats.permutation_test(
        (np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)),
        mean_difference,
        permutation_type="samples",
        n_resamples=n_resamples,
        alternative=alternative,
    ).pvalue


def exact_pvalue(candidate, baseline, alternative) -> Fraction:
    """Brute force over all 2**T sign vectors in exact arithmetic.

    Scores are read as the decimals they were written as (Fraction(str(x))), so
    0.1 + 0.2 == 0.3 holds here and ties are the intended ties.
    """
    d = [Fraction(str(x)) - Fraction(str(y)) for x, y in zip(candidate, baseline, strict=True)]
    t = len(d)
    observed = sum(d) / t
    count = 0
    for signs in itertools.product((1, -1), repeat=t):
        m = sum(s * x for s, x in zip(signs, d, strict=True)) / t
        if alternative == "two-sided":
            count += abs(m) >= abs(observed)
        elif alternative == "greater":
            count += m >= observed
        else:
            count += m <= observed
    return Fraction(count, 2**t)


EXACT_CASES = {
    "binary": ([1, 1, 0, 1, 0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 0, 1, 0, 1, 0, 0]),
    "pass_at_16": (
        [16 / 16, 12 / 16, 3 / 16, 0, 9 / 16, 1, 5 / 16, 7 / 16],
        [14 / 16, 12 / 16, 5 / 16, 1 / 16, 9 / 16, 15 / 16, 2 / 16, 7 / 16],
    ),
    "decimal": ([0.1, 0.2, 0.3, 0.6, 0.7, 0.4], [0.3, 0.1, 0.3, 0.4, 0.2, 0.4]),
    # Decimal scores whose tied flipped means differ in float (rtol=0 breaks the ties).
    "decimal_float_ties_6": ([0.5, 0.8, 1.0, 0.0, 0.1, 0.9], [1.0, 0.2, 0.3, 0.9, 0.4, 0.3]),
    "decimal_float_ties_8": (
        [0.2, 0.4, 0.7, 0.6, 0.0, 0.0, 0.9, 0.8],
        [0.9, 0.5, 0.8, 0.3, 0.4, 0.8, 0.1, 0.3],
    ),
    "decimal_float_ties_4": ([0.4, 1.0, 0.1, 0.4], [0.4, 0.9, 0.2, 0.5]),
    "no_difference": ([0.5, 0.25, 1.0], [0.5, 0.25, 1.0]),
    "mirrored_ties": ([0.2, 0.0, 0.3, 0.0], [0.0, 0.2, 0.0, 0.3]),
    "thirteen_problems": (
        [1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1],
        [0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1],
    ),
}


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("case", sorted(EXACT_CASES))
def test_exact_pvalue_equals_scipy_permutation_test(case, alternative):
    candidate, baseline = EXACT_CASES[case]
    res = sign_flip_test(candidate, baseline, alternative=alternative)
    assert res.exact
    assert res.n_resamples == 2 ** len(candidate)
    assert res.pvalue == scipy_pvalue(candidate, baseline, alternative)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("case", sorted(EXACT_CASES))
def test_exact_pvalue_equals_exact_arithmetic(case, alternative):
    candidate, baseline = EXACT_CASES[case]
    assert sign_flip_test(candidate, baseline, alternative=alternative).pvalue == exact_pvalue(
        candidate, baseline, alternative
    )


def test_exact_pvalue_with_continuous_scores_equals_scipy():
    rng = np.random.default_rng(3)
    candidate, baseline = rng.random(11), rng.random(11)
    for alternative in ALTERNATIVES:
        assert sign_flip_test(candidate, baseline, alternative=alternative).pvalue == scipy_pvalue(
            candidate, baseline, alternative
        )


def test_decimal_ties_sweep_equals_exact_arithmetic():
    rng = np.random.default_rng(0)
    for _ in range(150):
        t = int(rng.integers(1, 10))
        candidate = np.round(rng.integers(0, 11, t) / 10, 1)
        baseline = np.round(rng.integers(0, 11, t) / 10, 1)
        for alternative in ALTERNATIVES:
            got = sign_flip_test(candidate, baseline, alternative=alternative).pvalue
            assert got == exact_pvalue(candidate, baseline, alternative), (
                candidate.tolist(),
                baseline.tolist(),
                alternative,
            )


def test_decimal_tie_beyond_scipy_float_tolerance():
    # SciPy's tie tolerance is 100 eps relative to |observed|; here the float noise of the
    # flipped means is larger, so scipy.stats.permutation_test (1.17) gives 0.5 for this
    # input. In exact arithmetic, and here, the p-value is 9/16.
    candidate, baseline = [0.8, 0.3, 0.9, 0.2, 0.1], [0.4, 0.7, 0.3, 0.9, 0.0]
    assert exact_pvalue(candidate, baseline, "greater") == Fraction(9, 16)
    assert sign_flip_test(candidate, baseline, alternative="greater").pvalue == 0.5625


def test_tolerance_is_what_keeps_decimal_ties():
    candidate, baseline = EXACT_CASES["decimal_float_ties_4"]
    assert sign_flip_test(candidate, baseline).pvalue == 1.0
    assert sign_flip_test(candidate, baseline, rtol=0).pvalue == 0.75  # float noise breaks the tie


def test_exact_null_distribution_is_all_sign_vectors():
    candidate, baseline = [0.5, 0.25, 1.0, 0.0], [0.0, 0.5, 0.75, 0.25]
    res = sign_flip_test(candidate, baseline)
    d = np.subtract(candidate, baseline)
    expected = sorted(
        float(np.mean(np.array(s) * d)) for s in itertools.product((1.0, -1.0), repeat=4)
    )
    np.testing.assert_array_equal(np.sort(res.null_distribution), expected)
    assert res.statistic == float(np.mean(d))


def test_exact_branch_is_chosen_by_two_to_the_t():
    candidate, baseline = np.zeros(10), np.r_[np.ones(5), np.zeros(5)] / 2
    assert sign_flip_test(candidate, baseline, n_resamples=1024, rng=0).exact
    inexact = sign_flip_test(candidate, baseline, n_resamples=1023, rng=0)
    assert not inexact.exact
    assert inexact.n_resamples == 1023


def test_exact_branch_in_chunks(monkeypatch):
    rng = np.random.default_rng(5)
    candidate, baseline = rng.random(12), rng.random(12)
    whole = sign_flip_test(candidate, baseline)
    monkeypatch.setattr(_permutation, "_CHUNK_BYTES", 8 * 12 * 7)  # 6 rows per chunk (even)
    chunked = sign_flip_test(candidate, baseline)
    assert chunked.pvalue == whole.pvalue
    np.testing.assert_array_equal(chunked.null_distribution, whole.null_distribution)


def test_single_problem_two_sided_pvalue_is_one():
    res = sign_flip_test([1.0], [0.0])
    assert (res.exact, res.n_resamples, res.pvalue) == (True, 2, 1.0)
    assert sign_flip_test([1.0], [0.0], alternative="greater").pvalue == 0.5


# ------------------------------------------------------------------ randomized


def test_randomized_pvalue_within_monte_carlo_error_of_exact():
    rng = np.random.default_rng(14)
    t = 14
    candidate = rng.binomial(8, 0.6, t) / 8
    baseline = rng.binomial(8, 0.4, t) / 8
    n_resamples = 2000
    for alternative in ALTERNATIVES:
        exact = sign_flip_test(candidate, baseline, n_resamples=2**t, alternative=alternative)
        assert exact.exact
        p = exact.pvalue
        bound = 4 * math.sqrt(p * (1 - p) / n_resamples) + 1 / (n_resamples + 1)
        for seed in range(5):
            res = sign_flip_test(
                candidate, baseline, n_resamples=n_resamples, alternative=alternative, rng=seed
            )
            assert not res.exact
            assert abs(res.pvalue - p) <= bound
    # A p-value where Monte Carlo error is visible (not pinned at 0 or 1).
    assert 0.02 < sign_flip_test(candidate, baseline, n_resamples=2**t).pvalue < 0.5


def test_randomized_pvalue_counts_plus_one():
    rng = np.random.default_rng(1)
    candidate, baseline = rng.random(20), rng.random(20)
    for alternative in ALTERNATIVES:
        res = sign_flip_test(candidate, baseline, n_resamples=999, alternative=alternative, rng=4)
        null, m = res.null_distribution, res.statistic
        tol = 1e-9 * np.max(np.abs(np.subtract(candidate, baseline)))
        extreme = {
            "two-sided": np.abs(null) >= abs(m) - tol,
            "greater": null >= m - tol,
            "less": null <= m + tol,
        }[alternative]
        assert res.pvalue == (np.count_nonzero(extreme) + 1) / 1000


def test_randomized_signs_are_one_draw_in_even_chunks(monkeypatch):
    t, n_resamples = 15, 301
    rng = np.random.default_rng(2)
    candidate, baseline = rng.random(t), rng.random(t)
    monkeypatch.setattr(_permutation, "_CHUNK_BYTES", 8 * t * 3)  # 3 rows -> 2-row chunks
    res = sign_flip_test(candidate, baseline, n_resamples=n_resamples, rng=8)
    signs = 2 * np.random.default_rng(8).integers(0, 2, (n_resamples, t)) - 1
    expected = np.mean(signs * np.subtract(candidate, baseline), axis=-1)
    np.testing.assert_array_equal(res.null_distribution, expected)


def test_randomized_is_reproducible_and_records_seed():
    rng = np.random.default_rng(3)
    candidate, baseline = rng.random(30), rng.random(30)
    first = sign_flip_test(candidate, baseline, n_resamples=500, rng=77)
    assert first == sign_flip_test(candidate, baseline, n_resamples=500, rng=77)
    assert first.seed == 77
    assert (
        sign_flip_test(candidate, baseline, n_resamples=500, rng=np.random.default_rng(77)).seed
        is None
    )


def test_result_is_frozen_and_hides_null_distribution():
    res = sign_flip_test([0.5, 1.0], [0.0, 0.5])
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.pvalue = 0.0  # type: ignore[misc]
    assert "null_distribution" not in repr(res)
    assert res.alternative == "two-sided"
    assert res.n == 2


# ---------------------------------------------------------- min attainable p-value


@pytest.mark.parametrize(
    ("n_problems", "kwargs", "expected"),
    [
        (1, {}, 1.0),
        (5, {}, 2 / 32),
        (6, {}, 2 / 64),
        (6, {"alternative": "greater"}, 1 / 64),
        (6, {"alternative": "less"}, 1 / 64),
        (13, {}, 2 / 8192),
        (14, {}, 1 / 10_001),
        (10, {"n_resamples": 1023}, 1 / 1024),
        (10**6, {}, 1 / 10_001),
    ],
)
def test_min_attainable_pvalue(n_problems, kwargs, expected):
    assert min_attainable_pvalue(n_problems, **kwargs) == expected


@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
@pytest.mark.parametrize("t", [1, 2, 6, 9])
def test_exact_test_attains_the_minimum(t, alternative):
    candidate, baseline = np.arange(1, t + 1) / (t + 1), np.zeros(t)  # all differences positive
    res = sign_flip_test(candidate, baseline, alternative=alternative)
    assert res.pvalue == min_attainable_pvalue(t, alternative=alternative)


def test_randomized_test_attains_the_minimum():
    candidate, baseline = np.full(30, 0.9), np.zeros(30)
    res = sign_flip_test(candidate, baseline, n_resamples=99, rng=0)
    assert res.pvalue == min_attainable_pvalue(30, n_resamples=99) == 0.01


def test_minimum_explains_small_suites():
    assert min_attainable_pvalue(5) > 0.05
    assert min_attainable_pvalue(6) <= 0.05


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            ([0.1, 0.2], [0.1]),
            {},
            "`candidate` and `baseline` must have the same length (one paired score per problem, same problem order); got 2 and 1",
        ),
        (([], []), {}, "`candidate` and `baseline` must hold at least one problem; got 0"),
        (
            ([0.1, float("nan")], [0.1, 0.2]),
            {},
            "`candidate` must be finite; got nan at index 1 (drop or resolve unavailable problems before calling)",
        ),
        (
            ([0.1, 0.2], [[0.1, 0.2]]),
            {},
            "`baseline` must be 1-D (one score per problem); got shape (1, 2)",
        ),
        (
            ([0.1, 0.2], [0.2, 0.1]),
            {"alternative": "two_sided"},
            "`alternative` must be one of 'two-sided', 'greater', 'less'; got 'two_sided' (str)",
        ),
        (
            ([0.1, 0.2], [0.2, 0.1]),
            {"n_resamples": -1},
            "`n_resamples` must be a positive integer; got -1 (int)",
        ),
        (
            ([0.1, 0.2], [0.2, 0.1]),
            {"rng": 1.5},
            "`rng` must be None, a non-negative int seed or a numpy.random.Generator; got 1.5 (float)",
        ),
        (
            ([0.1, 0.2], [0.2, 0.1]),
            {"rtol": -1e-9},
            "`rtol` must be a number >= 0 and < 1; got -1e-09 (float)",
        ),
    ],
    ids=[
        "length-mismatch",
        "empty",
        "candidate-nan",
        "baseline-2d",
        "alternative",
        "n_resamples",
        "rng",
        "rtol",
    ],
)
def test_sign_flip_validation_messages(args, kwargs, message):
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        sign_flip_test(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0,), {}, "`n_problems` must be an integer >= 1; got 0 (int)"),
        ((5.0,), {}, "`n_problems` must be an integer >= 1; got 5.0 (float)"),
        ((5,), {"n_resamples": 0}, "`n_resamples` must be a positive integer; got 0 (int)"),
        (
            (5,),
            {"alternative": "both"},
            "`alternative` must be one of 'two-sided', 'greater', 'less'; got 'both' (str)",
        ),
    ],
    ids=["n_problems-zero", "n_problems-float", "n_resamples", "alternative"],
)
def test_min_attainable_pvalue_validation_messages(args, kwargs, message):
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        min_attainable_pvalue(*args, **kwargs)
