"""`rolleval run --baseline BASE --until-decided` against a real server on 127.0.0.1."""

from __future__ import annotations

import json
import re

import pytest

from conftest import call_in_thread, run_config, write_math_task
from rolleval import run_eval
from rolleval._runner import SequentialOptions
from rolleval.errors import UsageError
from rolleval.records import SCHEMA_VERSION
from rolleval.testing import OpenAIServer

N_PROBLEMS = 60


def _responder(right_share: float):
    """Right when (seed % 100) < 100 * right_share, so the share is known in advance."""

    def answer(request):
        a, b = map(
            int, re.search(r"What is (\d+)\+(\d+)\?", request["messages"][-1]["content"]).groups()
        )
        right = request["seed"] % 100 < 100 * right_share
        return f"The answer is \\boxed{{{a + b if right else a + b + 1}}}.", "stop"

    return answer


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """BASE: every rollout right (made once for the module; the tests only read it)."""
    where = tmp_path_factory.mktemp("base")
    data = write_math_task(where / "sums.jsonl", N_PROBLEMS)
    with OpenAIServer(responder=_responder(1.0)) as srv:
        run_eval(run_config(srv, data, n_rollouts=2, seed=1), where / "base", progress=False)
    return data, where / "base"


def _run(tmp_path, data, base, right_share, **options):
    with OpenAIServer(responder=_responder(right_share)) as srv:
        out = run_eval(
            run_config(srv, data, n_rollouts=2, seed=5),
            tmp_path / "cand",
            progress=False,
            sequential=SequentialOptions(baseline=base, **options),
        )
        return out, srv.completion_requests


