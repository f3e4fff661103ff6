"""Issue 10 (defects 3, 4, 5, 6, 9, 10, 11) and issue 9 item 2, through `rolleval compare`,
`gate` and `plan` on run directories written by the synthetic run writer.

Each test builds runs of known truth with :func:`rolleval.testing._synthetic.write_synthetic_run` and
edits their records with the store helpers where a situation (timeouts, duplicates, an
interrupted run) needs it, then runs the CLI in-process and checks exit code and output.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import orjson
import pytest

from conftest import run_main, synthetic_pair
from rolleval._cli import main
from rolleval.compare import compare_runs
from rolleval.compare._runs import decide_overall
from rolleval.rundir._store import RunDir, atomic_write_json
from rolleval.testing._synthetic import write_synthetic_run

TASK = "synthetic_math"


# ----------------------------------------------------------------------------- helpers


def _lines(path):
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def _write_lines(path, rows):
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def _task_dir(run_path, task=TASK):
    return RunDir.open(run_path).task(task)


def _edit_settings(run_path, task=TASK, **changes):
    tf = _task_dir(run_path, task)
    settings = json.loads(tf.task_json.read_text())
    for k, v in changes.items():
        if v is None:
            settings.pop(k, None)
        else:
            settings[k] = v
    atomic_write_json(tf.task_json, settings)


def _to_timeouts(run_path, share, seed, *, only_wrong=True, status="timeout"):
    """Turn a share of the (wrong) graded rollouts into rollouts that produced no answer."""
    rng = np.random.default_rng(seed)
    tf = _task_dir(run_path)
    rows = _lines(tf.judgements)
    out = []
    n = 0
    for r in rows:
        if (
            r["status"] == "ok"
            and (not only_wrong or r.get("correct") is False)
            and rng.random() < share
        ):
            r = {"problem_id": r["problem_id"], "index": r["index"], "status": status}
            r["grader"] = "math@synthetic"
            n += 1
        out.append(r)
    _write_lines(tf.judgements, out)
    return n


def _two_task_run(path, *, seed, outcome_seed, n_a=200, n_b=200, n_rollouts=8):
    """A run directory with tasks `a` and `b`, each written by the synthetic writer."""
    run = write_synthetic_run(
        path,
        task="a",
        n_problems=n_a,
        n_rollouts=n_rollouts,
        rng=seed,
        outcome_rng=outcome_seed,
    )
    tmp = path.parent / (path.name + "-b")
    write_synthetic_run(
        tmp,
        task="b",
        n_problems=n_b,
        n_rollouts=n_rollouts,
        rng=seed + 100,
        outcome_rng=outcome_seed,
    )
    shutil.move(str(tmp / "tasks" / "b"), str(path / "tasks" / "b"))
    shutil.rmtree(tmp)
    run.info.tasks = ["a", "b"]
    run.write_manifest()
    return path


# ------------------------------------------------------------- defect 3: timeouts


def test_timeouts_of_wrong_answers_count_as_failures_not_an_improvement(tmp_path, capsys):
    # same model; the candidate's wrong answers time out 30% of the time. Excluding timeouts
    # would select the easy rollouts and call the candidate better.
    b = write_synthetic_run(
        tmp_path / "base", n_problems=300, n_rollouts=8, rng=1, outcome_rng=10
    ).path
    c = write_synthetic_run(
        tmp_path / "cand2", n_problems=300, n_rollouts=8, rng=1, outcome_rng=10
    ).path  # the very same outcomes as the baseline
    assert _to_timeouts(c, 0.3, seed=5) > 100
    _code, out, _err = run_main(capsys, "compare", b, c, "--format", "json", "--n-resamples", 2000)
    data = json.loads(out)
    t = data["tasks"][0]
    assert t["verdict"] != "improvement"
    assert t["effect"] == pytest.approx(0.0, abs=1e-12)  # a timeout is a failure: same accuracy
    assert "counted as failures" in data["timeouts"]
    # shown apart in health: timeouts are not infra errors
    assert t["health"]["timeout_rate"]["candidate"] > 0.05
    assert t["health"]["infra_error_rate"]["candidate"] == 0.0
    # the report says so too, and counts them in pass@1's denominator
    assert main(["report", str(c)]) == 0
    text = capsys.readouterr().out
    assert "timeouts count as failures" in text
    rep = json.loads((c / "report.json").read_text())["tasks"][TASK]
    assert rep["timeout_policy"] == "failure"
    assert rep["rollouts"]["judged"] == 300 * 8
    assert rep["health"]["timeouts"]["count"] > 100 and rep["health"]["infra_errors"]["count"] == 0


def test_timeout_policy_excluded_restores_the_old_estimand_and_cannot_be_mixed(tmp_path, capsys):
    b = write_synthetic_run(
        tmp_path / "b", n_problems=300, n_rollouts=8, rng=1, outcome_rng=10
    ).path
    c = write_synthetic_run(
        tmp_path / "c", n_problems=300, n_rollouts=8, rng=1, outcome_rng=10
    ).path
    _to_timeouts(c, 0.3, seed=5)
    _edit_settings(c, timeout_policy="excluded")
    code, _out, err = run_main(capsys, "compare", b, c)
    assert code == 2 and "timeout_policy" in err and len(err.strip().splitlines()) == 1
    _edit_settings(b, timeout_policy="excluded")
    res = compare_runs(b, c, n_resamples=2000).tasks[0]
    # excluded: the candidate looks better, but the unjudged shares differ by more than the
    # threshold and the worst case of the missing rollouts refutes the improvement
    assert res.comparison.effect > 0.02
    assert res.comparison.verdict == "inconclusive" and "worst case" in res.comparison.reason


def test_selective_infra_errors_cannot_make_an_improvement(tmp_path, capsys):
    # connection-level failures stay infra errors (excluded); when they hit the candidate's
    # wrong answers, the shares differ and the verdict must survive the worst case
    b = write_synthetic_run(
        tmp_path / "b", n_problems=300, n_rollouts=8, rng=1, outcome_rng=10
    ).path
    c = write_synthetic_run(
        tmp_path / "c", n_problems=300, n_rollouts=8, rng=1, outcome_rng=10
    ).path
    _to_timeouts(c, 0.3, seed=5, status="infra_error")
    code, out, _ = run_main(capsys, "compare", b, c, "--format", "json", "--n-resamples", 2000)
    t = json.loads(out)["tasks"][0]
    assert t["effect"] > 0.05  # the selection: gradable rollouts of the candidate look better
    assert code == 3 and t["verdict"] == "inconclusive"
    assert (
        t["unjudged"]["bound_checked"] and t["unjudged"]["worst_case"]["verdict"] != "improvement"
    )
    assert "worst case" in t["reason"]
    assert t["health"]["infra_error_rate"]["candidate"] > 0.05


def test_a_clear_regression_survives_the_worst_case_bound(tmp_path, capsys):
    b, c = synthetic_pair(tmp_path, n_problems=200, shift=-0.3)
    _to_timeouts(c, 0.1, seed=3, only_wrong=False, status="infra_error")
    code, out, _ = run_main(capsys, "compare", b, c, "--format", "json", "--n-resamples", 2000)
    t = json.loads(out)["tasks"][0]
    assert t["unjudged"]["bound_checked"]
    assert t["unjudged"]["worst_case"]["verdict"] == "regression"
    assert code == 1 and t["verdict"] == "regression"


# ------------------------------------------------------------ defect 4: duplicates


def _make_duplicates(run_path, first, count):
    tf = _task_dir(run_path)
    rows = _lines(tf.prompts)
    src = rows[first]
    for r in rows[first + 1 : first + count]:
        for k in ("prompt", "reference", "content_hash"):
            r[k] = src[k]
    _write_lines(tf.prompts, rows)


def test_duplicate_content_is_matched_as_a_multiset_and_listed(tmp_path, capsys):
    rates_b = np.full(40, 0.9)
    rates_c = np.concatenate([np.zeros(20), np.full(20, 0.9)])  # the 20 duplicates all regress
    b = write_synthetic_run(
        tmp_path / "b", n_problems=40, n_rollouts=8, rng=1, outcome_rng=1, true_rates=rates_b
    ).path
    c = write_synthetic_run(
        tmp_path / "c", n_problems=40, n_rollouts=8, rng=1, outcome_rng=2, true_rates=rates_c
    ).path
    for run in (b, c):
        _make_duplicates(run, 0, 20)
    code, out, _ = run_main(capsys, "compare", b, c, "--format", "json", "--n-resamples", 2000)
    t = json.loads(out)["tasks"][0]
    assert t["alignment"]["matched"] == 40 and t["problems"]["compared"] == 40
    assert t["alignment"]["duplicates"]["baseline"]["count"] == 20
    assert t["effect"] < -0.4
    assert code == 1 and t["verdict"] == "regression"
    code, text, _ = run_main(capsys, "compare", b, c, "--n-resamples", 2000)
    assert "20 baseline problems share their content" in text


def test_duplicates_in_unequal_numbers_are_listed_by_reason(tmp_path):
    b = write_synthetic_run(tmp_path / "b", n_problems=12, n_rollouts=4, rng=1).path
    c = write_synthetic_run(tmp_path / "c", n_problems=12, n_rollouts=4, rng=1).path
    _make_duplicates(b, 0, 3)
    _make_duplicates(c, 0, 2)  # candidate problem 2 keeps its own content
    res = compare_runs(b, c, unmatched="exclude", n_resamples=500).to_dict()["tasks"][0]
    al = res["alignment"]
    listed_b = al["matched"] + sum(e["count"] for e in al["excluded"].values() if e)
    assert al["matched"] == 11 and al["excluded"]["changed_content"]["ids"] == [f"{TASK}/000002"]
    assert listed_b == 12


# ---------------------------------------------------- defect 5: denominator policies


def test_requested_policy_compares_and_gates(tmp_path, capsys):
    b, c = synthetic_pair(tmp_path, n_problems=100, p_infra_error=0.05)
    for run in (b, c):
        _edit_settings(run, denominator_policy="requested")
    code, out, err = run_main(capsys, "compare", b, c, "--format", "json", "--n-resamples", 1000)
    assert code in (0, 1, 3), err
    t = json.loads(out)["tasks"][0]
    assert t["sides"]["baseline"]["denominator_policy"] == "requested"
    code, out, err = run_main(
        capsys,
        "gate",
        c,
        "--baseline",
        b,
        "--policy",
        _policy(tmp_path, "pass@1"),
        "--n-resamples",
        1000,
    )
    assert code in (0, 1, 3) and "Traceback" not in err and "rolleval gate" in out


def test_mixing_denominator_policies_is_refused_in_one_line(tmp_path, capsys):
    b, c = synthetic_pair(tmp_path, n_problems=30, p_infra_error=0.05)
    _edit_settings(c, denominator_policy="requested")
    code, _out, err = run_main(capsys, "compare", b, c)
    assert code == 2
    assert "denominator_policy: 'judged' vs 'requested'" in err and "a run of each" in err
    assert len(err.strip().splitlines()) == 1
    code, _out, err = run_main(capsys, "gate", c, "--baseline", b)
    assert code == 2 and "denominator_policy" in err


# ----------------------------------------------------- defect 6: a missing task


def test_a_baseline_task_missing_from_the_candidate_is_not_evaluated(tmp_path, capsys):
    base = _two_task_run(tmp_path / "base", seed=1, outcome_seed=10)
    cand = write_synthetic_run(
        tmp_path / "cand", task="a", n_problems=200, n_rollouts=8, rng=1, outcome_rng=11
    ).path
    args = ("--threshold", 0.06, "--n-resamples", 2000)
    code, out, _ = run_main(capsys, "compare", base, cand, *args)
    assert code == 3 and "task b: skipped (only in the baseline: not evaluated)" in out
    code, out, _ = run_main(capsys, "compare", base, cand, "--task", "a", *args)
    assert code == 0 and "EQUIVALENT" in out
    policy = tmp_path / "p.yaml"
    policy.write_text("metrics:\n  pass@1: {threshold: 0.06}\n")
    code, out, _ = run_main(capsys, "gate", cand, "--baseline", base, "--policy", policy)
    assert code == 3 and "| b | task present in the run | missing | not evaluated |" in out
    code, out, _ = run_main(
        capsys, "gate", cand, "--baseline", base, "--policy", policy, "--task", "a"
    )
    assert code == 0
    policy.write_text("tasks: [a]\nmetrics:\n  pass@1: {threshold: 0.06}\n")
    code, out, _ = run_main(
        capsys, "gate", cand, "--baseline", base, "--policy", policy, "--n-resamples", 1000
    )
    assert code == 0 and "| b |" not in out


# --------------------------------------------------- defect 9: what was compared


def test_every_format_states_problems_compared_and_dropped(tmp_path, capsys):
    b, c = synthetic_pair(tmp_path, n_problems=60, n_rollouts=8)
    # the candidate loses a third of one in three problems' rollouts: pass@8 needs all 8
    tf = _task_dir(c)
    rows = _lines(tf.judgements)
    for r in rows:
        if int(r["problem_id"][-3:]) % 3 == 0 and r["index"] < 3:
            for k in ("correct", "extracted", "cluster", "finish_reason", "output_tokens"):
                r.pop(k, None)
            r["status"] = "infra_error"
    _write_lines(tf.judgements, rows)
    out_json = tmp_path / "c.json"
    page = tmp_path / "c.html"
    _code, text, _ = run_main(
        capsys,
        "compare",
        b,
        c,
        "--metric",
        "pass@8",
        "--n-resamples",
        1000,
        "--output",
        out_json,
        "--html",
        page,
    )
    t = json.loads(out_json.read_text())["tasks"][0]
    assert t["problems"]["compared"] == 40 and t["problems"]["dropped_total"] == 20
    assert t["problems"]["dropped"]["not_eligible_on_candidate"]["count"] == 20
    assert t["problems"]["dropouts_per_side"] == {"baseline": 0, "candidate": 20}
    assert any("20 of 60 problems (33%) dropped" in w for w in t["warnings"])
    assert "problems compared 40 of 60" in text and "dropped 20 not eligible on candidate" in text
    assert (
        "WARNING: 20 of 60 problems (33%) dropped (0 drop-outs on the baseline, 20 on the candidate)"
        in text
    )
    html = page.read_text()
    assert "problems compared 40" in html and "not eligible on candidate" in html
    _code, md, _ = run_main(
        capsys,
        "gate",
        c,
        "--baseline",
        b,
        "--policy",
        _policy(tmp_path, "pass@8"),
        "--n-resamples",
        1000,
    )
    assert "problems compared 40 of 60" in md and "- dropped 20 not eligible on candidate" in md
    assert "dropped (0 drop-outs on the baseline, 20 on the candidate)" in md


def _policy(tmp_path, metric):
    p = tmp_path / f"policy-{metric.replace('@', '_')}.yaml"
    p.write_text(f"metrics:\n  {metric}: {{threshold: 0.02}}\n")
    return p


# --------------------------------------------------- defect 10: incomplete runs


def _interrupt(run_path, keep):
    run = RunDir.open(run_path)
    run.info.status = "running"
    run.write_manifest()
    tf = run.task(TASK)
    rows = _lines(tf.judgements)
    _write_lines(tf.judgements, rows[:keep])


def test_an_incomplete_run_is_refused_a_verdict_with_exit_4(tmp_path, capsys):
    b, c = synthetic_pair(tmp_path, n_problems=40, n_rollouts=4)
    _interrupt(c, keep=100)  # 60 of 160 judgements missing
    (c / "report.json").unlink(missing_ok=True)
    code, _out, err = run_main(capsys, "compare", b, c)
    assert code == 4 and "run incomplete: resume it" in err and "60 of 160" in err
    code, _out, err = run_main(capsys, "gate", c, "--baseline", b)
    assert code == 4 and "run incomplete: resume it" in err
    code, out, _ = run_main(
        capsys, "compare", b, c, "--allow-incomplete", "--format", "json", "--n-resamples", 1000
    )
    data = json.loads(out)
    assert data["incomplete"][0]["missing_rollouts"] == 60
    assert data["tasks"][0]["sides"]["candidate"]["missing_rollouts"] == 60
    assert data["tasks"][0]["problems"]["compared"] == 25  # only 25 problems have data
    # missing rollouts are unjudged: 60 of 160 on one side, so the worst case decides nothing
    assert data["tasks"][0]["unjudged"]["candidate_share"] == 60 / 160
    assert code == 3 and data["verdict"] == "inconclusive"
    code, text, _ = run_main(capsys, "compare", b, c, "--allow-incomplete", "--n-resamples", 1000)
    assert "problems compared 25 of 40" in text and "60 rollouts missing" in text


def test_default_gate_infra_error_limit_is_a_failed_run_not_a_regression(tmp_path, capsys):
    b = write_synthetic_run(tmp_path / "b", n_problems=150, n_rollouts=8, rng=1, outcome_rng=10)
    noisy = write_synthetic_run(
        tmp_path / "noisy", n_problems=150, n_rollouts=8, rng=1, outcome_rng=10, p_infra_error=0.1
    )
    code, out, _ = run_main(capsys, "gate", noisy.path, "--baseline", b.path, "--n-resamples", 1000)
    assert code == 4 and "RUN FAILED" in out and "| infra_error_rate <= 0.02 |" in out
    assert "run failed" in out


# ------------------------------------------------------------ defect 11


def test_plan_names_a_missing_or_unknown_task_with_exit_2(tmp_path, capsys):
    base = _two_task_run(tmp_path / "base", seed=1, outcome_seed=10)
    cand = write_synthetic_run(
        tmp_path / "cand", task="a", n_problems=80, n_rollouts=4, rng=1, outcome_rng=11
    ).path
    code, _o, err = run_main(capsys, "plan", base, "--candidate", cand, "--task", "b")
    assert code == 2 and "task 'b' is not in the candidate" in err and "it has: a" in err
    code, _o, err = run_main(capsys, "plan", base, "--task", "nope")
    assert code == 2 and "task 'nope' is not in the pilot" in err


def test_grader_identity_on_one_side_only_is_a_note_or_refused(tmp_path, capsys):
    b, c = synthetic_pair(tmp_path, n_problems=40, n_rollouts=4)
    _edit_settings(c, grader_identity=None)
    code, out, _ = run_main(capsys, "compare", b, c, "--n-resamples", 500)
    assert code in (0, 3) and "grader identity unknown on the candidate" in out
    code, _o, err = run_main(capsys, "compare", b, c, "--require-provenance")
    assert code == 2 and "grader_identity is unknown on the candidate" in err


def test_observe_exits_2_when_nothing_could_be_compared(tmp_path, capsys):
    b = write_synthetic_run(tmp_path / "b", n_problems=20, n_rollouts=4, rng=1).path
    c = write_synthetic_run(
        tmp_path / "c", n_problems=20, n_rollouts=4, rng=1, p_infra_error=1.0
    ).path
    code, _o, err = run_main(capsys, "compare", b, c, "--observe")
    assert code == 2 and "nothing could be compared" in err
    code, _o, _e = run_main(capsys, "compare", b, c)
    assert code == 3  # without --observe: not enough evidence


def _holm_pair(tmp_path):
    """Task a (30 problems): 6 problems gain 2 of 4 rollouts, so the exact sign-flip p is
    2/2^6 = 0.03125 and the interval lies above 0; task b (200 problems): an A/A sample."""
    base = _two_task_run(tmp_path / "hb", seed=1, outcome_seed=10, n_a=30, n_b=400, n_rollouts=4)
    cand = _two_task_run(tmp_path / "hc", seed=1, outcome_seed=10, n_a=30, n_b=400, n_rollouts=4)
    tf = RunDir.open(cand).task("b")
    fresh = write_synthetic_run(
        tmp_path / "fresh", task="b", n_problems=400, n_rollouts=4, rng=101, outcome_rng=11
    )
    shutil.copyfile(fresh.task("b").judgements, tf.judgements)
    tf = RunDir.open(cand).task("a")
    rows = _lines(tf.judgements)
    wrong: dict[str, list[int]] = {}
    for pos, r in enumerate(rows):
        if r.get("correct") is False:
            wrong.setdefault(r["problem_id"], []).append(pos)
    chosen = [pid for pid in sorted(wrong) if len(wrong[pid]) >= 2][:6]
    assert len(chosen) == 6
    for pid in chosen:
        for pos in wrong[pid][:2]:
            rows[pos]["correct"] = True
            rows[pos].pop("cluster", None)
    _write_lines(tf.judgements, rows)
    return base, cand


def test_holm_does_not_turn_an_improvement_that_excludes_any_drop_inconclusive(tmp_path, capsys):
    base, cand = _holm_pair(tmp_path)
    code, out, _ = run_main(
        capsys,
        "compare",
        base,
        cand,
        "--format",
        "json",
        "--threshold",
        0.06,
        "--n-resamples",
        10000,
    )
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass"
    a = next(t for t in data["tasks"] if t["task"] == "a")
    assert a["verdict"] == "improvement" and a["ci_low"] > 0
    assert 0.025 < a["pvalue"] <= 0.05 < data["adjusted_pvalues"]["a"]  # Holm removes significance
    assert data["adjusted_verdicts"]["a"] == "improvement"
    assert any("excludes every drop" in r for r in data["reasons"])


def test_holm_still_removes_a_regression_that_does_not_survive(tmp_path):
    # the rule applies to intervals above 0 only: a mirrored regression still becomes inconclusive
    from rolleval.compare import PairedInput, paired_compare

    d = np.array([0.5] * 6 + [0.0] * 24)
    base = np.full(30, 0.5)
    up = paired_compare(PairedInput(base, base + d), n_resamples=10000)
    down = paired_compare(PairedInput(base, base - d), n_resamples=10000)
    wide = np.full(200, 0.5)
    same = paired_compare(PairedInput(wide, wide + np.tile([0.01, -0.01], 100)), n_resamples=10000)
    assert up.verdict == "improvement" and down.verdict == "regression"
    assert same.verdict == "equivalent_within_threshold"
    assert 0.025 < down.pvalue <= 0.05 and 0.025 < up.pvalue <= 0.05  # randomized, near 2 / 2**6
    res = decide_overall({"x": down, "y": same}, alpha=0.05)
    assert res.verdicts["x"] == "inconclusive" and res.exit_code == 3
    res = decide_overall({"x": up, "y": same}, alpha=0.05)
    assert res.verdicts["x"] == "improvement" and res.exit_code == 0


# ------------------------------------ issue 9 item 2: one definition per health quantity


def test_report_compare_and_gate_print_the_same_health_numbers(tmp_path, capsys):
    run = write_synthetic_run(
        tmp_path / "r",
        n_problems=120,
        n_rollouts=6,
        rng=4,
        p_infra_error=0.05,
        p_grader_error=0.03,
        p_unextracted=0.2,
        p_truncated=0.1,
    ).path
    _to_timeouts(run, 0.05, seed=2, only_wrong=False)
    other = write_synthetic_run(
        tmp_path / "o", n_problems=120, n_rollouts=6, rng=4, outcome_rng=9, p_unextracted=0.05
    ).path
    assert main(["report", str(run), "--format", "json"]) == 0
    capsys.readouterr()
    rep = json.loads((run / "report.json").read_text())["tasks"][TASK]["health"]
    code, out, _ = run_main(capsys, "compare", run, other, "--format", "json", "--n-resamples", 500)
    panel = json.loads(out)["tasks"][0]["health"]
    pairs = {
        "unextracted_rate": rep["n_unextracted"]["rate"],
        "truncation_rate": rep["n_truncated"]["rate"],
        "infra_error_rate": rep["infra_errors"]["rate"],
        "timeout_rate": rep["timeouts"]["rate"],
        "grader_error_rate": rep["grader_errors"]["rate"],
        "output_tokens": rep["output_tokens_mean"]["value"],
    }
    for name, want in pairs.items():
        assert panel[name]["baseline"] == want, name
        assert want is not None and want > 0
    # the paired effect of a health metric is exactly the difference of the pooled rates
    res = compare_runs(other, run, metric="unextracted_rate", n_resamples=500).tasks[0]
    assert res.unjudged["difference"] > 0.02 and not res.forced_inconclusive  # rates: no bound
    assert -res.comparison.effect == pytest.approx(
        res.health["unextracted_rate"]["candidate"] - res.health["unextracted_rate"]["baseline"],
        abs=1e-12,
    )
    # the gate's absolute limit reads the same number
    policy = tmp_path / "p.yaml"
    policy.write_text("health:\n  unextracted_rate: {max: 0.5}\n  timeout_rate: {max: 0.5}\n")
    code, md, _ = run_main(capsys, "gate", run, "--baseline", other, "--policy", policy)
    assert code == 0
    assert f"| unextracted_rate <= 0.5 | {rep['n_unextracted']['rate']:.4f} | ok |" in md
    assert f"| timeout_rate <= 0.5 | {rep['timeouts']['rate']:.4f} | ok |" in md


def test_compare_metric_accepts_exactly_what_reports_print(tmp_path, capsys):
    from rolleval import metrics
    from rolleval._report import _build as report

    assert report.DEFAULT_TAUS is metrics.DEFAULT_TAUS
    run = write_synthetic_run(tmp_path / "r", n_problems=30, n_rollouts=4, rng=2).path
    assert main(["report", str(run)]) == 0
    capsys.readouterr()
    names = json.loads((run / "report.json").read_text())["tasks"][TASK]["metrics"]
    for name in names:
        res = compare_runs(run, run, metric=name, n_resamples=200)
        assert res.metric == name
    assert compare_runs(run, run, metric="self-consistency", n_resamples=200).metric == (
        "self_consistency"
    )
    assert compare_runs(run, run, metric="PASS@2", n_resamples=200).metric == "pass@2"
    code, _o, err = run_main(capsys, "compare", run, run, "--metric", "pass@x")
    assert code == 2 and "valid forms" in err


def test_a_timeout_is_a_failure_in_every_metric_family(tmp_path, capsys):
    # per problem, each family against its scalar estimator with timeouts entered as
    # failures: pass@k from (n, c) with n counting timeouts, maj@n and self-consistency
    # with a timeout as a vote for nothing, consecutive windows failed by a timeout
    from rolleval.metrics import majority_vote, pass_at_k, window_pass_hat_k
    from rolleval.rundir._table import STATUS_CODES, load_task_table

    run = write_synthetic_run(
        tmp_path / "r", n_problems=40, n_rollouts=6, rng=3, p_infra_error=0.1
    ).path
    assert _to_timeouts(run, 0.4, seed=1, only_wrong=False) > 20
    assert main(["report", str(run)]) == 0
    capsys.readouterr()
    metrics = json.loads((run / "report.json").read_text())["tasks"][TASK]["metrics"]
    table = load_task_table(_task_dir(run))
    timeout = table.r_status == STATUS_CODES["timeout"]
    want: dict[str, list[float]] = {k: [] for k in ("pass@4", "maj@n", "sc", "cw2")}
    for i in range(table.n_problems):
        sel = (table.r_problem == i) & (table.r_gradable | timeout)
        n, c = int(sel.sum()), int((sel & table.r_correct).sum())
        if n >= 4:
            want["pass@4"].append(pass_at_k(n, c, 4))
        if n:
            clusters = [
                None if (t or cl < 0) else int(cl)
                for cl, t in zip(table.r_cluster[sel], timeout[sel], strict=True)
            ]
            vote = majority_vote(clusters, [bool(x) for x in table.r_correct[sel]])
            want["maj@n"].append(float(vote.correct))
            want["sc"].append(vote.self_consistency)
        rows = table.r_problem == i
        trials = [
            {"run_index": int(j), "passed": bool(ok), "excluded": not bool(g or t)}
            for j, ok, g, t in zip(
                table.r_index[rows], table.r_correct[rows], table.r_gradable[rows], timeout[rows]
            )
        ]
        w = window_pass_hat_k(trials, 2)
        if w is not None:
            want["cw2"].append(w)
    for key, name in (
        ("pass@4", "pass@4"),
        ("maj@n", "maj@n"),
        ("sc", "self_consistency"),
        ("cw2", "consecutive-pass^2"),
    ):
        assert metrics[name]["denominator"] == len(want[key]), name
        assert metrics[name]["value"] == pytest.approx(float(np.mean(want[key])), abs=1e-12), name
