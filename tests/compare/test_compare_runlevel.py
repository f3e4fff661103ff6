"""paired_compare with a run-level variance: the interval, p-value, MDE and verdict widen."""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats as sps

from rolleval.compare import PairedInput, paired_compare
from rolleval.errors import UsageError


def _inputs(run_variance: float = 0.0) -> PairedInput:
    # 200 problems, 8 rollouts: the candidate loses one rollout on 60 of them (-0.0375)
    rng = np.random.default_rng(3)
    cb = rng.integers(0, 9, 200)
    cc = cb.copy()
    drop = np.flatnonzero(cb > 0)[:60]
    cc[drop] -= 1
    n = np.full(200, 8)
    return PairedInput(
        cb / 8,
        cc / 8,
        c_baseline=cb,
        n_baseline=n,
        c_candidate=cc,
        n_candidate=n,
        value_range=(0.0, 1.0),
        run_variance=run_variance,
    )


def test_zero_run_variance_is_the_problem_level_test() -> None:
    plain = paired_compare(_inputs(), n_resamples=2000)
    assert plain.run_variance == 0.0 and plain.inflation == 1.0
    assert plain.verdict == "regression"


def test_run_variance_widens_by_the_design_effect_and_can_remove_a_regression() -> None:
    plain = paired_compare(_inputs(), n_resamples=2000)
    v = 4e-4  # run-level SD 0.02 of the effect
    wide = paired_compare(_inputs(v), n_resamples=2000)
    assert plain.se is not None and wide.se is not None and plain.effect == wide.effect
    lam = math.sqrt(plain.se**2 + v) / plain.se
    assert wide.inflation == pytest.approx(lam, rel=1e-12)
    assert wide.se == pytest.approx(math.sqrt(plain.se**2 + v), rel=1e-12)
    assert wide.ci_low == pytest.approx(
        plain.effect + lam * (plain.ci_low - plain.effect), rel=1e-12
    )
    assert wide.ci_high == pytest.approx(
        plain.effect + lam * (plain.ci_high - plain.effect), rel=1e-12
    )
    # the effect's score on the total SE (the sign-flip p-value is at its randomized floor
    # 1/2001 here: its normal score divided by lam gave 0.49)
    expected_p = 2 * sps.norm.sf(abs(plain.effect) / math.sqrt(plain.se**2 + v))
    assert wide.pvalue == pytest.approx(max(expected_p, plain.pvalue), rel=1e-9)
    assert wide.run_level_df is None
    # the effect is -0.0375 with a problem-level SE of about 0.004: the widened interval
    # (SE about 0.02) reaches 0, so the same data no longer support a regression
    assert wide.verdict == "inconclusive" and not wide.significant
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    assert wide.mde == pytest.approx(math.sqrt(plain.mde**2 + z * z * v), rel=1e-12)
    assert "run-level variance" in wide.method
    # z^2 v = 0.0031 > tau^2 = 0.0004: no number of problems or rollouts reaches the threshold
    assert wide.needed_problems is None and wide.needed_rollouts is None
    assert "run-level variance alone" in wide.power_note


def test_small_run_variance_raises_the_planned_problems() -> None:
    base = paired_compare(
        dataclasses.replace(
            _inputs(), candidate=_inputs().baseline, c_candidate=_inputs().c_baseline
        ),
        n_resamples=2000,
    )
    v = 2e-5
    wide = paired_compare(
        dataclasses.replace(
            _inputs(v), candidate=_inputs().baseline, c_candidate=_inputs().c_baseline
        ),
        n_resamples=2000,
    )
    assert base.needed_problems is not None and wide.needed_problems is not None
    assert wide.needed_problems > base.needed_problems


@pytest.mark.parametrize("bad", [-1e-4, math.inf, math.nan, "0.1", True])
def test_bad_run_variance_is_a_usage_error(bad: object) -> None:
    with pytest.raises(UsageError, match="run_variance"):
        paired_compare(_inputs(bad), n_resamples=200)  # type: ignore[arg-type]


def test_run_variance_se_refers_to_student_t_with_satterthwaite_df() -> None:
    plain = paired_compare(_inputs(), n_resamples=2000)
    v, v_se = 4e-4, 3e-4
    wide = paired_compare(dataclasses.replace(_inputs(v), run_variance_se=v_se), n_resamples=2000)
    assert plain.se is not None and plain.ci_low is not None and wide.ci_low is not None
    total2 = plain.se**2 + v
    df = total2**2 / (plain.se**4 / 199 + v_se**2 / 2)  # 200 problems
    assert wide.run_level_df == pytest.approx(df, rel=1e-12)
    stretch = math.sqrt(total2) / plain.se * sps.t.isf(0.025, df) / sps.norm.isf(0.025)
    assert wide.ci_low == pytest.approx(plain.effect + stretch * (plain.ci_low - plain.effect))
    assert wide.pvalue == pytest.approx(2 * sps.t.sf(abs(plain.effect) / math.sqrt(total2), df))
    assert not wide.pvalue_exact and "Satterthwaite" in wide.method
    with pytest.raises(UsageError, match="run_variance_se"):
        paired_compare(dataclasses.replace(_inputs(v), run_variance_se=-1.0), n_resamples=200)
