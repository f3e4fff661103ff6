"""Code and multi-metric tasks end to end: ``rolleval run`` against the real test server,
then ``report``, ``show``, ``regrade`` and ``compare`` through the real CLI."""

from __future__ import annotations

import json

import pytest

from conftest import builtin_rows, run_cli, write_builtin_yaml
from rolleval.testing import OpenAIServer


def _content(request: dict) -> str:
    return request["messages"][-1]["content"]


def _report(run) -> dict:
    res = run_cli("report", str(run), "--format", "json", "--no-write")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["tasks"]


def test_code_tasks_run_report_show_regrade_compare(tmp_path):
    rows = [("humaneval", r) for r in builtin_rows("humaneval")] + [
        ("mbpp", r) for r in builtin_rows("mbpp")
    ]
    # the first three problems of each task in canonical (sorted id) order
    first = {
        task: sorted(r["id"] for t, r in rows if t == task)[0] for task in ("humaneval", "mbpp")
    }

    def responder(broken: bool):
        def answer(request: dict) -> str:
            content = _content(request)
            for task, row in rows:
                if row["question"].strip() in content and (
                    task == "humaneval" or row["example_test"] in content
                ):
                    code = row["canonical_solution"]
                    if broken and row["id"] == first[task]:
                        code = code.replace("return", "return None and", 1)
                        code += "\n\nraise SystemExit(1)\n"
                    return f"Here is the solution.\n\n```python\n{code}\n```\n"
            return "I do not know this problem."

        return answer

    with OpenAIServer(responder=responder(False)) as srv:
        cfg = write_builtin_yaml(
            tmp_path / "run.yaml", srv, ["humaneval", "mbpp"], n_rollouts=2, limit=3, seed=3
        )
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "base"), "--no-progress")
        assert res.returncode == 0, res.stderr
        srv.responder = responder(True)
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "cand"), "--no-progress")
        assert res.returncode == 0, res.stderr

    base, cand = _report(tmp_path / "base"), _report(tmp_path / "cand")
    for task in ("humaneval", "mbpp"):
        assert base[task]["score_key"] == "correct"
        assert base[task]["metrics"]["pass@1"]["value"] == 1.0
        assert base[task]["rollouts"]["correct"] == 6
        # the first problem's two rollouts fail: 4 of 6 correct
        assert cand[task]["rollouts"]["correct"] == 4
        assert cand[task]["metrics"]["pass@1"]["value"] == pytest.approx(2 / 3)
        assert cand[task]["health"]["grader_errors"]["count"] == 0
    # every judgement metric is reported: MBPP runs 3 tests per problem
    assert base["mbpp"]["metrics"]["metrics.tests_run"]["value"] == 3.0
    assert base["mbpp"]["metrics"]["metrics.tests_passed"]["value"] == 3.0
    assert cand["mbpp"]["metrics"]["metrics.tests_passed"]["value"] < 3.0

    res = run_cli("show", str(tmp_path / "cand"), "--task", "mbpp", "--failures")
    assert res.returncode == 0, res.stderr
    assert "failure=crash" in res.stdout and "tests_run=" in res.stdout

    judgements = (tmp_path / "cand" / "tasks" / "humaneval" / "judgements.jsonl").read_text()
    summaries = [json.loads(json.loads(line)["judge_raw"]) for line in judgements.splitlines()]
    assert {s["failure"] for s in summaries} == {None, "crash"}
    assert all(s["isolated"] for s in summaries)

    res = run_cli("regrade", str(tmp_path / "cand"))
    assert res.returncode == 0, res.stderr
    assert "humaneval: 6 of 6 rollouts graded, 0 judgements changed" in res.stdout

    out = tmp_path / "cmp.json"
    res = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "cand"), "--output", str(out))
    assert res.returncode != 2, res.stderr
    result = json.loads(out.read_text())
    deltas = {t["task"]: t["effect"] for t in result["tasks"]}
    assert deltas == pytest.approx({"humaneval": -1 / 3, "mbpp": -1 / 3})
    res = run_cli(
        "compare",
        str(tmp_path / "base"),
        str(tmp_path / "cand"),
        "--task",
        "mbpp",
        "--metric",
        "metrics.tests_passed",
        "--threshold",
        "0.5",
        "--format",
        "json",
    )
    assert res.returncode != 2, res.stderr
    assert json.loads(res.stdout)["tasks"][0]["metric"] == "metrics.tests_passed"


def test_multi_metric_task_run_report_compare(tmp_path):
    rows = builtin_rows("drop")

    def responder(partial: bool):
        def answer(request: dict) -> str:
            content = _content(request)
            for row in rows:
                if row["question"] in content and row["passage"][:80] in content:
                    gold = row["answer"][0].split(" | ")[0]
                    return f"{gold} or so" if partial else gold
            return "unknown"

        return answer

    with OpenAIServer(responder=responder(False)) as srv:
        cfg = write_builtin_yaml(
            tmp_path / "run.yaml", srv, ["drop"], n_rollouts=2, limit=4, seed=3
        )
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "base"), "--no-progress")
        assert res.returncode == 0, res.stderr
        srv.responder = responder(True)
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "cand"), "--no-progress")
        assert res.returncode == 0, res.stderr

    base, cand = _report(tmp_path / "base")["drop"], _report(tmp_path / "cand")["drop"]
    assert base["score_key"] == "metrics.f1"
    assert {"pass@1", "metrics.em", "metrics.f1"} <= set(base["metrics"])
    assert base["metrics"]["metrics.em"]["value"] == base["metrics"]["metrics.f1"]["value"]
    # the headline (pass@1 under score_key metrics.f1) is the mean F1
    assert cand["metrics"]["pass@1"]["value"] == cand["metrics"]["metrics.f1"]["value"]
    assert cand["metrics"]["metrics.em"]["value"] == 0.0  # "<gold> or so" never matches exactly
    assert 0.0 < cand["metrics"]["metrics.f1"]["value"] < 1.0

    text = run_cli("report", str(tmp_path / "cand"), "--no-write")
    assert "metrics.em" in text.stdout and "metrics.f1" in text.stdout

    for metric, threshold in (("pass@1", []), ("metrics.em", ["--threshold", "0.05"])):
        res = run_cli(
            "compare",
            str(tmp_path / "base"),
            str(tmp_path / "cand"),
            "--metric",
            metric,
            *threshold,
            "--format",
            "json",
        )
        assert res.returncode != 2, res.stderr
        task = json.loads(res.stdout)["tasks"][0]
        assert task["metric"] == metric and task["effect"] < 0

    res = run_cli("show", str(tmp_path / "cand"), "--limit", "1")
    assert res.returncode == 0 and "em=0" in res.stdout and "f1=" in res.stdout

    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "metrics:\n  metrics.em: {threshold: 0.05}\n  metrics.f1: {threshold: 0.05}\n"
    )
    res = run_cli(
        "gate",
        str(tmp_path / "cand"),
        "--baseline",
        str(tmp_path / "base"),
        "--policy",
        str(policy),
        "--output",
        str(tmp_path / "gate.json"),
    )
    assert res.returncode in (0, 1, 3), res.stderr  # evaluated, whatever the verdict
    assert "metrics.em" in res.stdout and "metrics.f1" in res.stdout
