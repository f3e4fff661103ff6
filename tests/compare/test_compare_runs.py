"""`rolleval compare / gate / baseline / plan` over real run directories (synthetic records)."""

from __future__ import annotations

import json
import math

import numpy as np
import orjson
import pytest

from conftest import run_cli, synthetic_pair
from rolleval._cli import main
from rolleval.compare import compare_runs, gate_run, plan_runs, save_baseline
from rolleval.errors import UsageError
from rolleval.testing._synthetic import write_synthetic_run


def test_identical_runs_are_not_called_equivalent(tmp_path):
    # a run compared with itself: every paired difference is 0, a zero-width interval
    base = write_synthetic_run(tmp_path / "a", n_problems=150, n_rollouts=8, rng=3)
    res = compare_runs(base.path, base.path)
    t = res.tasks[0].comparison.to_dict()
    assert t["effect"] == 0.0 and t["ci_status"] == "degenerate"
    assert t["verdict"] == "insufficient_evidence" and res.exit_code == 3
    assert t["needed_problems"] > 150


def test_clear_drop_is_a_regression_with_exit_1(tmp_path):
    b, c = synthetic_pair(tmp_path, shift=-0.15)
    res = compare_runs(b, c)
    d = res.to_dict()["tasks"][0]
    assert d["verdict"] == "regression" and d["effect"] < -0.1 and d["ci_high"] < 0
    assert res.exit_code == 1 and res.verdict == "regression"
    # same numbers from the CLI, with the JSON written
    out = tmp_path / "cmp.json"
    proc = run_cli("compare", str(b), str(c), "--output", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION" in proc.stdout
    data = json.loads(out.read_text())
    assert data["tasks"][0]["effect"] == pytest.approx(d["effect"])
    assert data["tasks"][0]["alignment"]["by"] == "content_hash"
    assert data["exit_code"] == 1
    # --observe reports but exits 0
    assert run_cli("compare", str(b), str(c), "--observe").returncode == 0


def test_effect_is_the_mean_paired_difference_of_per_problem_pass1(tmp_path):
    b, c = synthetic_pair(tmp_path, shift=-0.05, n_problems=80)
    res = compare_runs(b, c)
    fb = res.tasks[0]

    def per_problem(path):
        rows = [
            orjson.loads(x)
            for x in (path / "tasks" / "synthetic_math" / "judgements.jsonl")
            .read_bytes()
            .splitlines()
        ]
        acc = {}
        for r in rows:
            if r["status"] == "ok" and "grader_error" not in r:
                acc.setdefault(r["problem_id"], []).append(r["correct"])
        return {k: sum(v) / len(v) for k, v in acc.items()}

    pb, pc = per_problem(b), per_problem(c)
    want = sum(pc[k] - pb[k] for k in pb) / len(pb)
    assert fb.comparison.to_dict()["effect"] == pytest.approx(want, abs=1e-12)


def test_health_metric_direction_lower_is_better(tmp_path):
    b, c = synthetic_pair(tmp_path, n_problems=150, p_unextracted=0.0)
    c2 = write_synthetic_run(
        tmp_path / "c2", n_problems=150, n_rollouts=8, rng=1, outcome_rng=20, p_unextracted=0.6
    )
    res = compare_runs(b, c2.path, metric="unextracted_rate")
    d = res.to_dict()["tasks"][0]
    assert d["direction"] == -1 and d["better"] == "lower"
    assert d["effect"] < 0 and d["verdict"] == "regression"  # more unextracted = worse
    with pytest.raises(UsageError, match="pass --threshold"):
        compare_runs(b, c, metric="output_tokens")
    assert compare_runs(b, c, metric="output_tokens", threshold=50).exit_code in (0, 3)


def test_changed_problem_content_is_refused_or_excluded(tmp_path):
    b, c = synthetic_pair(tmp_path, n_problems=30)
    tf = c / "tasks" / "synthetic_math" / "prompts.jsonl"
    rows = [orjson.loads(x) for x in tf.read_bytes().splitlines()]
    rows[4]["reference"] = "-1"
    rows[4]["content_hash"] = "f" * 64
    tf.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    proc = run_cli("compare", str(b), str(c))
    assert proc.returncode == 2
    assert (
        "1 changed content (e.g. synthetic_math/000004)" in proc.stderr
        and "--unmatched exclude" in proc.stderr
    )
    res = compare_runs(b, c, unmatched="exclude")
    al = res.to_dict()["tasks"][0]["alignment"]
    assert al["matched"] == 29 and al["excluded"]["changed_content"]["ids"] == [
        "synthetic_math/000004"
    ]


def test_different_grader_is_refused(tmp_path):
    b, c = synthetic_pair(tmp_path, n_problems=20)
    tj = c / "tasks" / "synthetic_math" / "task.json"
    settings = json.loads(tj.read_text())
    settings["grader_identity"] = "math@2+other"
    tj.write_text(json.dumps(settings))
    proc = run_cli("compare", str(b), str(c))
    assert (
        proc.returncode == 2
        and "not comparable" in proc.stderr
        and "grader_identity" in proc.stderr
    )


def test_runs_without_hashes_align_by_id_unless_provenance_required(tmp_path):
    b, c = synthetic_pair(tmp_path, n_problems=20)
    tf = c / "tasks" / "synthetic_math" / "prompts.jsonl"
    rows = [orjson.loads(x) for x in tf.read_bytes().splitlines()]
    for r in rows:
        r.pop("content_hash")
    tf.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    res = compare_runs(b, c)
    assert res.to_dict()["tasks"][0]["alignment"]["by"] == "id"
    with pytest.raises(UsageError, match="no content hashes"):
        compare_runs(b, c, require_provenance=True)


def test_baseline_file_gives_the_same_comparison_as_the_run(tmp_path):
    b, c = synthetic_pair(tmp_path, shift=-0.1, n_problems=60, p_infra_error=0.05)
    bl = tmp_path / "baseline.json"
    assert main(["baseline", "save", str(b), "--out", str(bl)]) == 0
    assert main(["baseline", "save", str(b), "--out", str(bl)]) == 2  # never overwritten silently
    from_run = compare_runs(b, c).to_dict()["tasks"][0]
    from_file = compare_runs(bl, c).to_dict()["tasks"][0]
    for key in ("effect", "ci_low", "ci_high", "pvalue", "verdict", "mde"):
        assert from_run[key] == from_file[key]
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something"}')
    proc = run_cli("compare", str(bad), str(c))
    assert proc.returncode == 2 and "not a rolleval baseline file" in proc.stderr


def test_gate_default_policy_and_health_limits(tmp_path):
    b, c = synthetic_pair(tmp_path, shift=-0.15, n_problems=150)
    out = gate_run(c, b)
    assert out.exit_code == 1 and out.verdict == "blocked"
    same = gate_run(b, b)  # a run against itself proves nothing (zero-width interval)
    assert same.exit_code == 3 and same.verdict == "inconclusive"
    loose = {"alpha": 0.05, "metrics": {"pass@1": {"threshold": 0.1}}}
    resampled = write_synthetic_run(
        tmp_path / "again", n_problems=150, n_rollouts=8, rng=1, outcome_rng=11
    )
    ok = gate_run(resampled.path, b, policy=loose)
    assert ok.exit_code == 0 and ok.verdict == "pass"
    noisy = write_synthetic_run(
        tmp_path / "noisy", n_problems=150, n_rollouts=8, rng=1, outcome_rng=10, p_infra_error=0.1
    )
    res = gate_run(noisy.path, b)
    assert res.exit_code == 4 and res.verdict == "run_failed"  # an outage, not a regression
    assert any(
        ch["check"].startswith("infra_error_rate <=") and ch["verdict"] == "run failed"
        for ch in res.checks
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text("metrics:\n  pass@1: {threshold: 0.02}\n  maj@n: {threshold: 0.05}\n")
    proc = run_cli("gate", str(c), "--baseline", str(b), "--policy", str(policy))
    assert proc.returncode == 1 and "| synthetic_math |" in proc.stdout
    policy.write_text("metrics:\n  pass@1: {thresh: 0.02}\n")
    proc = run_cli("gate", str(c), "--baseline", str(b), "--policy", str(policy))
    assert proc.returncode == 2 and "metrics.pass@1" in proc.stderr


def test_plan_reports_sizes(tmp_path):
    b, c = synthetic_pair(tmp_path, n_problems=100)
    one = plan_runs(b, effect=0.05).tasks["synthetic_math"]
    assert one.status == "ok" and one.required_problems is not None and one.mde_current is not None
    assert one.required_problems >= 1 and 0 < one.mde_current < 1
    two = plan_runs(b, c, effect=0.05).tasks["synthetic_math"]
    assert two.status == "ok"
    proc = run_cli("plan", str(b), "--effect", "0.05")
    assert proc.returncode == 0 and "problems needed" in proc.stdout


def test_save_baseline_api_refuses_overwrite(tmp_path):
    b, _ = synthetic_pair(tmp_path, n_problems=5)
    save_baseline(b, tmp_path / "x.json")
    with pytest.raises(UsageError, match="file exists"):
        save_baseline(b, tmp_path / "x.json")


def test_html_pages_carry_the_verdict_and_numbers(tmp_path):
    b, c = synthetic_pair(tmp_path, shift=-0.15, n_problems=60)
    page = tmp_path / "out" / "compare.html"
    proc = run_cli(
        "compare", str(b), str(c), "--html", str(page), "--output", str(tmp_path / "c.json")
    )
    assert proc.returncode == 1 and f"HTML report: {page}" in proc.stdout
    html = page.read_text()
    data = json.loads((tmp_path / "c.json").read_text())
    assert 'class="banner bad"' in html and f"{data['tasks'][0]['effect']:+.4f}" in html
    rep = tmp_path / "report.html"
    proc = run_cli("report", str(b), "--html", str(rep))
    assert proc.returncode == 0
    text = rep.read_text()
    report = json.loads((b / "report.json").read_text())
    assert (
        f"{report['tasks']['synthetic_math']['metrics']['pass@1']['value']:.4f}" in text
        and "unextracted" in text
    )


def test_plan_at_one_rollout_per_problem_uses_the_paired_differences(tmp_path):
    """n = 1 on both sides: the variance of the per-problem differences d_i is estimable
    (ddof=1, unbiased for omega2 + sigma2_b + sigma2_c), so problems are planned from it;
    rollouts per problem are not (the split is not identifiable)."""
    from scipy.stats import norm

    from rolleval.compare._frame import load_frames

    b = write_synthetic_run(tmp_path / "b", n_problems=80, n_rollouts=1, rng=3)
    c = write_synthetic_run(
        tmp_path / "c", n_problems=80, n_rollouts=1, rng=3, shift=-0.1, outcome_rng=4
    )
    fb = load_frames(b.path)["synthetic_math"]
    fc = load_frames(c.path)["synthetic_math"]
    by_id = dict(zip(fc.ids, fc.c, strict=True))
    d = np.array([cb - by_id[i] for i, cb in zip(fb.ids, fb.c, strict=True)], dtype=float)
    v = float(np.var(d, ddof=1))
    assert v > 0
    effect, tau = 0.1, 0.02
    res = plan_runs(b.path, c.path, effect=effect, threshold=tau).to_dict()["tasks"][
        "synthetic_math"
    ]
    assert res["status"] == "ok" and res["components"]["status"] == "total_only"
    assert res["components"]["total_variance"] == pytest.approx(v, rel=1e-12)
    za, zb = norm.ppf(0.975), norm.ppf(0.8)
    s_star = min(effect / (za + zb), (effect - tau) / zb)
    assert res["required_problems"] == math.ceil(v / s_star**2)
    assert res["required_problems_significance"] == math.ceil((za + zb) ** 2 * v / effect**2)
    assert res["mde_current"] == pytest.approx((za + zb) * math.sqrt(v / 80), rel=1e-9)
    assert res["required_rollouts_at_current_problems"] is None
    assert "cannot be told apart" in res["rollouts_reason"]
    proc = run_cli("plan", str(b.path), "--candidate", str(c.path), "--effect", "0.1")
    assert proc.returncode == 0 and f"problem: {res['required_problems']} " in proc.stdout
    assert "rollouts per problem needed at 80 problems: N/A" in proc.stdout
    # the pilot alone at n = 1 cannot be planned, and says what would do
    alone = plan_runs(b.path, effect=effect).to_dict()["tasks"]["synthetic_math"]
    assert alone["status"] == "unavailable" and "--candidate" in alone["reason"]
