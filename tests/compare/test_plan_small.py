"""The plan at small sizes (issue 19): the regression verdict's power simulated with compare's
own rule, where the normal approximation is optimistic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from conftest import run_cli, synthetic_pair
from rolleval.compare import plan_runs
from rolleval.compare._simulated_power import (
    SMALL_T,
    TruthModel,
    regression_power_by_simulation,
    small_sample_problems,
    truth_model,
)
from rolleval.errors import UsageError


def _one_kind(baseline: float, candidate: float, k: int) -> TruthModel:
    return TruthModel(
        baseline=np.array([baseline]),
        candidate=np.array([candidate]),
        n_rollouts_baseline=np.array([k]),
        n_rollouts_candidate=np.array([k]),
        drop=baseline - candidate,
    )


@pytest.mark.parametrize("p_fail", [0.5, 0.7, 0.85])
def test_simulated_power_matches_the_exact_power_of_the_rule(p_fail):
    # T = 8 problems, one rollout each, the baseline always right, the candidate wrong with
    # probability p_fail: d_i is -1 (m problems) or 0. The exact sign-flip test (2**8 <= B)
    # has p = 2 / 2**m, at most 0.05 iff m >= 6; the bootstrap interval then excludes 0 and
    # the effect -m/8 is beyond the threshold, so the verdict is regression iff m >= 6:
    # power = P(Binomial(8, p_fail) >= 6), exactly.
    exact = float(stats.binom.sf(5, 8, p_fail))
    sims = 2000
    got = regression_power_by_simulation(
        _one_kind(1.0, 1.0 - p_fail, 1), 8, threshold=0.02, alpha=0.05, n_sims=sims, rng=4
    )
    se = math.sqrt(exact * (1 - exact) / sims)
    # 4 SE: a false failure has chance about 6e-5
    assert abs(got.power - exact) <= 4 * se, (got, exact)
    assert got.se == pytest.approx(math.sqrt(got.power * (1 - got.power) / sims))
    assert got.problems == 8 and got.sims == sims


def test_truth_model_drop_is_exact_after_clipping():
    c = np.array([0, 1, 4, 8, 8, 6, 2, 3])
    n = np.full(8, 8)
    one = truth_model(c, n, 0.2)
    assert np.mean(one.baseline - one.candidate) == pytest.approx(0.2, abs=1e-12)
    assert np.all((one.candidate >= 0) & (one.candidate <= 1))
    # shrunk to the between-problem variance: var(c/n) less the mean sampling variance
    p = c / n
    between = p.var(ddof=1) - np.mean(p * (1 - p) / 7)
    assert one.baseline.var(ddof=1) == pytest.approx(between, rel=1e-9)
    pair = truth_model(c, n, 0.1, np.array([0, 1, 3, 7, 8, 5, 2, 2]), n)
    assert np.mean(pair.baseline - pair.candidate) == pytest.approx(0.1, abs=1e-12)
    with pytest.raises(UsageError, match="impossible"):
        truth_model(np.array([1, 0, 1]), np.full(3, 8), 0.5)


def test_small_sample_search_returns_the_smallest_passing_size():
    truth = _one_kind(1.0, 0.3, 1)  # d = -1 with probability 0.7, else 0
    kw = {"threshold": 0.02, "alpha": 0.05, "n_sims": 400, "rng": 2}
    found = small_sample_problems(truth, 6, power=0.8, **kw)
    assert found.problems > 6 and found.power >= 0.8
    below = regression_power_by_simulation(truth, found.problems - 1, **kw)
    assert below.power < 0.8
    # a start that already reaches the power is kept
    assert small_sample_problems(truth, 40, power=0.8, **kw).problems == 40


def test_plan_grows_a_small_normal_size_to_the_simulated_rule(tmp_path):
    # a large drop needs few problems: the normal size is optimistic there (it failed before:
    # the plan gave the normal size and no simulated power)
    b, c = synthetic_pair(tmp_path, shift=-0.15, n_problems=200)
    res = plan_runs(b, c, effect=0.15, n_sims=300, n_resamples=2000)
    e = res.to_dict()["tasks"]["synthetic_math"]
    assert e["required_problems_normal"] <= SMALL_T
    assert e["required_problems"] > e["required_problems_normal"]
    pp = e["power_planned"]
    assert pp["sims"] == 300 and pp["power"] >= 0.8 and "simulation" in pp["method"]
    # a large size stays the normal one, with the normal power
    big = plan_runs(b, c, effect=0.03).to_dict()["tasks"]["synthetic_math"]
    assert big["required_problems"] == big["required_problems_normal"] > SMALL_T
    assert big["power_planned"]["method"] == "normal approximation"
    assert big["power_planned"]["power"] >= 0.8


def test_plan_cli_prints_the_simulated_power(tmp_path):
    b, c = synthetic_pair(tmp_path, shift=-0.15, n_problems=200)
    proc = run_cli(
        "plan", str(b), "--candidate", str(c), "--effect", "0.15", "--sims", "200",
        "--n-resamples", "2000",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "simulations of compare's rule" in " ".join(proc.stdout.split())
