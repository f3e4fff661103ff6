"""rolleval plan with a run-level variance (issue 26): the effect's variance gains
v_baseline/runs + v_candidate/runs, and with replicate runs per side a Student t reference
with Satterthwaite df, checked against scipy.stats (t, nct, norm)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats as sps

from conftest import run_cli
from rolleval.compare import plan_runs
from rolleval.stats import regression_power
from rolleval.testing._synthetic import write_synthetic_run

TASK = "synthetic_math"


@pytest.fixture
def pilot(tmp_path: Path) -> str:
    return str(write_synthetic_run(tmp_path / "pilot", n_problems=80, n_rollouts=6, rng=3).path)


def test_regression_power_with_df_is_noncentral_t_and_normal_at_inf() -> None:
    delta, se, tau, alpha = 0.05, 0.015, 0.02, 0.05
    for df in (2.5, 7.0, 40.0):
        q = sps.t.ppf(1 - alpha / 2, df)
        want = min(sps.nct.sf(q, df, delta / se), sps.norm.cdf((delta - tau) / se))
        got = regression_power(delta, se=se, threshold=tau, alpha=alpha, df=df)
        assert got == pytest.approx(want, rel=1e-12)
    normal = sps.norm.cdf((delta - max(tau, sps.norm.ppf(1 - alpha / 2) * se)) / se)
    assert regression_power(delta, se=se, threshold=tau, alpha=alpha) == pytest.approx(normal)
    # a t reference never promises more than the normal one
    assert regression_power(delta, se=se, threshold=tau, df=3.0) < normal


def _hand_power(
    t: int, comp: dict[str, float], v: float, k: int, effect: float, tau: float
) -> float:
    """The contract's replicate design by hand: pooled problem part, run part 2 v / k,
    run_variance_se from the expected run-mean variance, Satterthwaite df, nct power."""
    sb, sc, kb, kc = (
        comp[x]
        for x in (
            "sigma2_baseline",
            "sigma2_candidate",
            "n_rollouts_baseline",
            "n_rollouts_candidate",
        )
    )
    se2 = (comp["omega2"] + sb / (k * kb) + sc / (k * kc)) / t
    rv = 2 * v / k
    s2b, s2c = v + sb / (kb * t), v + sc / (kc * t)
    rv_se2 = 2 * (s2b / k) ** 2 / (k - 1) + 2 * (s2c / k) ** 2 / (k - 1)
    total2 = se2 + rv
    df = total2**2 / (se2**2 / (t - 1) + rv_se2 / 2)
    se = math.sqrt(total2)
    q = sps.t.ppf(0.975, df)
    return float(min(sps.nct.sf(q, df, effect / se), sps.norm.cdf((effect - tau) / se)))


def test_replicate_design_size_is_the_smallest_t_size_by_scipy(pilot: str) -> None:
    v, k, effect, tau = 2e-4, 4, 0.05, 0.02
    res = plan_runs(pilot, effect=effect, threshold=tau, run_noise={TASK: v}, runs_per_side=k)
    plan = res.tasks[TASK]
    comp = plan.components
    size = plan.required_problems
    assert size is not None and size > 2
    assert (
        _hand_power(size, comp, v, k, effect, tau)
        >= 0.8
        > _hand_power(size - 1, comp, v, k, effect, tau)
    )
    assert plan.power_planned is not None
    assert plan.power_planned["power"] == pytest.approx(
        _hand_power(size, comp, v, k, effect, tau), rel=1e-9
    )
    rl = plan.run_level
    assert (
        rl is not None and rl["reference"] == "t" and rl["run_variance"] == pytest.approx(2 * v / k)
    )
    # the normal reference with the same variance plans fewer problems (it ignores the df)
    assert plan.required_problems_normal is not None and plan.required_problems_normal < size
    current = _hand_power(plan.problems, comp, v, k, effect, tau)
    assert plan.regression_power_current == pytest.approx(current, rel=1e-9)


def test_one_run_per_side_with_a_known_v_is_the_normal_closed_form(pilot: str) -> None:
    v, effect, tau = 1e-4, 0.05, 0.02
    plan = plan_runs(pilot, effect=effect, threshold=tau, run_noise={TASK: v}).tasks[TASK]
    comp = plan.components
    big_v = (
        comp["omega2"]
        + comp["sigma2_baseline"] / comp["n_rollouts_baseline"]
        + comp["sigma2_candidate"] / comp["n_rollouts_candidate"]
    )
    z_a, z_b = sps.norm.ppf(0.975), sps.norm.ppf(0.8)
    s_star = min(effect / (z_a + z_b), (effect - tau) / z_b)
    assert s_star**2 > 2 * v
    assert plan.required_problems == math.ceil(big_v / (s_star**2 - 2 * v))
    assert plan.run_level is not None and plan.run_level["reference"] == "normal"
    # without the run-level variance the same pilot needs fewer problems
    alone = plan_runs(pilot, effect=effect, threshold=tau).tasks[TASK]
    assert alone.required_problems_normal == math.ceil(big_v / s_star**2)
    assert alone.required_problems_normal < plan.required_problems


def test_a_run_variance_no_size_reaches_names_the_runs_per_side_that_would(pilot: str) -> None:
    # 2 v = 0.004 alone: SE 0.063 against a 0.04 drop; no number of problems is enough
    plan = plan_runs(pilot, run_noise={TASK: 0.002}).tasks[TASK]
    assert plan.required_problems is None
    assert plan.reason is not None and "whatever the number of problems" in plan.reason
    runs = int(plan.reason.split("at least ")[1].split(" ")[0])
    limit = [
        min(
            sps.nct.sf(sps.t.ppf(0.975, 2 * (k - 1)), 2 * (k - 1), 0.04 / math.sqrt(0.004 / k)),
            sps.norm.cdf(0.02 / math.sqrt(0.004 / k)),
        )
        for k in (runs - 1, runs)
    ]
    # at T -> inf, se -> sqrt(2 v / k) and df -> 2 (k - 1): the fewest runs reaching 0.8
    assert limit[1] >= 0.8 - 1e-6 and (runs - 1 < 2 or limit[0] < 0.8)


def test_cli_plan_with_a_run_noise_file(pilot: str, tmp_path: Path) -> None:
    noise = tmp_path / "noise.json"
    noise.write_text(
        json.dumps(
            {"format": "rolleval-run-noise", "version": 1, "tasks": {TASK: {"run_variance": 2e-4}}}
        )
    )
    r = run_cli(
        "plan",
        pilot,
        "--effect",
        "0.05",
        "--run-noise",
        str(noise),
        "--runs-per-side",
        "4",
        "--format",
        "json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)["tasks"][TASK]
    assert doc["run_level"]["v"] == 2e-4 and doc["run_level"]["runs_per_side"] == 4
    assert doc["run_level"]["df_at_required_problems"] > 0
    text = run_cli(
        "plan", pilot, "--effect", "0.05", "--run-noise", str(noise), "--runs-per-side", "4"
    )
    flat = " ".join(text.stdout.split())  # lines wrap at 100 columns
    assert "Satterthwaite df" in flat and "v_baseline/runs + v_candidate/runs" in flat
    bad = run_cli("plan", pilot, "--run-noise", str(tmp_path / "missing.json"))
    assert bad.returncode == 2 and "missing.json" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
