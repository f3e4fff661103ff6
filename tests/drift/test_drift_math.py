"""The per-token drift mathematics on small hand-made distributions: exact closed forms,
scipy's ``rel_entr`` / ``entropy``, and the lower-bound property of the merged tail."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import rel_entr
from scipy.stats import entropy

from rolleval.drift import (
    TAIL_FLOOR,
    argmax_key,
    delta_nll,
    kl_capped_tail,
    kl_divergence,
    kl_from_top,
    kl_merged_tail,
    top1_agreement,
)

LN2 = math.log(2.0)


def _log(*p: float) -> np.ndarray:
    return np.log(np.array(p, dtype=np.float64))


def test_exact_kl_of_a_closed_form():
    # P = (1/2, 1/4, 1/4), Q = (1/4, 1/4, 1/2):
    # KL = 1/2 ln 2 + 1/4 ln 1 + 1/4 ln(1/2) = ln 2 / 4
    p, q = _log(0.5, 0.25, 0.25), _log(0.25, 0.25, 0.5)
    assert kl_divergence(p, q) == pytest.approx(LN2 / 4, rel=1e-15)
    # reversed: 1/4 ln(1/2) + 0 + 1/2 ln 2 = ln 2 / 4 as well; KL(P||P) = 0
    assert kl_divergence(q, p) == pytest.approx(LN2 / 4, rel=1e-15)
    assert kl_divergence(p, p) == 0.0


def test_exact_kl_matches_scipy_on_random_rows():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(50, 0.3), size=8)
    q = rng.dirichlet(np.full(50, 0.3), size=8)
    got = kl_divergence(np.log(p), np.log(q))
    assert isinstance(got, np.ndarray) and got.shape == (8,)
    np.testing.assert_allclose(got, rel_entr(p, q).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got, entropy(p, q, axis=1), rtol=1e-12)


def test_a_zero_baseline_probability_contributes_nothing():
    # P = (1, 0), Q = (1/2, 1/2): KL = ln 2 (the 0 * log 0 term is 0, as in rel_entr)
    p = np.array([0.0, -np.inf])
    assert kl_divergence(p, _log(0.5, 0.5)) == pytest.approx(LN2)
    assert rel_entr([1.0, 0.0], [0.5, 0.5]).sum() == pytest.approx(LN2)


def test_shapes_must_agree():
    with pytest.raises(ValueError, match="shapes differ"):
        kl_divergence(_log(0.5, 0.5), _log(0.2, 0.3, 0.5))


def test_merged_tail_of_a_closed_form():
    # Known token a: P(a) = 1/2, Q(a) = 1/4; tails 1/2 and 3/4:
    # 1/2 ln 2 + 1/2 ln((1/2)/(3/4)) = 1/2 ln(4/3)
    got = kl_merged_tail(_log(0.5), _log(0.25))
    assert got == pytest.approx(0.5 * math.log(4 / 3), rel=1e-14)
    # the exact KL of P = (1/2, 1/4, 1/4), Q = (1/4, 1/4, 1/2) is larger: ln 2 / 4
    assert got < LN2 / 4
    # with every token known the tails vanish and the figure is exact
    p, q = _log(0.5, 0.25, 0.25), _log(0.25, 0.25, 0.5)
    assert kl_merged_tail(p, q) == pytest.approx(LN2 / 4, abs=1e-10)


def test_merged_tail_equals_scipy_on_the_coarsened_distributions():
    rng = np.random.default_rng(11)
    for _ in range(50):
        v = int(rng.integers(3, 40))
        p, q = rng.dirichlet(np.ones(v)), rng.dirichlet(np.ones(v))
        known = rng.choice(v, size=int(rng.integers(1, v)), replace=False)
        rest = np.setdiff1d(np.arange(v), known)
        p_c = np.append(p[known], p[rest].sum())
        q_c = np.append(q[known], q[rest].sum())
        got = kl_merged_tail(np.log(p[known]), np.log(q[known]))
        assert got == pytest.approx(entropy(p_c, q_c), rel=1e-9, abs=1e-12)
        # the log-sum inequality: coarsening never raises the KL divergence
        assert got <= entropy(p, q) + 1e-12


def test_merged_tail_floors_an_empty_tail():
    # the candidate lists all its mass on {a, b}; the baseline leaves 1/2 outside
    got = kl_merged_tail(_log(0.25, 0.25), _log(0.5, 0.5))
    expected = 0.5 * math.log(0.5) + 0.5 * math.log(0.5 / TAIL_FLOOR)
    assert got == pytest.approx(expected, rel=1e-6)


def test_capped_tail_of_closed_forms():
    # Known on both sides: a with 1/2 and 1/2. The baseline also lists b at 0.4; the
    # candidate does not list b, so Q(b) <= 0.1, its smallest listed probability. The
    # merged tail puts b with the rest (1/2 against 1/2: 0). Capped: Q(b) = 0.1 and the
    # candidate's other 0.4 on the rest, where the baseline has 0.1:
    # 0.4 ln(0.4/0.1) + 0.1 ln(0.1/0.4) = 0.3 ln 4
    assert kl_merged_tail(_log(0.5), _log(0.5)) == pytest.approx(0.0, abs=1e-15)
    got = kl_capped_tail(_log(0.5), _log(0.5), baseline_only=_log(0.4), candidate_floor=LN01)
    assert got == pytest.approx(0.3 * math.log(4), rel=1e-12)
    # the mirror image: the candidate lists c at 0.4, the baseline does not (P(c) <= 0.1)
    got = kl_capped_tail(_log(0.5), _log(0.5), candidate_only=_log(0.4), baseline_floor=LN01)
    assert got == pytest.approx(0.3 * math.log(4), rel=1e-12)
    # without a cap the minimum gives b the candidate mass 0.4 (proportional: 0.4 of the
    # baseline's 1/2 outside a, of the candidate's 1/2): a cap of 0.45 does not bind and
    # leaves the merged-tail value 0
    got = kl_capped_tail(
        _log(0.5), _log(0.5), baseline_only=_log(0.4), candidate_floor=math.log(0.45)
    )
    assert got == pytest.approx(0.0, abs=1e-12)
    # no one-sided tokens: the merged tail
    assert kl_capped_tail(_log(0.5), _log(0.25)) == kl_merged_tail(_log(0.5), _log(0.25))


LN01 = math.log(0.1)


def _top_lists(p, q, k):
    b, c = set(np.argsort(-p)[:k].tolist()), set(np.argsort(-q)[:k].tolist())
    shared = sorted(b & c)
    return shared, sorted(b - c), sorted(c - b), np.sort(p)[::-1][k - 1], np.sort(q)[::-1][k - 1]


def test_capped_tail_is_a_lower_bound_and_the_smallest_consistent_kl():
    rng = np.random.default_rng(7)
    for trial in range(120):
        v, k = 25, int(rng.integers(2, 8))
        p, q = rng.dirichlet(np.full(v, 0.3)), rng.dirichlet(np.full(v, 0.3))
        if trial % 3 == 0:
            q = 0.6 * p + 0.4 * q
        shared, a, c, p_floor, q_floor = _top_lists(p, q, k)
        got = kl_capped_tail(
            np.log(p[shared]),
            np.log(q[shared]),
            baseline_only=np.log(p[a]),
            candidate_floor=math.log(q_floor),
            candidate_only=np.log(q[c]),
            baseline_floor=math.log(p_floor),
        )
        merged = kl_merged_tail(np.log(p[shared]), np.log(q[shared]))
        assert merged - 1e-12 <= got <= entropy(p, q) + 1e-12
        if not a:
            continue
        # the minimum over every consistent completion, by a generic optimiser: the
        # candidate's unknown q_v (v only on the baseline's list) in [0, q_floor], the
        # candidate-only tokens merged with the rest
        head = float(np.sum(p[shared] * np.log(p[shared] / q[shared])))
        p_u = 1 - p[shared].sum() - p[a].sum()
        q_r = 1 - q[shared].sum()

        def f(x, pa=p[a], p_u=p_u, q_r=q_r):
            q_u = q_r - x.sum()
            if q_u <= 0:
                return 1e9
            return float(np.sum(pa * np.log(pa / x)) + (p_u * math.log(p_u / q_u)))

        start = np.full(len(a), min(q_floor, q_r / (len(a) + 1)) * 0.5)
        best = minimize(f, start, bounds=[(1e-15, q_floor)] * len(a), method="L-BFGS-B").fun
        assert got == pytest.approx(max(head + best, merged), abs=1e-6)


def test_kl_from_top_uses_the_tokens_both_sides_list():
    # ids 7 and 9 listed on both sides, 3 only on the baseline, 5 only on the candidate
    b = {7: math.log(0.5), 3: math.log(0.2), 9: math.log(0.1)}
    c = {9: math.log(0.3), 7: math.log(0.4), 5: math.log(0.2)}
    p_c = [0.5, 0.1, 0.4]
    q_c = [0.4, 0.3, 0.3]
    assert kl_from_top(b, c) == pytest.approx(entropy(p_c, q_c), rel=1e-12)
    assert kl_from_top(b, b) == pytest.approx(0.0, abs=1e-15)


def test_top1_agreement_and_argmax():
    b = {1: -0.1, 2: -3.0}
    assert argmax_key(b) == 1
    assert top1_agreement(b, {2: -2.0, 1: -0.5})
    assert not top1_agreement(b, {2: -0.2, 1: -2.5})
    assert argmax_key({"a": -1.0, "b": -1.0}) == "a"  # a tie goes to the first listed
    with pytest.raises(ValueError):
        argmax_key({})


def test_delta_nll_sign():
    # candidate gives the actual token 1/4, baseline 1/2: candidate NLL ln 4, baseline ln 2
    assert delta_nll(math.log(0.5), math.log(0.25)) == pytest.approx(LN2)
    assert delta_nll(math.log(0.25), math.log(0.5)) == pytest.approx(-LN2)
