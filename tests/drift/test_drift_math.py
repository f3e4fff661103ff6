"""The per-token drift mathematics on small hand-made distributions: exact closed forms,
scipy's ``rel_entr`` / ``entropy``, and the lower-bound property of the merged tail."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import rel_entr
from scipy.stats import entropy

from rolleval.drift import (
    TAIL_FLOOR,
    argmax_key,
    delta_nll,
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
