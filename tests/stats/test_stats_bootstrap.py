"""rolleval.stats.bootstrap_ci: bit-for-bit with scipy, exact bootstrap, chunking, statuses."""

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
from rolleval.stats import BootstrapResult, _bootstrap, bootstrap_ci
from rolleval.stats._chunks import rows_per_chunk


def pass_at_1_scores(t: int, seed: int, k: int = 16) -> np.ndarray:
    """Per-problem pass@1 scores c/k with problem difficulty drawn from a Beta."""
    rng = np.random.default_rng(seed)
    return rng.binomial(k, rng.beta(0.7, 0.9, size=t)) / k


def scipy_percentile(scores, *, n_resamples, confidence_level, seed):
    return stats.bootstrap(
        (scores,),
        np.mean,
        method="percentile",
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        rng=np.random.default_rng(seed),
    )


def assert_same_as_scipy(res: BootstrapResult, ref) -> None:
    assert res.low == ref.confidence_interval.low
    assert res.high == ref.confidence_interval.high
    assert res.standard_error == ref.standard_error
    np.testing.assert_array_equal(res.bootstrap_distribution, ref.bootstrap_distribution)


# ------------------------------------------------------------- scipy, bit for bit


@pytest.mark.parametrize("seed", [0, 1, 20240917])
@pytest.mark.parametrize("t", [2, 3, 7, 8, 9, 64, 129, 1001])
@pytest.mark.parametrize("confidence_level", [0.5, 0.9, 0.95, 0.99])
def test_bootstrap_matches_scipy_bit_for_bit(seed, t, confidence_level):
    scores = pass_at_1_scores(t, seed + 1000)
    res = bootstrap_ci(scores, n_resamples=999, confidence_level=confidence_level, rng=seed)
    ref = scipy_percentile(scores, n_resamples=999, confidence_level=confidence_level, seed=seed)
    assert_same_as_scipy(res, ref)
    assert res.status == "ok"


@pytest.mark.parametrize("n_resamples", [1000, 1001, 4096])
def test_bootstrap_matches_scipy_decimal_scores(n_resamples):
    # Decimal scores whose float sums depend on the order of addition.
    scores = np.array([0.1, 0.2, 0.3, 0.7, 0.9, 0.1, 0.3, 0.6, 0.2, 0.8, 0.4])
    res = bootstrap_ci(scores, n_resamples=n_resamples, rng=5)
    assert_same_as_scipy(
        res, scipy_percentile(scores, n_resamples=n_resamples, confidence_level=0.95, seed=5)
    )


def test_bootstrap_matches_scipy_large_t_with_small_chunks(monkeypatch):
    t, n_resamples = 5001, 1001  # odd T, odd B: chunks of 2 rows, last chunk 1 row
    monkeypatch.setattr(_bootstrap, "_CHUNK_BYTES", 3 * 8 * t)
    assert rows_per_chunk(t, _bootstrap._CHUNK_BYTES) == 2
    scores = pass_at_1_scores(t, 7)
    res = bootstrap_ci(scores, n_resamples=n_resamples, rng=11)
    assert_same_as_scipy(
        res, scipy_percentile(scores, n_resamples=n_resamples, confidence_level=0.95, seed=11)
    )


def test_bootstrap_matches_scipy_with_default_chunks_spanning_many_rows():
    t = 3001  # default chunk: 1 MiB / (8 * 3001) -> 42 rows, so 24 chunks for B = 1000
    assert rows_per_chunk(t, _bootstrap._CHUNK_BYTES) < 1000
    scores = pass_at_1_scores(t, 8)
    res = bootstrap_ci(scores, n_resamples=1000, confidence_level=0.9, rng=3)
    assert_same_as_scipy(
        res, scipy_percentile(scores, n_resamples=1000, confidence_level=0.9, seed=3)
    )


