"""Standard errors and variance components (Miller 2024) in rolleval.stats."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rolleval.errors import UsageError
from rolleval.stats import (
    clt_se,
    clustered_se,
    paired_se,
    paired_variance_components,
    required_problems,
    variance_components,
)

DECIMALS = [0.1, 0.2, 0.3, 0.7, 0.0, 1.0, 0.3, 0.6, 0.9, 0.45, 0.15]


def fractions(values):
    return [Fraction(str(v)) for v in values]


def exact_clt_se(values) -> float:
    s = fractions(values)
    t = len(s)
    mean = sum(s) / t
    return math.sqrt(sum((x - mean) ** 2 for x in s) / (t * (t - 1)))


def exact_clustered_se(values, labels) -> float:
    s = fractions(values)
    t = len(s)
    mean = sum(s) / t
    sums: dict[object, Fraction] = {}
    for x, label in zip(s, labels, strict=True):
        sums[label] = sums.get(label, Fraction(0)) + (x - mean)
    c = len(sums)
    return math.sqrt(Fraction(c, c - 1) * sum(v * v for v in sums.values()) / (t * t))


# ------------------------------------------------------------------- CLT


def test_clt_se_matches_exact_arithmetic():
    assert clt_se(DECIMALS) == pytest.approx(exact_clt_se(DECIMALS), rel=1e-15)


def test_clt_se_is_sample_std_over_root_t():
    rng = np.random.default_rng(0)
    s = rng.random(500)
    assert clt_se(s) == pytest.approx(np.std(s, ddof=1) / math.sqrt(500), rel=1e-12)


@pytest.mark.parametrize("scores", [[], [0.5]])
def test_clt_se_needs_two_problems(scores):
    assert clt_se(scores) is None


def test_clt_se_of_constant_scores_is_zero():
    assert clt_se([0.3] * 7) == 0.0


# -------------------------------------------------------------- clustered


def test_clustered_se_matches_exact_arithmetic():
    labels = ["a", "a", "b", "c", "c", "c", "d", "b", "a", "d", "e"]
    got = clustered_se(DECIMALS, labels)
    assert got == pytest.approx(exact_clustered_se(DECIMALS, labels), rel=1e-14)


def test_clustered_se_with_integer_labels_matches_exact_arithmetic():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 17, 200) / 16
    labels = rng.integers(0, 13, 200)
    got = clustered_se(scores, labels)
    assert got == pytest.approx(exact_clustered_se(scores, labels.tolist()), rel=1e-13)


def test_clustered_se_is_larger_when_errors_cluster():
    # Two passages, each with four questions that are all right or all wrong.
    scores = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert clustered_se(scores, [0, 0, 0, 0, 1, 1, 1, 1]) > 2 * clt_se(scores)


def test_clustered_se_singletons_equal_clt_exactly():
    assert clustered_se(DECIMALS, range(len(DECIMALS))) == clt_se(DECIMALS)
    shuffled = np.random.default_rng(2).permutation(len(DECIMALS))
    assert clustered_se(DECIMALS, shuffled) == clt_se(DECIMALS)
    assert clustered_se(DECIMALS, [f"id-{i}" for i in shuffled]) == clt_se(DECIMALS)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=2,
        max_size=60,
    ),
    st.randoms(use_true_random=False),
)
def test_clustered_se_singletons_equal_clt_property(scores, random):
    labels = list(range(len(scores)))
    random.shuffle(labels)
    assert clustered_se(scores, labels) == clt_se(scores)


def test_clustered_se_needs_two_clusters():
    assert clustered_se([0.0, 1.0, 0.5], ["x", "x", "x"]) is None
    assert clustered_se([], []) is None


# ----------------------------------------------------------------- paired


def test_paired_se_matches_exact_arithmetic():
    candidate = DECIMALS
    baseline = [0.2, 0.2, 0.1, 0.9, 0.1, 0.8, 0.3, 0.3, 0.6, 0.5, 0.35]
    d = [x - y for x, y in zip(fractions(candidate), fractions(baseline), strict=True)]
    t = len(d)
    mean = sum(d) / t
    expected = math.sqrt(sum((x - mean) ** 2 for x in d) / (t - 1) / t)
    assert paired_se(candidate, baseline) == pytest.approx(expected, rel=1e-14)


def test_paired_se_removes_shared_problem_variance():
    rng = np.random.default_rng(3)
    difficulty = rng.random(400)
    candidate = difficulty + rng.normal(0, 0.05, 400)
    baseline = difficulty + rng.normal(0, 0.05, 400)
    unpaired = math.hypot(clt_se(candidate), clt_se(baseline))
    assert paired_se(candidate, baseline) < unpaired / 3


def test_paired_se_needs_two_problems():
    assert paired_se([1.0], [0.0]) is None


# --------------------------------------------------------- variance components


def exact_components(c, n):
    """Loops in exact arithmetic: (between, within, observed, k)."""
    t = len(c)
    means = [Fraction(ci, ni) for ci, ni in zip(c, n, strict=True)]
    s2 = [Fraction(ci * (ni - ci), ni * (ni - 1)) for ci, ni in zip(c, n, strict=True)]
    grand = sum(means) / t
    observed = sum((m - grand) ** 2 for m in means) / (t - 1)
    noise = sum(v / ni for v, ni in zip(s2, n, strict=True)) / t
    return max(Fraction(0), observed - noise), sum(s2) / t, observed, Fraction(sum(n), t)


@pytest.mark.parametrize(
    ("c", "n"),
    [
        ([4, 0, 2, 4, 1, 3], [4] * 6),
        ([7, 0, 16, 3, 9, 12, 5], [8, 2, 16, 4, 10, 12, 9]),
        ([1, 1, 1, 1], [2, 2, 2, 2]),  # every problem half right: between floors at 0
    ],
)
def test_variance_components_match_exact_arithmetic(c, n):
    vc = variance_components(c, n)
    between, within, observed, k = exact_components(c, n)
    assert vc.status == "ok"
    assert vc.between == pytest.approx(float(between), rel=1e-13, abs=1e-15)
    assert vc.within == pytest.approx(float(within), rel=1e-13)
    assert vc.observed == pytest.approx(float(observed), rel=1e-13)
    assert vc.n_rollouts == float(k)
    assert vc.n == len(c)


def test_variance_components_scalar_n_equals_array_n():
    c = [3, 8, 0, 5, 6]
    assert variance_components(c, 8) == variance_components(c, [8] * 5)


def test_variance_components_accepts_integral_floats():
    assert variance_components([3.0, 1.0, 2.0], 4.0) == variance_components([3, 1, 2], 4)


def simulate(seed, t=2000, k=8):
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 3, t)  # Var(x) = 0.04, E[x(1-x)] = 0.2
    return x, rng.binomial(k, x)


def test_variance_components_recover_simulated_truth():
    x, c = simulate(0)
    vc = variance_components(c, 8)
    # Compared with the realised truth of these 2000 problems; the estimator's sd is
    # about 0.0015 here, while ignoring the within-problem noise would be off by 0.025.
    assert vc.between == pytest.approx(np.var(x, ddof=1), abs=0.0075)
    assert vc.within == pytest.approx(np.mean(x * (1 - x)), abs=0.0075)
    assert vc.observed - vc.between == pytest.approx(vc.within / 8, rel=1e-12)


def test_variance_components_are_unbiased_across_simulations():
    errors_between, errors_within = [], []
    for seed in range(40):
        x, c = simulate(seed)
        vc = variance_components(c, 8)
        errors_between.append(vc.between - np.var(x, ddof=1))
        errors_within.append(vc.within - np.mean(x * (1 - x)))
    # Mean of 40 errors with sd ~0.0016 each: 5 standard errors is 0.00126; the
    # biased plug-in p(1-p) (off by 0.025) or no noise correction would fail.
    assert abs(np.mean(errors_between)) < 0.00126
    assert abs(np.mean(errors_within)) < 0.00126


@pytest.mark.parametrize(
    ("c", "n", "reason"),
    [
        ([], 4, "fewer than 2 problems (0): no variance across problems"),
        ([3], 4, "fewer than 2 problems (1): no variance across problems"),
        (
            [1, 0, 1],
            [4, 1, 4],
            "problem at index 1 has 1 rollout(s); the within-problem variance needs at least 2 per problem",
        ),
    ],
)
def test_variance_components_unavailable(c, n, reason):
    vc = variance_components(c, n)
    assert vc.status == "unavailable"
    assert vc.reason == reason
    assert (vc.between, vc.within, vc.observed) == (None, None, None)


# --------------------------------------------------- paired variance components


def test_paired_variance_components_match_exact_arithmetic():
    c_baseline, n_baseline = [7, 0, 16, 3, 9, 12, 5], [8, 2, 16, 4, 10, 12, 9]
    c_candidate, n_candidate = [5, 1, 14, 4, 2, 11, 9], [8, 4, 16, 4, 8, 12, 9]
    pvc = paired_variance_components(c_baseline, n_baseline, c_candidate, n_candidate)
    t = len(c_baseline)
    diff = [
        Fraction(ca, na) - Fraction(cb, nb)
        for ca, na, cb, nb in zip(c_baseline, n_baseline, c_candidate, n_candidate, strict=True)
    ]
    grand = sum(diff) / t
    observed = sum((x - grand) ** 2 for x in diff) / (t - 1)

    def within(c, n):
        s2 = [Fraction(ci * (ni - ci), ni * (ni - 1)) for ci, ni in zip(c, n, strict=True)]
        return sum(s2) / t, sum(v / ni for v, ni in zip(s2, n, strict=True)) / t

    (s2a, noise_a), (s2b, noise_b) = (
        within(c_baseline, n_baseline),
        within(c_candidate, n_candidate),
    )
    assert pvc.omega2 == pytest.approx(float(max(0, observed - noise_a - noise_b)), rel=1e-13)
    assert pvc.sigma2_baseline == pytest.approx(float(s2a), rel=1e-13)
    assert pvc.sigma2_candidate == pytest.approx(float(s2b), rel=1e-13)
    assert (pvc.n_rollouts_baseline, pvc.n_rollouts_candidate, pvc.n) == (
        sum(n_baseline) / t,
        sum(n_candidate) / t,
        t,
    )


def test_paired_variance_components_recover_simulated_truth():
    rng = np.random.default_rng(5)
    t = 2000
    x_a = rng.beta(2, 3, t)
    x_b = np.clip(x_a + rng.normal(-0.02, 0.1, t), 0, 1)
    c_baseline, c_candidate = rng.binomial(8, x_a), rng.binomial(16, x_b)
    pvc = paired_variance_components(c_baseline, 8, c_candidate, 16)
    assert pvc.omega2 == pytest.approx(np.var(x_a - x_b, ddof=1), abs=0.0075)
    assert pvc.sigma2_baseline == pytest.approx(np.mean(x_a * (1 - x_a)), abs=0.0075)
    assert pvc.sigma2_candidate == pytest.approx(np.mean(x_b * (1 - x_b)), abs=0.0075)
    assert (pvc.n_rollouts_baseline, pvc.n_rollouts_candidate) == (8.0, 16.0)


def test_paired_components_feed_the_power_planner():
    pvc = paired_variance_components([8, 2, 5, 7, 0, 6], 8, [7, 1, 5, 8, 1, 4], 8)
    kwargs = pvc.power_kwargs()
    assert set(kwargs) == {
        "omega2",
        "sigma2_baseline",
        "n_rollouts_baseline",
        "sigma2_candidate",
        "n_rollouts_candidate",
    }
    assert required_problems(0.05, **kwargs) >= 1


def test_unavailable_paired_components_refuse_to_plan():
    pvc = paired_variance_components([1, 2], 4, [1, 0], 1)
    assert pvc.status == "unavailable"
    message = (
        "variance components are unavailable: problem at index 0 has 1 rollout(s); "
        "the within-problem variance needs at least 2 per problem"
    )
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        pvc.power_kwargs()


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: clt_se([[1.0]]), "`scores` must be 1-D (one score per problem); got shape (1, 1)"),
        (
            lambda: clt_se([0.5, float("nan")]),
            "`scores` must be finite; got nan at index 1 (drop or resolve unavailable problems before calling)",
        ),
        (
            lambda: paired_se([0.5, 1.0], [0.5]),
            "`candidate` and `baseline` must have the same length (one paired score per problem, same problem order); got 2 and 1",
        ),
        (
            lambda: clustered_se([0.5, 1.0], [0]),
            "`clusters` must be 1-D with one label per score; got shape (1,) for 2 scores",
        ),
        (
            lambda: clustered_se([0.5, 1.0], [0.0, float("nan")]),
            "`clusters` must not contain NaN labels",
        ),
        (
            lambda: variance_components([5, 1], 4),
            "`c` must not exceed `n`; got 5 > 4 at index 0",
        ),
        (
            lambda: variance_components([-1, 1], 4),
            "`c` must be whole numbers >= 0; got -1 at index 0",
        ),
        (
            lambda: variance_components([1.5, 1], 4),
            "`c` must be whole numbers >= 0; got 1.5 at index 0",
        ),
        (lambda: variance_components([1, 1], 0), "`n` must be whole numbers >= 1; got 0"),
        (
            lambda: variance_components([1, 1], [4, 4, 4]),
            "`n` must be a scalar or have one entry per problem; got 3 entries for 2 problems",
        ),
        (
            lambda: variance_components(3, 4),
            "`c` must be 1-D (correct rollouts per problem); got a scalar",
        ),
        (
            lambda: variance_components([[1, 2]], 4),
            "`c` must be a scalar or 1-D (one per problem); got shape (1, 2)",
        ),
        (
            lambda: variance_components(["1", "2"], 4),
            "`c` must be whole numbers >= 0; got dtype <U1",
        ),
        (
            lambda: paired_variance_components([1, 2], 4, [1, 2, 3], 4),
            "`c_baseline` and `c_candidate` must have one entry per problem of the same aligned problem list; got 2 and 3",
        ),
        (
            lambda: paired_variance_components([1, 2], 4, [1, 5], 4),
            "`c_candidate` must not exceed `n_candidate`; got 5 > 4 at index 1",
        ),
    ],
    ids=[
        "clt-2d",
        "clt-nan",
        "paired-length",
        "clusters-length",
        "clusters-nan",
        "c-over-n",
        "c-negative",
        "c-fractional",
        "n-zero",
        "n-length",
        "c-scalar",
        "c-2d",
        "c-strings",
        "paired-components-length",
        "paired-components-c-over-n",
    ],
)
def test_se_validation_messages(call, message):
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        call()
