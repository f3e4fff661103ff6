"""rolleval.compare.paired_compare: verdict table, agreement with rolleval.stats, power, validation."""

from __future__ import annotations

import dataclasses
import json
import math
import typing

import numpy as np
import pytest

from rolleval.compare import (
    COMPARISON_VERDICTS,
    Comparison,
    ComparisonVerdict,
    PairedInput,
    paired_compare,
    verdict_label,
)
from rolleval.errors import UsageError
from rolleval.stats import (
    grouped_bootstrap_ci,
    min_attainable_pvalue,
    minimum_detectable_effect,
    paired_se,
    paired_variance_components,
    required_problems,
    required_rollouts,
    sign_flip_test,
)

Z80 = 1.959963984540054 + 0.8416212335729143  # z_{0.025} + z_{0.2}


def shifted(t: int, changes: list[tuple[int, float]], level: float = 0.5) -> PairedInput:
    """``t`` problems at ``level`` on both sides; the first problems move by the given amounts."""
    baseline = np.full(t, level)
    candidate = baseline.copy()
    start = 0
    for count, change in changes:
        candidate[start : start + count] += change
        start += count
    return PairedInput(baseline, candidate)


def binomial_input(seed: int, t: int = 200, k: int = 8, independent: bool = False) -> PairedInput:
    """A/A draw: p_i ~ Beta(2, 2), both sides Binomial(k, p_i) (or independent rates)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, t)
    q = rng.beta(2, 2, t) if independent else p
    cb, cc = rng.binomial(k, p), rng.binomial(k, q)
    n = np.full(t, k)
    return PairedInput(cb / k, cc / k, c_baseline=cb, n_baseline=n, c_candidate=cc, n_candidate=n)


# ------------------------------------------------------------- one test per verdict row


def test_row_insufficient_one_problem():
    res = paired_compare(shifted(1, [(1, -0.5)]))
    assert res.verdict == "insufficient_evidence" and res.exit_code == 3
    assert res.n_problems == 1 and res.effect == -0.5
    assert res.ci_low is None and res.ci_high is None and res.se is None and res.mde is None
    assert res.significant is False and "at least 2" in res.reason


def test_row_insufficient_four_problems_cannot_reach_alpha():
    # 2/2**4 = 0.125 > 0.05: even four large drops in a row are no evidence
    assert min_attainable_pvalue(4) == 0.125
    res = paired_compare(shifted(4, [(4, -0.5)]))
    assert res.verdict == "insufficient_evidence" and res.exit_code == 3
    assert res.pvalue == 0.125 and res.pvalue_exact
    assert "0.125 > alpha = 0.05" in res.reason
    # planning still says how many problems would decide it (at least the 6 the test needs)
    assert res.needed_problems is not None and res.needed_problems >= 6


def test_row_insufficient_no_matched_problem():
    inp = PairedInput(np.array([np.nan, 0.5, np.nan]), np.array([0.5, np.nan, np.nan]))
    res = paired_compare(inp)
    assert res.verdict == "insufficient_evidence" and res.exit_code == 3
    assert res.n_problems == 0 and res.n_dropped == 3
    assert res.effect is None and res.pvalue is None and res.pvalue_exact is False


def test_attainable_exactly_at_alpha_is_not_insufficient():
    # T = 5: the smallest two-sided p is 2/32 = 0.0625; with alpha = 0.0625 it is attainable
    assert min_attainable_pvalue(5) == 0.0625
    res = paired_compare(shifted(5, [(5, -0.5)]), alpha=0.0625)
    assert res.pvalue == 0.0625
    assert res.verdict == "regression" and res.exit_code == 1
    # ... and just below it, it is not
    res = paired_compare(shifted(5, [(5, -0.5)]), alpha=0.0624)
    assert res.verdict == "insufficient_evidence"


def test_six_problems_reach_the_default_alpha():
    res = paired_compare(shifted(6, [(6, -0.5)]))
    assert res.pvalue == 2 / 64
    assert res.verdict == "regression"


def test_insufficient_when_n_resamples_cannot_resolve_alpha():
    res = paired_compare(shifted(100, [(50, -0.5)]), n_resamples=10)
    assert res.verdict == "insufficient_evidence"
    assert "n_resamples=10" in res.reason
    assert res.needed_problems is None and "raise n_resamples" in res.power_note


def test_row_regression():
    res = paired_compare(shifted(200, [(100, -0.125)]))
    assert res.effect == -0.0625
    assert res.significant and res.ci_high < 0 and res.pvalue <= 0.05
    assert res.verdict == "regression" and res.exit_code == 1
    assert res.needed_problems is None and res.needed_rollouts is None  # decided


def test_row_improvement():
    res = paired_compare(shifted(200, [(100, +0.125)]))
    assert res.effect == 0.0625 and res.significant
    assert res.verdict == "improvement" and res.exit_code == 0


def test_row_significant_but_interval_reaches_a_threshold_drop():
    res = paired_compare(shifted(200, [(14, -0.25)]))
    assert res.significant
    assert -0.02 < res.effect < 0 and res.ci_low <= -0.02
    assert res.verdict == "inconclusive" and res.exit_code == 3
    assert "reaches a drop of the threshold" in res.reason
    assert res.needed_problems is not None


def test_row_significant_below_threshold():
    res = paired_compare(shifted(2000, [(80, -0.25)]))
    assert res.significant and res.effect == -0.01
    assert res.ci_low > -0.02 and res.ci_high < 0
    assert res.verdict == "significant_below_threshold" and res.exit_code == 0
    assert res.label == "significant below threshold"


def test_row_significant_gain_below_threshold_is_not_inconclusive():
    # a significant gain smaller than tau, even with the interval above +tau, is fine
    res = paired_compare(shifted(200, [(14, +0.25)]))
    assert res.significant and 0 < res.effect < 0.02 <= res.ci_high
    assert res.verdict == "significant_below_threshold"


def test_row_equivalent_within_threshold():
    res = paired_compare(shifted(2000, [(40, -0.25), (40, +0.25)]))
    assert not res.significant
    assert res.ci_low > -0.02 and res.ci_high < 0.02
    assert res.verdict == "equivalent_within_threshold" and res.exit_code == 0


def test_row_not_significant_wide_interval_is_inconclusive():
    res = paired_compare(shifted(20, [(3, -0.25), (2, +0.25)]))
    assert not res.significant and res.ci_low < -0.02
    assert res.verdict == "inconclusive" and res.exit_code == 3
    assert res.needed_problems is not None and res.needed_problems > 20


def test_interval_excluding_zero_without_the_test_is_not_significant():
    # five drops of 0.5 among six problems: the bootstrap interval excludes 0, but the exact
    # sign-flip p-value is 2 * 2/64 = 0.0625 > 0.05
    res = paired_compare(shifted(6, [(5, -0.5)]))
    assert res.ci_excludes_zero and res.ci_high < 0
    assert res.pvalue == 0.0625
    assert not res.significant
    assert res.verdict == "inconclusive"
    # issue 25 item 11: the line says why an interval excluding 0 is not a significant change
    assert (
        "the interval excludes 0 but the sign-flip test does not reach alpha (p = 0.0625 > 0.05); "
        "both must agree" in res.reason
    )


def test_equivalent_with_an_interval_excluding_zero_says_the_test_did_not_agree():
    from rolleval.compare._paired import _explain

    line = _explain(
        "equivalent_within_threshold", False, True, -0.0028, -0.0051, -0.0006, 0.0642, 0.02, None
    )
    assert line == (
        "no significant change (the interval excludes 0 but the sign-flip test does not reach "
        "alpha (p = 0.0642 > 0.05); both must agree); CI [-0.0051, -0.0006] lies inside (-0.02, +0.02)"
    )


def test_threshold_zero_never_declares_equivalence():
    inp = shifted(2000, [(40, -0.25), (40, +0.25)])
    res = paired_compare(inp, threshold=0.0)
    assert res.verdict == "inconclusive"
    assert res.needed_problems is None and "threshold 0" in res.power_note
    assert paired_compare(shifted(200, [(100, -0.125)]), threshold=0.0).verdict == "regression"


def test_effect_exactly_at_minus_threshold_counts_as_regression_despite_float_noise():
    baseline = np.full(100, 0.3)
    candidate = baseline.copy()
    candidate[:10] = 0.1  # 0.1 - 0.3 = -0.19999999999999998 in floats
    res = paired_compare(PairedInput(baseline, candidate))
    assert res.effect != -0.02 and math.isclose(res.effect, -0.02)
    assert res.effect > -0.02  # float noise on the "not worse" side ...
    assert res.significant
    assert res.verdict == "regression"  # ... still counted as a drop of the threshold


def test_direction_minus_one_flips_regression_into_improvement():
    inp = shifted(200, [(100, -0.125)])
    down = paired_compare(inp)
    up = paired_compare(dataclasses.replace(inp, direction=-1))
    assert down.verdict == "regression" and up.verdict == "improvement"
    assert up.effect == -down.effect and up.direction == -1
    assert up.pvalue == down.pvalue and up.se == down.se
    # a lower-is-better metric that went up is a regression
    rate_up = shifted(200, [(100, +0.125)])
    assert paired_compare(dataclasses.replace(rate_up, direction=-1)).verdict == "regression"


# ---------------------------------------------------- agreement with direct computation


@pytest.mark.parametrize("direction", [1, -1])
@pytest.mark.parametrize("t", [9, 200])
def test_effect_interval_pvalue_and_se_match_the_stats_functions(direction, t):
    rng = np.random.default_rng(t)
    baseline = rng.integers(0, 9, t) / 8
    candidate = rng.integers(0, 9, t) / 8
    inp = PairedInput(baseline, candidate, direction=direction)
    res = paired_compare(inp, n_resamples=3000, rng=11)
    d = direction * (candidate - baseline)
    assert res.effect == pytest.approx(np.mean(d), abs=1e-15)
    boot = grouped_bootstrap_ci(d, n_resamples=3000, confidence_level=0.95, rng=11)
    assert (res.ci_low, res.ci_high) == (boot.low, boot.high)
    test = sign_flip_test(direction * candidate, direction * baseline, n_resamples=3000, rng=11)
    assert res.pvalue == test.pvalue and res.pvalue_exact == test.exact == (t == 9)
    assert res.se == paired_se(candidate, baseline)
    assert res.seed == 11 and res.n_resamples == 3000 and res.confidence_level == 0.95


def test_confidence_level_defaults_to_one_minus_alpha_and_can_be_set():
    inp = shifted(200, [(14, -0.25)])
    assert paired_compare(inp, alpha=0.1).confidence_level == pytest.approx(0.9)
    res = paired_compare(inp, confidence_level=0.99)
    d = inp.candidate - inp.baseline
    boot = grouped_bootstrap_ci(d, n_resamples=10_000, confidence_level=0.99, rng=0)
    assert (res.ci_low, res.ci_high, res.confidence_level) == (boot.low, boot.high, 0.99)


def test_nan_problems_are_dropped_and_counted():
    full = shifted(200, [(100, -0.125)])
    baseline = np.append(full.baseline, [np.nan, 0.5, np.nan])
    candidate = np.append(full.candidate, [0.5, np.nan, np.nan])
    res = paired_compare(PairedInput(baseline, candidate))
    ref = paired_compare(full)
    assert res.n_dropped == 3 and res.n_problems == 200
    assert (res.effect, res.ci_low, res.ci_high, res.pvalue) == (
        ref.effect,
        ref.ci_low,
        ref.ci_high,
        ref.pvalue,
    )


def test_generator_rng_is_used_and_seed_not_recorded():
    inp = shifted(200, [(14, -0.25)])
    a = paired_compare(inp, rng=np.random.default_rng(5))
    b = paired_compare(inp, rng=np.random.default_rng(5))
    assert a.seed is None and (a.ci_low, a.pvalue) == (b.ci_low, b.pvalue)


def test_to_dict_is_json_ready_and_complete():
    res = paired_compare(binomial_input(3))
    out = res.to_dict()
    assert json.loads(json.dumps(out)) == out
    assert out["verdict"] == res.verdict and out["label"] == verdict_label(res.verdict)
    assert set(out) - {"bound_note"} == {f.name for f in dataclasses.fields(Comparison)} | {"label"}
    assert out["effect"] == res.effect  # not rounded


def test_verdict_words_exit_codes_and_labels():
    assert set(typing.get_args(ComparisonVerdict)) == set(COMPARISON_VERDICTS)
    assert dict(COMPARISON_VERDICTS) == {
        "insufficient_evidence": 3,
        "regression": 1,
        "improvement": 0,
        "inconclusive": 3,
        "significant_below_threshold": 0,
        "equivalent_within_threshold": 0,
    }
    assert verdict_label("equivalent_within_threshold") == "equivalent within threshold"


# ------------------------------------------------------------------------------ power


def test_mde_without_counts_is_z_times_paired_se_and_shrinks_with_t():
    mdes = []
    for reps in (10, 40, 160):
        res = paired_compare(shifted(4 * reps, [(reps, -0.25), (reps, 0.125)]))
        assert res.mde == pytest.approx(Z80 * res.se, rel=1e-12)
        assert "paired SE" in res.method
        mdes.append(res.mde)
    assert mdes[0] > mdes[1] > mdes[2]


def test_mde_with_counts_uses_variance_components_and_shrinks_with_t():
    mdes = []
    for t in (50, 200, 800):
        inp = binomial_input(7, t=t)
        res = paired_compare(inp, n_resamples=2000)
        pvc = paired_variance_components(
            inp.c_candidate, inp.n_candidate, inp.c_baseline, inp.n_baseline
        )
        assert res.mde == minimum_detectable_effect(t, **pvc.power_kwargs())
        assert "variance components" in res.method
        mdes.append(res.mde)
    assert mdes[0] > mdes[1] > mdes[2]


def test_needed_problems_and_rollouts_match_the_planners():
    inp = binomial_input(4)  # A/A, T = 200, K = 8: too few for a 0.02 band
    res = paired_compare(inp)
    assert res.verdict == "inconclusive"
    kw = paired_variance_components(
        inp.c_candidate, inp.n_candidate, inp.c_baseline, inp.n_baseline
    ).power_kwargs()
    assert res.needed_problems == required_problems(0.02, **kw) > 200
    assert res.needed_rollouts == required_rollouts(
        0.02,
        200,
        omega2=kw["omega2"],
        sigma2_baseline=kw["sigma2_baseline"],
        sigma2_candidate=kw["sigma2_candidate"],
    )
    assert res.needed_rollouts is not None and res.needed_rollouts > 8
    # at the needed number of problems the MDE is at most the threshold
    assert minimum_detectable_effect(res.needed_problems, **kw) <= 0.02 + 1e-12


def test_needed_rollouts_none_when_between_problem_variance_dominates():
    inp = binomial_input(2, independent=True)  # per-problem rates differ: omega2 large
    res = paired_compare(inp)
    assert res.verdict == "inconclusive"
    assert res.needed_rollouts is None and res.needed_problems is not None
    assert "between-problem variance" in res.power_note and "add problems" in res.power_note


def test_needed_problems_without_counts_matches_required_problems():
    res = paired_compare(shifted(20, [(3, -0.25), (2, +0.25)]))
    var_d = res.se**2 * 20
    expected = required_problems(
        0.02,
        omega2=var_d,
        sigma2_baseline=0,
        n_rollouts_baseline=1,
        sigma2_candidate=0,
        n_rollouts_candidate=1,
    )
    assert res.needed_problems == expected
    assert res.needed_rollouts is None and "counts" in res.power_note


def test_counts_with_single_rollouts_fall_back_to_paired_se():
    t = 200
    cb = np.tile([1, 0, 1, 1], 50)
    cc = np.tile([1, 0, 0, 1], 50)
    n = np.ones(t, dtype=int)
    inp = PairedInput(
        cb / 1.0, cc / 1.0, c_baseline=cb, n_baseline=n, c_candidate=cc, n_candidate=n
    )
    res = paired_compare(inp)
    assert "variance components unavailable" in res.power_note
    assert res.mde == pytest.approx(Z80 * res.se, rel=1e-12)


# -------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"threshold": -0.01}, "`threshold`"),
        ({"threshold": float("nan")}, "`threshold`"),
        ({"threshold": "0.02"}, "`threshold`"),
        ({"alpha": 0.0}, "`alpha`"),
        ({"alpha": 1.0}, "`alpha`"),
        ({"confidence_level": 1.5}, "`confidence_level`"),
        ({"n_resamples": 0}, "`n_resamples`"),
        ({"rng": -1}, "`rng`"),
        ({"power": 1.0}, "`power`"),
        ({"power": 0.01}, "`power`"),
    ],
)
def test_bad_parameters_are_named(kwargs, name):
    with pytest.raises(UsageError, match=name):
        paired_compare(shifted(10, [(5, -0.5)]), **kwargs)


@pytest.mark.parametrize(
    ("inp", "name"),
    [
        (PairedInput(np.zeros(3), np.zeros(4)), "`inp.baseline` and `inp.candidate`"),
        (PairedInput(np.zeros((2, 2)), np.zeros((2, 2))), "`inp.baseline`"),
        (PairedInput(np.array([0.0, np.inf]), np.zeros(2)), "`inp.baseline`"),
        (PairedInput(np.zeros(2), np.array(["a", "b"])), "`inp.candidate`"),
        (PairedInput(np.zeros(2), np.zeros(2), direction=0), "`inp.direction`"),
        (PairedInput(np.zeros(2), np.zeros(2), direction=2), "`inp.direction`"),
        (PairedInput(np.zeros(2), np.zeros(2), direction=True), "`inp.direction`"),
        (PairedInput(np.zeros(2), np.zeros(2), c_baseline=np.zeros(2)), "all together"),
    ],
)
def test_bad_inputs_are_named(inp, name):
    with pytest.raises(UsageError, match=name):
        paired_compare(inp)


def test_inp_must_be_a_paired_input():
    with pytest.raises(UsageError, match="`inp` must be a PairedInput"):
        paired_compare((np.zeros(3), np.zeros(3)))


def _with_counts(cb, nb, cc, nc, baseline=None, candidate=None) -> PairedInput:
    cb, nb, cc, nc = map(np.asarray, (cb, nb, cc, nc))
    with np.errstate(invalid="ignore", divide="ignore"):
        b = cb / nb if baseline is None else np.asarray(baseline, dtype=float)
        c = cc / nc if candidate is None else np.asarray(candidate, dtype=float)
    return PairedInput(b, c, c_baseline=cb, n_baseline=nb, c_candidate=cc, n_candidate=nc)


@pytest.mark.parametrize(
    ("inp", "message"),
    [
        (
            _with_counts([1, 2], [2, 2], [1, 2], [2, 2, 2], candidate=[0.5, 1.0]),
            "`inp.n_candidate`",
        ),
        (_with_counts([3, 2], [2, 2], [1, 2], [2, 2], baseline=[1.0, 1.0]), "must not exceed"),
        (_with_counts([1, 2], [2, 2], [1, 2], [2, 2], baseline=[0.4, 1.0]), "must equal"),
        (_with_counts([0, 2], [0, 2], [1, 2], [2, 2], baseline=[0.0, 1.0]), "must be NaN"),
        (_with_counts([1, -2], [2, 2], [1, 2], [2, 2], baseline=[0.5, 1.0]), "`inp.c_baseline`"),
        (
            _with_counts([1, 2], [2, 2], [1.5, 2], [2, 2], candidate=[0.75, 1.0]),
            "`inp.c_candidate`",
        ),
    ],
)
def test_bad_counts_are_named(inp, message):
    with pytest.raises(UsageError, match=message):
        paired_compare(inp)


def test_counts_with_zero_rollouts_mark_a_dropped_problem():
    inp = _with_counts([4, 0, 6] * 10, [8, 0, 8] * 10, [3, 5, 6] * 10, [8, 8, 8] * 10)
    assert np.isnan(inp.baseline[1])
    res = paired_compare(inp)
    assert res.n_dropped == 10 and res.n_problems == 20


# ------------------------------------------------- degenerate samples (issue 10, defect 1)

from scipy.stats import beta as _beta_dist  # noqa: E402

from rolleval.stats import cluster_bootstrap_ci, cluster_sign_flip_test, clustered_se  # noqa: E402


def test_all_equal_sample_gets_an_exact_bound_not_equivalence():
    base = np.tile([1.0, 0.0], 50)  # 100 greedy problems, identical on both sides
    res = paired_compare(PairedInput(base, base.copy(), value_range=(0.0, 1.0)))
    assert res.ci_low == res.ci_high == 0.0 and res.ci_status == "degenerate"
    share = 1 - 0.025 ** (1 / 100)  # Clopper-Pearson upper bound for 0 of 100 at 97.5%
    assert res.bound_low == pytest.approx(-share, rel=1e-12)
    assert res.bound_high == pytest.approx(share, rel=1e-12)
    assert res.verdict == "insufficient_evidence" and res.exit_code == 3
    assert res.needed_problems == 183  # smallest T with 1 - 0.025**(1/T) < 0.02
    assert 1 - 0.025 ** (1 / 183) < 0.02 <= 1 - 0.025 ** (1 / 182)


def test_all_equal_sample_large_enough_is_equivalent():
    base = np.tile([1.0, 0.0], 250)  # 500 problems, none moved: bound 0.0074 < 0.02
    res = paired_compare(PairedInput(base, base.copy(), value_range=(0.0, 1.0)))
    assert res.verdict == "equivalent_within_threshold" and res.exit_code == 0
    assert res.bound_low > -0.02 and res.bound_high < 0.02


def test_without_a_value_range_a_near_degenerate_sample_never_shows_equivalence():
    base = np.tile([1.0, 0.0], 250)
    res = paired_compare(PairedInput(base, base.copy()))
    assert res.verdict == "insufficient_evidence"
    assert math.isinf(res.bound_low) and res.to_dict()["bound_low"] is None


def test_few_movers_use_the_exact_bound_per_direction():
    base = np.full(300, 1.0)
    cand = base.copy()
    cand[:3] = 0.875  # three problems dropped 1/8, none rose
    res = paired_compare(PairedInput(base, cand, value_range=(0.0, 1.0)), n_resamples=2000)
    assert res.n_moved == 3
    assert res.bound_low == pytest.approx(-float(_beta_dist.ppf(0.975, 4, 297)), rel=1e-12)
    assert res.bound_high == pytest.approx(1 - 0.025 ** (1 / 300), rel=1e-12)
    assert res.ci_low > -0.02  # the bootstrap alone would have said "equivalent"
    assert res.verdict == "insufficient_evidence"


def test_enough_movers_leave_the_bootstrap_alone():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 9, 2000) / 8
    cand = np.clip(base + rng.choice([-0.125, 0, 0.125], 2000), 0, 1)
    res = paired_compare(PairedInput(base, cand, value_range=(0.0, 1.0)), n_resamples=2000)
    assert res.bound_low is None and res.bound_high is None and res.n_moved >= 10


def test_constant_small_drop_is_not_significant_below_threshold():
    # every problem dropped by exactly 0.01: significant, zero-width interval
    base = np.full(20, 0.5)
    res = paired_compare(PairedInput(base, base - 0.01, value_range=(0.0, 1.0)))
    assert res.significant and res.ci_status == "degenerate"
    assert res.verdict == "inconclusive" and res.exit_code == 3
    assert "no finite exact bound" in res.reason


def test_declared_clusters_use_the_cluster_procedures():
    rng = np.random.default_rng(5)
    labels = [f"subject{i % 12}" for i in range(240)]
    base = rng.integers(0, 9, 240) / 8
    cand = np.clip(base + rng.normal(0, 0.1, 240).round(3), 0, 1)
    res = paired_compare(PairedInput(base, cand, clusters=labels), n_resamples=3000, rng=7)
    assert res.unit == "cluster" and res.n_clusters == 12
    d = cand - base
    boot = cluster_bootstrap_ci(d, labels, n_resamples=3000, confidence_level=0.95, rng=7)
    test = cluster_sign_flip_test(cand, base, labels, n_resamples=3000, rng=7)
    assert (res.ci_low, res.ci_high) == (boot.low, boot.high)
    assert res.pvalue == test.pvalue and res.pvalue_exact == test.exact
    assert res.se == clustered_se(d, labels)
    # NaN problems are dropped before clusters are counted; singletons mean no clustering
    flat = paired_compare(PairedInput(base, cand, clusters=[None] * 240), n_resamples=3000)
    assert flat.unit == "problem" and flat.n_clusters is None


def test_too_few_clusters_is_insufficient_evidence():
    labels = [f"s{i % 4}" for i in range(200)]
    base = np.tile([1.0, 0.0, 0.5, 0.25], 50)
    res = paired_compare(PairedInput(base, base - 0.2, clusters=labels))
    assert res.verdict == "insufficient_evidence" and "4 clusters" in res.reason


def test_needed_problems_of_a_near_degenerate_sample():
    base = np.full(300, 1.0)
    cand = base.copy()
    cand[:3] = 0.875
    res = paired_compare(PairedInput(base, cand, value_range=(0.0, 1.0)), n_resamples=2000)
    # brute force: the first T whose bound at the same share (1% moved, as a real count)
    # fits in (-0.02, 0.02)
    n_fit = next(
        n for n in range(300, 5000) if float(_beta_dist.ppf(0.975, 0.01 * n + 1, 0.99 * n)) < 0.02
    )
    assert all(
        float(_beta_dist.ppf(0.975, 0.01 * n + 1, 0.99 * n)) < 0.02 for n in range(n_fit, 3000)
    )
    var_d = res.se**2 * 300
    from_variance = required_problems(
        0.02,
        omega2=var_d,
        sigma2_baseline=0,
        n_rollouts_baseline=1,
        sigma2_candidate=0,
        n_rollouts_candidate=1,
    )
    # at 1,000 problems 10 would have moved and the bootstrap takes over
    assert res.needed_problems == max(from_variance, min(n_fit, 1000))
