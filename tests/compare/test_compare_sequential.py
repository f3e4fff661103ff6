"""The sequential decision rule (rolleval.compare._sequential): table, settledness, and the
O(T) form against the interval form at every look."""

from __future__ import annotations

import numpy as np
import pytest

from rolleval.compare._sequential import (
    first_decision,
    sequential_overall,
    sequential_verdict,
    task_alpha,
)
from rolleval.stats import betting_cs

TAU = 0.02


@pytest.mark.parametrize(
    "lower, upper, effect, spent, verdict",
    [
        (-0.30, -0.001, -0.05, False, "regression"),
        (-0.30, 0.0, -0.02, True, "regression"),
        (-0.30, -0.001, -0.019, False, None),
        (-0.30, -0.001, -0.019, True, "inconclusive"),
        (-0.02, -0.001, -0.03, False, "significant_below_threshold"),
        (-0.019, -0.001, -0.01, False, "significant_below_threshold"),
        (0.0, 0.30, 0.05, False, "improvement"),
        (0.001, 0.30, 0.019, False, "significant_below_threshold"),
        (-0.019, 0.019, 0.0, False, "equivalent_within_threshold"),
        (-0.02, 0.02, 0.0, False, "equivalent_within_threshold"),
        (-0.05, 0.01, -0.03, False, None),
        (-0.05, 0.01, -0.03, True, "inconclusive"),
        (-0.01, 0.05, 0.0, False, None),
    ],
)
def test_verdict_table(lower, upper, effect, spent, verdict):
    decision = sequential_verdict(lower, upper, effect=effect, threshold=TAU, spent=spent)
    assert decision.verdict == verdict
    assert decision.settled == (verdict is not None)


def test_a_pass_holds_for_every_narrower_interval():
    """At a given effect, every interval nested in one that passes (exit 0) passes too (the
    running intersection only shrinks, so a pass is final); a regression's narrower
    intervals still exclude 0 (the regression verdict is a stopping decision: like the fixed
    design's, it also reads the estimate)."""
    grid = np.round(np.linspace(-0.1, 0.1, 21), 6)
    for effect in (-0.05, -0.02, -0.01, 0.0, 0.01, 0.03):
        for lo in grid:
            for hi in grid[grid > lo]:
                outer = sequential_verdict(lo, hi, effect=effect, threshold=TAU, spent=False)
                if not outer.settled:
                    continue
                for lo2 in grid[(grid >= lo) & (grid < hi)]:
                    for hi2 in grid[(grid > lo2) & (grid <= hi)]:
                        inner = sequential_verdict(
                            lo2, hi2, effect=effect, threshold=TAU, spent=False
                        )
                        assert inner.settled
                        if outer.exit_code == 0:
                            assert inner.exit_code == 0, (effect, lo, hi, lo2, hi2)
                        else:
                            assert hi2 <= 0


def test_a_pass_needs_the_sequence_to_exclude_a_drop_of_tau_and_a_regression_to_exclude_0():
    grid = np.round(np.linspace(-0.1, 0.1, 41), 6)
    for effect in np.linspace(-0.1, 0.1, 21):
        for lo in grid:
            for hi in grid[grid > lo]:
                dec = sequential_verdict(lo, hi, effect=float(effect), threshold=TAU, spent=True)
                if dec.exit_code == 0:
                    assert lo >= -TAU
                if dec.exit_code == 1:
                    assert hi <= 0


def _d(rng, size, drop, k=8):
    p = rng.beta(2, 2, size)
    return rng.binomial(k, np.clip(p - drop, 0, 1)) / k - rng.binomial(k, p) / k


@pytest.mark.parametrize("drop", [0.0, 0.05, 0.12, -0.12])
def test_first_decision_equals_the_rule_on_the_interval_at_every_look(drop):
    rng = np.random.default_rng(int(100 * abs(drop)) + 7 + (drop < 0))
    for _ in range(4):
        d = _d(rng, 150, drop)
        cs = betting_cs(d)
        expected = None
        for t in range(1, 151):
            dec = sequential_verdict(
                float(cs.lower[t - 1]),
                float(cs.upper[t - 1]),
                effect=float(np.mean(d[:t])),
                threshold=TAU,
                spent=t == 150,
            )
            if dec.settled:
                expected = (dec.verdict, t)
                break
        got = first_decision(d, alpha=0.05, threshold=TAU)
        assert (got.verdict, got.n_used) == expected
        looks = [10, 50, 100, 150]
        cs = betting_cs(d, looks=looks)
        for j, t in enumerate(looks):
            dec = sequential_verdict(
                float(cs.lower[j]),
                float(cs.upper[j]),
                effect=float(np.mean(d[:t])),
                threshold=TAU,
                spent=t == 150,
            )
            if dec.settled:
                expected = (dec.verdict, t)
                break
        got = first_decision(d, alpha=0.05, threshold=TAU, looks=looks)
        assert (got.verdict, got.n_used) == expected


def test_a_large_drop_stops_early():
    rng = np.random.default_rng(3)
    got = first_decision(_d(rng, 1000, 0.15), alpha=0.05, threshold=TAU)
    assert got.verdict == "regression" and got.n_used < 200


def test_overall_and_bonferroni():
    assert task_alpha(0.05, 4) == 0.0125
    assert sequential_overall({"a": "regression", "b": "inconclusive"}) == ("regression", 1)
    assert sequential_overall({"a": "improvement", "b": "inconclusive"}) == ("inconclusive", 3)
    assert sequential_overall({"a": "improvement", "b": "equivalent_within_threshold"}) == (
        "pass",
        0,
    )


def test_simulate_sequential_matches_first_decision_by_hand():
    """The simulation is first_decision over the model's draws: replayed by hand with the
    same generator calls it gives the same problems used."""
    from rolleval.compare._sequential import simulate_sequential

    c = np.array([8, 6, 4, 2, 0, 8, 7, 5, 3, 1] * 20)
    n = np.full(c.size, 8)
    res = simulate_sequential(
        c, n, effect=0.3, threshold=TAU, alpha=0.05, round_problems=10, n_sims=5, rng=1
    )
    gen = np.random.default_rng(1)
    base = c / n
    p = np.clip(base - 0.3, 0, 1)
    used = []
    for _ in range(5):
        order = gen.permutation(c.size)
        d = gen.binomial(n[order], p[order]) / n[order] - base[order]
        used.append(
            first_decision(d, alpha=0.05, threshold=TAU, looks=np.arange(10, 201, 10)).n_used
        )
    assert res["mean_problems"] == pytest.approx(np.mean(used))
    assert res["verdicts"] == {"regression": 1.0}
    assert res["implied_drop"] == pytest.approx(np.mean(base - p))


def test_plan_sequential_beside_the_fixed_design(tmp_path):
    from conftest import run_cli
    from rolleval.compare import plan_runs
    from rolleval.testing._synthetic import write_synthetic_run

    pilot = tmp_path / "pilot"
    write_synthetic_run(pilot, n_problems=300, n_rollouts=8, rng=3)
    res = plan_runs(pilot, effect=0.15, sequential=True, n_sims=50)
    seq = res.tasks["synthetic_math"].sequential
    assert seq is not None
    # a drop of 0.15 (7.5 x the threshold) is settled long before the 300-problem budget
    assert seq["budget"] == 300 and seq["mean_problems"] < 150
    assert seq["verdicts"].get("regression", 0) > 0.9
    proc = run_cli("plan", str(pilot), "--effect", "0.15", "--sequential", "--sims", "20")
    assert proc.returncode == 0 and "problems to a verdict on average" in proc.stdout
