"""Issue 10, statistical defects 1, 2, 7 and 8, through `rolleval compare / gate / plan`.

Every test writes run directories with the public run writer (`rolleval.testing._synthetic`) and
runs the command line in a subprocess; each fails on rolleval before the fix.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from conftest import run_cli
from rolleval.testing._synthetic import write_synthetic_run


def _json(*args):
    proc = run_cli(*args, "--format", "json")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc


# ------------------------------------------------------------- defect 1: zero width


def test_greedy_runs_that_agree_are_not_equivalent(tmp_path):
    # n = 1 greedy runs on 10 problems with identical outcomes: every paired difference 0
    rates = np.array([1.0, 0.0] * 5)
    b = write_synthetic_run(tmp_path / "b", n_problems=10, n_rollouts=1, true_rates=rates)
    c = write_synthetic_run(
        tmp_path / "c", n_problems=10, n_rollouts=1, true_rates=rates, outcome_rng=7
    )
    code, data, proc = _json("compare", str(b.path), str(c.path))
    t = data["tasks"][0]
    assert t["effect"] == 0.0 and t["ci_low"] == t["ci_high"] == 0.0
    assert t["ci_status"] == "degenerate"
    assert t["verdict"] == "insufficient_evidence" and code == 3, proc.stdout
    # an exact bound: 0 of 10 moved gives a Clopper-Pearson share of 1 - 0.025**(1/10)
    assert t["bound_low"] == pytest.approx(-(1 - 0.025 ** (1 / 10)), rel=1e-9)
    assert t["needed_problems"] == math.ceil(math.log(0.025) / math.log(1 - 0.02))  # 183
    text = run_cli("compare", str(b.path), str(c.path))
    assert text.returncode == 3 and "INSUFFICIENT EVIDENCE" in text.stdout


def test_saturated_problems_with_four_rollouts_are_not_equivalent(tmp_path):
    rates = np.ones(40)
    b = write_synthetic_run(tmp_path / "b", n_problems=40, n_rollouts=4, true_rates=rates)
    c = write_synthetic_run(
        tmp_path / "c", n_problems=40, n_rollouts=4, true_rates=rates, outcome_rng=3
    )
    code, data, _ = _json("compare", str(b.path), str(c.path))
    t = data["tasks"][0]
    assert t["ci_status"] == "degenerate" and t["n_moved"] == 0
    assert code == 3 and t["verdict"] == "insufficient_evidence"
    assert "exact bound" in t["reason"]
    # the gate says the same (a run against itself proves nothing)
    gate = run_cli("gate", str(c.path), "--baseline", str(b.path))
    assert gate.returncode == 3 and "gate: inconclusive" in gate.stdout
    # and the report calls the all-equal interval degenerate, never an ok [1, 1]
    assert run_cli("report", str(b.path)).returncode == 0
    report = json.loads((b.path / "report.json").read_text())
    ci = report["tasks"]["synthetic_math"]["metrics"]["pass@1"]["ci"]
    assert ci["status"] == "degenerate" and ci["low"] == ci["high"] == 1.0


def test_equivalence_needs_the_mde_at_the_threshold(tmp_path):
    # 150 problems, 8 rollouts: the interval of two samplings of one model lies inside
    # +-0.045, but the MDE at power 0.8 (about 0.054) is above that threshold
    b = write_synthetic_run(tmp_path / "b", n_problems=150, n_rollouts=8, rng=2, outcome_rng=1)
    c = write_synthetic_run(tmp_path / "c", n_problems=150, n_rollouts=8, rng=2, outcome_rng=5)
    code, data, _ = _json("compare", str(b.path), str(c.path), "--threshold", "0.045")
    t = data["tasks"][0]
    assert t["ci_low"] > -0.045 and t["ci_high"] < 0.045 and t["mde"] > 0.045
    assert t["verdict"] == "insufficient_evidence" and code == 3
    assert "minimum detectable effect" in t["reason"]
    # a lower power lowers the MDE below the threshold: the flag changes the result
    code, data, _ = _json(
        "compare", str(b.path), str(c.path), "--threshold", "0.045", "--power", "0.6"
    )
    assert data["tasks"][0]["mde"] < 0.045
    assert data["tasks"][0]["verdict"] == "equivalent_within_threshold" and code == 0
    text = run_cli("compare", str(b.path), str(c.path), "--threshold", "0.045", "--power", "0.6")
    assert "minimum detectable effect (60% power)" in text.stdout


# ------------------------------------------------- defect 2: maj@n at a common k


def test_maj_at_n_with_16_against_4_rollouts_compares_at_k_4(tmp_path):
    # the same model, 16 rollouts against 4: maj@16 > maj@4 whenever the right answer
    # is the most frequent one, so comparing maj@n directly reports a false regression
    b = write_synthetic_run(tmp_path / "b", n_problems=300, n_rollouts=4, rng=5)
    c16 = write_synthetic_run(tmp_path / "c", n_problems=300, n_rollouts=16, rng=5, outcome_rng=9)
    for metric in ("maj@n", "self_consistency"):
        code, data, _proc = _json("compare", str(c16.path), str(b.path), "--metric", metric)
        t = data["tasks"][0]
        notes = " ".join(t["alignment"]["notes"])
        assert "common k = 4" in notes, notes
        assert t["verdict"] != "regression" and code != 1, (metric, t["reason"])
        assert abs(t["effect"]) < 0.05


def test_maj_at_n_refuses_a_baseline_file_without_clusters(tmp_path):
    b = write_synthetic_run(tmp_path / "b", n_problems=30, n_rollouts=4, rng=1)
    c = write_synthetic_run(tmp_path / "c", n_problems=30, n_rollouts=4, rng=1, outcome_rng=2)
    base_file = tmp_path / "base.json"
    assert run_cli("baseline", "save", str(b.path), "--out", str(base_file)).returncode == 0
    doc = json.loads(base_file.read_text())
    assert len(doc["tasks"]["synthetic_math"]["votes"]) == 30
    # the file gives the same maj@n comparison as the run directory
    _, from_run, _ = _json("compare", str(b.path), str(c.path), "--metric", "maj@n")
    _, from_file, _ = _json("compare", str(base_file), str(c.path), "--metric", "maj@n")
    assert from_run["tasks"][0]["effect"] == from_file["tasks"][0]["effect"]
    del doc["tasks"]["synthetic_math"]["votes"]  # as written before the fix
    base_file.write_text(json.dumps(doc))
    proc = run_cli("compare", str(base_file), str(c.path), "--metric", "maj@n")
    assert proc.returncode == 2 and "no answer clusters" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_lost_rollouts_lower_k_and_say_so(tmp_path):
    b = write_synthetic_run(tmp_path / "b", n_problems=60, n_rollouts=8, rng=4)
    c = write_synthetic_run(
        tmp_path / "c", n_problems=60, n_rollouts=8, rng=4, outcome_rng=1, p_infra_error=0.2
    )
    _, data, _ = _json("compare", str(b.path), str(c.path), "--metric", "maj@n")
    notes = " ".join(data["tasks"][0]["alignment"]["notes"])
    assert "fewer rollouts on one side" in notes and "common k = " in notes


# ------------------------------------------- defect 7: plan for the regression verdict


def test_plan_sizes_for_the_regression_verdict(tmp_path):
    b = write_synthetic_run(tmp_path / "b", n_problems=200, n_rollouts=8, rng=1)
    code, data, _ = _json(
        "plan", str(b.path), "--effect", "0.025", "--threshold", "0.02", "--power", "0.8"
    )
    assert code == 0 and data["verdict"] == "regression"
    e = data["tasks"]["synthetic_math"]
    comp = e["components"]
    var = (
        comp["sigma2_baseline"] / comp["n_rollouts_baseline"]
        + comp["sigma2_candidate"] / comp["n_rollouts_candidate"]
    )
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    s_star = min(0.025 / (z_a + z_b), (0.025 - 0.02) / z_b)  # the threshold binds here
    assert e["required_problems"] == math.ceil(var / s_star**2)
    assert e["required_problems"] > e["required_problems_significance"]
    assert e["required_problems_significance"] == math.ceil((z_a + z_b) ** 2 * var / 0.025**2)


def test_plan_says_plainly_when_the_drop_is_not_above_the_threshold(tmp_path):
    b = write_synthetic_run(tmp_path / "b", n_problems=50, n_rollouts=4, rng=1)
    code, data, _ = _json("plan", str(b.path), "--effect", "0.02", "--threshold", "0.02")
    assert code == 0 and data["tasks"]["synthetic_math"]["required_problems"] is None
    assert "at most about half the time" in data["note"]
    text = run_cli("plan", str(b.path), "--effect", "0.02")
    assert "NOTE" in text.stdout and "half the time" in text.stdout
    bad = run_cli("plan", str(b.path), "--task", "nope")
    assert bad.returncode == 2 and "not in the pilot" in bad.stderr


# ----------------------------------------------------- defect 8: declared clusters


def _clustered_pair(tmp_path, *, clusters=8, n_problems=160, spread=0.15, seed=3):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n_problems)
    subject = np.arange(n_problems) % clusters
    effects = rng.normal(0.0, spread, clusters)
    effects -= effects.mean()  # no change on average: subject-level effects only
    q = np.clip(p + effects[subject], 0, 1)
    b = write_synthetic_run(
        tmp_path / "b", n_problems=n_problems, n_rollouts=8, true_rates=p, clusters=clusters
    )
    c = write_synthetic_run(
        tmp_path / "c",
        n_problems=n_problems,
        n_rollouts=8,
        true_rates=q,
        clusters=clusters,
        outcome_rng=4,
    )
    return b.path, c.path


def test_declared_clusters_are_resampled_by_compare_and_gate(tmp_path):
    b, c = _clustered_pair(tmp_path)
    _code, data, _ = _json("compare", str(b), str(c))
    t = data["tasks"][0]
    assert t["unit"] == "cluster" and t["n_clusters"] == 8
    assert "cluster bootstrap" in t["method"] and "per cluster" in t["method"]
    # the same per-problem values resampled as independent problems: a far narrower interval
    from rolleval.compare import PairedInput, paired_compare
    from rolleval.compare._frame import load_frames

    fb, fc = load_frames(b)["synthetic_math"], load_frames(c)["synthetic_math"]
    flat_res = paired_compare(PairedInput(fb.values["pass@1"], fc.values["pass@1"]))
    assert (t["ci_high"] - t["ci_low"]) > 1.5 * (flat_res.ci_high - flat_res.ci_low)
    # the sign-flip p-value is the cluster-level one: 8 clusters, 2**8 = 256 exact vectors
    assert t["pvalue_exact"] and t["pvalue"] * 256 == pytest.approx(round(t["pvalue"] * 256))
    gate = run_cli("gate", str(c), "--baseline", str(b), "--output", str(tmp_path / "g.json"))
    g = json.loads((tmp_path / "g.json").read_text())
    assert g["comparisons"][0]["unit"] == "cluster", gate.stdout