def test_bootstrap_int_and_bool_scores_equal_float_scores():
    ints = [1, 0, 1, 1, 0, 0, 1]
    as_float = bootstrap_ci(np.array(ints, dtype=float), n_resamples=500, rng=1)
    assert bootstrap_ci(ints, n_resamples=500, rng=1) == as_float
    assert bootstrap_ci([bool(i) for i in ints], n_resamples=500, rng=1) == as_float


# ------------------------------------------------------------------ chunking


@pytest.mark.parametrize("t", [3, 7, 101])
@pytest.mark.parametrize("chunk_rows", [2, 4, 10])
def test_chunked_draws_equal_one_big_draw(t, chunk_rows):
    scores = pass_at_1_scores(t, t)
    n_resamples = 333  # odd, and not a multiple of any chunk size
    small = _bootstrap._resample_means(
        scores, n_resamples, np.random.default_rng(9), chunk_bytes=8 * t * chunk_rows
    )
    one = _bootstrap._resample_means(
        scores, n_resamples, np.random.default_rng(9), chunk_bytes=8 * t * n_resamples
    )
    np.testing.assert_array_equal(small, one)
    reference = scores[np.random.default_rng(9).integers(0, t, size=(n_resamples, t))]
    np.testing.assert_array_equal(one, np.mean(reference, axis=-1))


@pytest.mark.parametrize("t", [1, 2, 3, 1000, 10**6])
@pytest.mark.parametrize("chunk_bytes", [1, 100, 4 * 2**20])
def test_rows_per_chunk_is_even_and_at_least_two(t, chunk_bytes):
    rows = rows_per_chunk(t, chunk_bytes)
    assert rows >= 2
    assert rows % 2 == 0


def test_generator_is_advanced_exactly_like_one_draw():
    t, n_resamples = 7, 51
    given = np.random.default_rng(123)
    bootstrap_ci(pass_at_1_scores(t, 0), n_resamples=n_resamples, rng=given)
    expected = np.random.default_rng(123)
    expected.integers(0, t, size=(n_resamples, t))
    assert given.bit_generator.state == expected.bit_generator.state


# ------------------------------------------------------ against the exact bootstrap


def exact_bootstrap_distribution(scores: list[Fraction]) -> dict[Fraction, Fraction]:
    """Distribution of the resample mean over all T**T equally likely index tuples."""
    t = len(scores)
    counts: dict[Fraction, int] = {}
    for idx in itertools.product(range(t), repeat=t):
        mean = sum(scores[i] for i in idx) / t
        counts[mean] = counts.get(mean, 0) + 1
    return {value: Fraction(count, t**t) for value, count in sorted(counts.items())}


@pytest.mark.parametrize(
    "scores",
    [
        [Fraction(1, 16), Fraction(8, 16), Fraction(15, 16)],
        [Fraction(0), Fraction(3, 16), Fraction(10, 16), Fraction(1)],
    ],
    ids=["T=3", "T=4"],
)
def test_bootstrap_distribution_agrees_with_exact_enumeration(scores):
    t = len(scores)
    exact = exact_bootstrap_distribution(scores)
    atoms = sorted(exact)
    probs = [exact[v] for v in atoms]
    mu = sum(p * v for v, p in exact.items())
    var = sum(p * (v - mu) ** 2 for v, p in exact.items())
    mu4 = sum(p * (v - mu) ** 4 for v, p in exact.items())
    # Sanity of the enumeration: the ideal bootstrap variance of the mean is the
    # plug-in variance over T.
    sample_mean = sum(scores) / t
    assert var == sum((s - sample_mean) ** 2 for s in scores) / t / t

    n_resamples = 200_000
    res = bootstrap_ci([float(s) for s in scores], n_resamples=n_resamples, rng=2024)
    draws = res.bootstrap_distribution

    # Every resample mean is one of the exact atoms (up to float rounding).
    atom_floats = np.array([float(v) for v in atoms])
    nearest = np.abs(draws[:, None] - atom_floats[None, :]).argmin(axis=1)
    assert np.max(np.abs(draws - atom_floats[nearest])) < 1e-12

    # Atom frequencies within 5 binomial standard errors.
    freq = np.bincount(nearest, minlength=len(atoms)) / n_resamples
    for f, p in zip(freq, probs, strict=True):
        p = float(p)
        assert abs(f - p) <= 5 * math.sqrt(p * (1 - p) / n_resamples)

    # Bootstrap variance within 5 standard errors of the sample variance.
    se_of_var = math.sqrt(float(mu4 - var**2) / n_resamples)
    assert abs(res.standard_error**2 - float(var)) <= 5 * se_of_var

    # Percentiles between the exact quantiles at p -/+ 5 binomial standard errors.
    cdf = np.cumsum([float(p) for p in probs])

    def exact_quantile(u: float) -> float:
        return float(atom_floats[min(np.searchsorted(cdf, u - 1e-12), len(atoms) - 1)])

    for value, p in ((res.low, 0.025), (res.high, 0.975)):
        e = 5 * math.sqrt(p * (1 - p) / n_resamples)
        assert exact_quantile(p - e) - 1e-12 <= value <= exact_quantile(p + e) + 1e-12


