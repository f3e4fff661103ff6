"""LLM-judged answers (``type: judge``): a second real OpenAI-protocol server grades; its
reply, its token spend and its failures land where they belong, and a changed judge
refuses the comparison."""

from __future__ import annotations

import json
import re

import pytest

from conftest import run_cli
from rolleval.errors import UsageError
from rolleval.grading import JudgeGrader, make_grader, parse_judge_reply
from rolleval.testing import Fault, OpenAIServer


def test_parse_judge_reply():
    assert parse_judge_reply("thinking...\nVERDICT: CORRECT") is True
    assert parse_judge_reply("VERDICT: correct? no.\nVerdict: **INCORRECT**") is False
    assert parse_judge_reply("I think it is right") is None
    assert parse_judge_reply("") is None


def test_identity_covers_model_prompt_and_sampling_not_the_endpoint():
    base = {"type": "judge", "endpoint": "http://127.0.0.1:1/v1", "model": "j"}
    g = make_grader(base)
    assert make_grader(g.spec) == g
    assert make_grader({**base, "endpoint": "http://10.0.0.1:9/v1"}).identity == g.identity
    for change in (
        {"model": "k"},
        {"prompt": "Grade {answer}"},
        {"temperature": 0.5},
        {"max_tokens": 9},
    ):
        assert make_grader({**base, **change}).identity != g.identity, change
    with pytest.raises(UsageError, match="endpoint"):
        make_grader({"type": "judge", "model": "j"})
    with pytest.raises(UsageError, match=r"\{answer\}"):
        make_grader({**base, "prompt": "no placeholder"})


def _judge(request: dict) -> str:
    message = request["messages"][-1]["content"]
    gold = re.search(r"Reference answer:\n(.*)\n", message).group(1)
    answer = re.search(r"Candidate answer:\n(.*)\n", message).group(1)
    assert "What is" in message  # the question reaches the judge
    return f"The reference is {gold}. VERDICT: {'CORRECT' if gold in answer else 'INCORRECT'}"


def _candidate(request: dict) -> str:
    i = int(re.search(r"What is (\d+)", request["messages"][-1]["content"]).group(1))
    return f"It is {2 * i if i % 2 == 0 else 2 * i + 1}."


def _setup(tmp_path, cand, judge, prompt=None):
    rows = [
        {"id": f"q{i}", "question": f"What is {i} plus {i}?", "answer": str(2 * i)}
        for i in range(4)
    ]
    data = tmp_path / "qs.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    grader = f'{{endpoint: "{judge.base_url}", model: {judge.model}'
    grader += f", prompt: {json.dumps(prompt)}}}" if prompt else "}"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        f"model: {cand.model}\nendpoints: [{cand.base_url}]\nn_rollouts: 2\nseed: 3\ntasks:\n"
        f"  - {{name: sums, path: {data}, type: judge, id_field: id, grader: {grader}}}\n"
    )
    return str(cfg)


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_judged_run_records_reply_spend_and_failures(tmp_path):
    with (
        OpenAIServer(responder=_candidate) as cand,
        OpenAIServer(responder=_judge, model="judge-m") as judge,
    ):
        cfg = _setup(tmp_path, cand, judge)
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "a"), "--no-progress")
        assert res.returncode == 0, res.stderr
        # the judge fails: HTTP 400 for every call (not retried), or replies without a judgement
        judge.faults = lambda request: Fault.http_status(400)
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "b"), "--no-progress")
        assert res.returncode == 0, res.stderr
        judge.faults = None
        judge.responder = lambda request: "I am not sure."
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "c"), "--no-progress")
        assert res.returncode == 0, res.stderr
        judge.responder = _judge
        res = run_cli("regrade", str(tmp_path / "a"))
        assert res.returncode == 0, res.stderr
        assert "sums: 8 of 8 rollouts graded, 0 judgements changed" in res.stdout

    folder = tmp_path / "a" / "tasks" / "sums"
    judgements = _lines(folder / "judgements.jsonl")
    assert len(judgements) == 8
    for j in judgements:
        even = int(j["problem_id"][-1]) % 2 == 0
        assert j["correct"] is even and j["judge_raw"].endswith("CORRECT")
        assert j["grader_usage"]["prompt_tokens"] > 0
    profile = json.loads((folder / "profile.json").read_text())
    # the judge's spend, apart from the candidate's: the test server counts words
    assert profile["grader_tokens"]["calls"] == 8
    assert profile["grader_tokens"]["completion_total"] == sum(
        j["grader_usage"]["completion_tokens"] for j in judgements
    )
    assert profile["tokens"]["completion_total"] == 8 * 3  # "It is N." per rollout

    for run in ("b", "c"):
        judged = _lines(tmp_path / run / "tasks" / "sums" / "judgements.jsonl")
        assert all(j.get("correct") is None and j["grader_error"] for j in judged)
        report = json.loads(
            run_cli("report", str(tmp_path / run), "--format", "json", "--no-write").stdout
        )["tasks"]["sums"]
        assert report["metrics"]["pass@1"]["value"] is None  # no wrong answers invented
    assert all(
        "VERDICT" in j["grader_error"]
        for j in _lines(tmp_path / "c" / "tasks" / "sums" / "judgements.jsonl")
    )
    assert all(
        j["judge_raw"] == "I am not sure."
        for j in _lines(tmp_path / "c" / "tasks" / "sums" / "judgements.jsonl")
    )


def test_a_changed_judge_refuses_the_comparison(tmp_path):
    with (
        OpenAIServer(responder=_candidate) as cand,
        OpenAIServer(responder=_judge, model="judge-m") as judge,
    ):
        res = run_cli(
            "run",
            "--config",
            _setup(tmp_path, cand, judge),
            "--out",
            str(tmp_path / "a"),
            "--no-progress",
        )
        assert res.returncode == 0, res.stderr
        other = _setup(
            tmp_path,
            cand,
            judge,
            prompt="Question: {question}\nReference answer:\n{reference}\nCandidate answer:\n{answer}\nSay VERDICT: CORRECT or INCORRECT.",
        )
        res = run_cli("run", "--config", other, "--out", str(tmp_path / "b"), "--no-progress")
        assert res.returncode == 0, res.stderr
    res = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "a"), "--format", "json")
    assert res.returncode != 2, res.stderr
    res = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert res.returncode == 2 and "grader" in res.stderr and "Traceback" not in res.stderr


def test_judge_grader_direct_call_against_the_test_server():
    with OpenAIServer(responder=_judge, model="judge-m") as judge:
        g = JudgeGrader(judge.base_url, "judge-m")
        ref = {"question": "What is 2 plus 2?", "reference": "4"}
        judgements = g.grade_problem(ref, [(0, "4"), (1, "five"), (2, "  ")])
    assert [judgements[i].correct for i in range(3)] == [True, False, False]
    assert judgements[2].extracted is None and judgements[2].judge_raw is None  # not asked
    assert judgements[0].cluster == 0 and judgements[1].cluster == 1