def test_a_clear_regression_stops_early_and_records_the_design(tmp_path, base):
    data, base_dir = base
    out, requests = _run(tmp_path, data, base_dir, 0.0, round_problems=5)
    # every d is -1: the sequence at alpha = 0.05 falls below -0.02 within a few problems
    seq = out.sequential
    task = seq["tasks"]["sums"]
    assert seq["verdict"] == "regression" and out.exit_code == 1
    assert task["verdict"] == "regression" and task["stopped_after"] < N_PROBLEMS
    assert requests == 2 * task["stopped_after"]  # only the visited problems were requested
    assert sorted(task["order"]) == [f"sums/s{i:02d}" for i in range(N_PROBLEMS)]
    assert [look["problems"] for look in task["looks"]] == list(
        range(5, task["stopped_after"] + 1, 5)
    )
    assert task["looks"][-1]["upper"] <= -0.02 < task["looks"][-2]["upper"]
    manifest = json.loads((tmp_path / "cand" / "manifest.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION  # 3 added the sequential design
    assert manifest["sequential"]["design"] == "sequential"
    assert manifest["sequential"]["order_seed"] == 5 and manifest["sequential"]["alpha"] == 0.05
    assert "stopped after" in manifest["sequential"]["stopping_reason"]


def test_a_run_from_a_thread_reaches_its_verdict(tmp_path, base):
    """From a thread other than the main thread (grading_workers 0, as every run here), the
    math judgements are real, so the clear regression is found early as on the main thread
    (before the fix: every rollout a grader error, no paired difference, the budget spent,
    inconclusive)."""
    data, base_dir = base
    out, requests = call_in_thread(_run, tmp_path, data, base_dir, 0.0, round_problems=5)
    task = out.sequential["tasks"]["sums"]
    assert out.sequential["verdict"] == "regression" and out.exit_code == 1
    assert task["stopped_after"] < N_PROBLEMS and requests == 2 * task["stopped_after"]
    health = out.report["tasks"]["sums"]["health"]
    assert health["grader_errors"]["count"] == 0


def test_the_order_is_seeded(tmp_path, base):
    data, base_dir = base
    first, _ = _run(tmp_path, data, base_dir, 0.0, round_problems=5)
    order = first.sequential["tasks"]["sums"]["order"]
    import shutil

    shutil.rmtree(tmp_path / "cand")
    again, _ = _run(tmp_path, data, base_dir, 0.0, round_problems=5)
    assert again.sequential["tasks"]["sums"]["order"] == order
    assert order != sorted(order)


def test_the_budget_gives_inconclusive_exit_3(tmp_path, base):
    data, base_dir = base
    out, requests = _run(tmp_path, data, base_dir, 0.5, max_problems=8, round_problems=4)
    task = out.sequential["tasks"]["sums"]
    assert task["verdict"] == "inconclusive" and out.exit_code == 3
    assert task["stopped_after"] == 8 and requests == 16
    assert task["reason"].startswith("budget spent")


def test_baseline_problems_must_be_the_candidates(tmp_path, base):
    _data, base_dir = base
    (tmp_path / "other").mkdir()
    other = write_math_task(tmp_path / "other" / "sums.jsonl", N_PROBLEMS - 1)
    with pytest.raises(UsageError, match="BASE's problems must all be in the run"):
        _run(tmp_path, other, base_dir, 0.0)
    assert not (tmp_path / "cand").exists()


def test_compare_gives_the_recorded_sequential_verdict_and_refuses_another_baseline(tmp_path, base):
    from conftest import run_cli

    data, base_dir = base
    out, _ = _run(tmp_path, data, base_dir, 0.0, round_problems=5)
    stopped = out.sequential["tasks"]["sums"]["stopped_after"]
    res = run_cli("compare", str(base_dir), str(tmp_path / "cand"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "sequential" in res.stdout
    assert f"stopped after {stopped} of {N_PROBLEMS} problems: regression" in res.stdout
    # what changed beside what moved (issue 21): the two runs differ in their run seed
    assert res.stdout.count("run seed: 1 -> 5") == 1
    res = run_cli("compare", str(base_dir), str(tmp_path / "cand"), "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["method"].startswith("sequential") and doc["verdict"] == "regression"
    changes = doc["what_changed"]["changes"]
    assert {"setting": "run seed", "baseline": "1", "candidate": "5"} in changes
    res = run_cli("compare", str(base_dir), str(tmp_path / "cand"), "--format", "md")
    assert res.stdout.count("run seed: 1 -> 5") == 1
    # against another baseline (the candidate run itself as BASE): refused, exit 2
    res = run_cli("compare", str(tmp_path / "cand"), str(tmp_path / "cand"))
    assert res.returncode == 2 and "optional stopping" in res.stderr
    res = run_cli("compare", str(tmp_path / "cand"), str(base_dir))
    assert res.returncode == 2 and "optional stopping" in res.stderr
    res = run_cli("gate", str(tmp_path / "cand"), "--baseline", str(base_dir))
    assert res.returncode == 2 and "optional stopping" in res.stderr
    res = run_cli("baseline", "save", str(tmp_path / "cand"), "--out", str(tmp_path / "b.json"))
    assert res.returncode == 2 and "cannot serve as a baseline" in res.stderr
    assert not (tmp_path / "b.json").exists()


def test_report_and_html_say_where_the_run_stopped(tmp_path, base):
    from conftest import run_cli

    data, base_dir = base
    out, _ = _run(tmp_path, data, base_dir, 0.0, round_problems=5)
    stopped = out.sequential["tasks"]["sums"]["stopped_after"]
    line = f"stopped after {stopped} of {N_PROBLEMS} problems: regression"
    res = run_cli("report", str(tmp_path / "cand"), "--html", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stderr
    assert line in res.stdout
    assert line in (tmp_path / "r.html").read_text()
    assert json.loads((tmp_path / "cand" / "report.json").read_text())["sequential"]["verdict"] == (
        "regression"
    )


def test_cli_run_until_decided_exits_with_the_verdict(tmp_path, base):
    from conftest import run_cli, write_run_yaml

    data, base_dir = base
    with OpenAIServer(responder=_responder(0.0)) as srv:
        cfg = write_run_yaml(tmp_path / "run.yaml", srv, data, n_rollouts=2)
        args = ["run", "--config", str(cfg), "--out", str(tmp_path / "cli"), "--no-progress"]
        res = run_cli(*args, "--baseline", str(base_dir), "--until-decided", "--round-size", "5")
        assert res.returncode == 1, res.stderr
        assert "problems: regression" in res.stdout and "stopped after" in res.stdout
        res = run_cli(*args[:3], "--out", str(tmp_path / "cli2"), "--threshold", "0.05")
        assert res.returncode == 2 and "only with --until-decided" in res.stderr
        assert not (tmp_path / "cli2").exists()


def test_settings_compare_would_refuse_are_refused_before_any_request(tmp_path, base):
    data, base_dir = base
    with OpenAIServer(responder=_responder(0.0)) as srv:
        with pytest.raises(UsageError, match="denominator_policy differs"):
            run_eval(
                run_config(srv, data, n_rollouts=2, seed=5, denominator_policy="requested"),
                tmp_path / "cand",
                progress=False,
                sequential=SequentialOptions(baseline=base_dir),
            )
        assert srv.completion_requests == 0
    assert not (tmp_path / "cand").exists()