# -------------------------------------------------------------- statuses and fields


def test_no_problems_is_unavailable():
    res = bootstrap_ci([], rng=1)
    assert res.status == "unavailable"
    assert res.reason == "no problems to resample"
    assert (res.statistic, res.low, res.high, res.standard_error) == (None, None, None, None)
    assert res.n == 0
    assert res.bootstrap_distribution is None


def test_one_problem_is_degenerate():
    res = bootstrap_ci([0.4375], n_resamples=100, confidence_level=0.9, rng=3)
    assert res.status == "degenerate"
    assert res.reason == "no uncertainty estimable (one problem)"
    assert res.statistic == res.low == res.high == 0.4375
    assert res.standard_error is None
    assert (res.n, res.n_resamples, res.confidence_level, res.seed) == (1, 100, 0.9, 3)


def test_equal_scores_give_a_flagged_zero_width_interval():
    res = bootstrap_ci([1.0] * 20, n_resamples=200, rng=0)
    assert res.status == "degenerate"
    assert res.reason == "all 20 scores are equal; the interval has zero width"
    assert res.low == res.high == res.statistic == 1.0
    assert res.standard_error == 0.0


def test_two_problems_are_ok():
    res = bootstrap_ci([0.0, 1.0], n_resamples=1000, rng=0)
    assert res.status == "ok"
    assert res.reason is None
    assert (res.low, res.high) == (0.0, 1.0)


def test_result_fields_and_provenance():
    scores = pass_at_1_scores(50, 1)
    res = bootstrap_ci(scores, n_resamples=300, confidence_level=0.8, rng=42)
    assert res.statistic == float(np.mean(scores))
    assert res.low < res.statistic < res.high
    assert (res.method, res.n, res.n_resamples, res.confidence_level, res.seed) == (
        "percentile",
        50,
        300,
        0.8,
        42,
    )
    assert res.bootstrap_distribution.shape == (300,)
    assert res.standard_error == float(np.std(res.bootstrap_distribution, ddof=1))


def test_result_is_frozen_and_hides_the_distribution():
    res = bootstrap_ci([0.0, 0.5, 1.0], n_resamples=10, rng=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.low = 0.0  # type: ignore[misc]
    assert "bootstrap_distribution" not in repr(res)
    same_but_other_array = dataclasses.replace(res, bootstrap_distribution=np.zeros(1))
    assert same_but_other_array == res


def test_seed_is_recorded_only_for_int_rng():
    scores = [0.0, 0.5, 1.0]
    assert bootstrap_ci(scores, n_resamples=10, rng=np.int64(7)).seed == 7
    assert bootstrap_ci(scores, n_resamples=10, rng=np.random.default_rng(7)).seed is None
    assert bootstrap_ci(scores, n_resamples=10).seed is None


def test_same_seed_same_result_and_generator_gives_same_draws():
    scores = pass_at_1_scores(30, 2)
    by_seed = bootstrap_ci(scores, n_resamples=500, rng=99)
    assert by_seed == bootstrap_ci(scores, n_resamples=500, rng=99)
    by_generator = bootstrap_ci(scores, n_resamples=500, rng=np.random.default_rng(99))
    assert (by_generator.low, by_generator.high) == (by_seed.low, by_seed.high)


def test_global_numpy_random_state_is_never_touched():
    before = np.random.get_state(legacy=False)
    bootstrap_ci(pass_at_1_scores(20, 3), n_resamples=100)
    after = np.random.get_state(legacy=False)
    np.testing.assert_array_equal(before["state"]["key"], after["state"]["key"])
    assert before["state"]["pos"] == after["state"]["pos"]


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            ([[0.1, 0.2], [0.3, 0.4]],),
            {},
            "`scores` must be 1-D (one score per problem); got shape (2, 2)",
        ),
        ((0.5,), {}, "`scores` must be 1-D (one score per problem); got shape ()"),
        (
            ([0.1, float("nan"), 0.3],),
            {},
            "`scores` must be finite; got nan at index 1 (drop or resolve unavailable problems before calling)",
        ),
        (
            ([0.1, float("inf")],),
            {},
            "`scores` must be finite; got inf at index 1 (drop or resolve unavailable problems before calling)",
        ),
        (
            (["a", "b"],),
            {},
            "`scores` must be a 1-D array of real numbers (one per problem); got dtype <U1",
        ),
        (
            ([0.5, 1.0],),
            {"n_resamples": 0},
            "`n_resamples` must be a positive integer; got 0 (int)",
        ),
        (
            ([0.5, 1.0],),
            {"n_resamples": 1e4},
            "`n_resamples` must be a positive integer; got 10000.0 (float)",
        ),
        (
            ([0.5, 1.0],),
            {"n_resamples": True},
            "`n_resamples` must be a positive integer; got True (bool)",
        ),
        (
            ([0.5, 1.0],),
            {"confidence_level": 95},
            "`confidence_level` must be a number strictly between 0 and 1; got 95 (int)",
        ),
        (
            ([0.5, 1.0],),
            {"confidence_level": 1.0},
            "`confidence_level` must be a number strictly between 0 and 1; got 1.0 (float)",
        ),
        (
            ([0.5, 1.0],),
            {"rng": -1},
            "`rng` must be None, a non-negative int seed or a numpy.random.Generator; got -1 (int)",
        ),
        (
            ([0.5, 1.0],),
            {"rng": "42"},
            "`rng` must be None, a non-negative int seed or a numpy.random.Generator; got '42' (str)",
        ),
    ],
    ids=[
        "scores-2d",
        "scores-scalar",
        "scores-nan",
        "scores-inf",
        "scores-strings",
        "n_resamples-zero",
        "n_resamples-float",
        "n_resamples-bool",
        "confidence_level-percent",
        "confidence_level-one",
        "rng-negative",
        "rng-string",
    ],
)
def test_bootstrap_validation_messages(args, kwargs, message):
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        bootstrap_ci(*args, **kwargs)


def test_legacy_random_state_is_rejected():
    with pytest.raises(UsageError, match=r"^`rng` must be None, .* got RandomState"):
        bootstrap_ci([0.5, 1.0], rng=np.random.RandomState(0))


def test_validation_runs_before_the_empty_shortcut():
    with pytest.raises(UsageError, match="`n_resamples`"):
        bootstrap_ci([], n_resamples=-5)


def test_usage_error_is_a_value_error():
    with pytest.raises(ValueError):
        bootstrap_ci([0.5, 1.0], confidence_level=0)


def test_parameters_after_data_are_keyword_only():
    with pytest.raises(TypeError):
        bootstrap_ci([0.5, 1.0], 100)  # type: ignore[misc]
