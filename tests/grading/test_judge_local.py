"""LLM-judged answers with the real embedded model as the judge: SmolLM2-135M served by
llama.cpp (``rolleval._local._serve``) on 127.0.0.1 is the judge endpoint of a real
``rolleval run`` of a ``type: judge`` task.

What is deterministic here, and what is therefore asserted:

* The candidate is the scripted test server (:class:`rolleval.testing.OpenAIServer`): its
  answers and token counts are exact, so the candidate's spend is known in advance.
* The judge runs greedy (temperature 0, seed 0) on one machine, but llama-cpp-python reuses
  the KV cache of the previous prompt's common prefix and the grader sends up to 8 requests
  at once in an order its threads decide; so the same question can get a different reply in
  a run and in its regrade. Which judgement the model gives, and whether its reply holds a
  parseable ``VERDICT:`` line at all (the 135M model often writes none), is never asserted.
* Asserted is what rolleval does with whatever reply comes back: one judgement per rollout;
  the full reply stored; a reply without a judgement classified as a grader error (never a
  wrong answer), checked against the grader's own parser on the stored reply; the judge's
  spend summed apart from the candidate's; the judge in the grader identity, so a changed
  judge prompt refuses ``compare``; ``show``, ``report`` and ``regrade`` reading the run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import assert_run_valid, run_cli
from rolleval._local._launcher import LOCAL_MODEL_NAME
from rolleval.grading import JudgeGrader, parse_judge_reply
from rolleval.grading._judge import DEFAULT_JUDGE_PROMPT
from rolleval.testing import OpenAIServer

pytestmark = pytest.mark.local_model

N_PROBLEMS, N_ROLLOUTS, JUDGE_MAX_TOKENS = 4, 2, 32
OTHER_PROMPT = (
    "Question: {question}\nReference: {reference}\nAnswer: {answer}\n"
    "Does the answer match the reference? Reply VERDICT: CORRECT or VERDICT: INCORRECT."
)


def _answer(request: dict) -> str:
    """The candidate: right on even-numbered problems, wrong on odd ones (exact tokens: 3)."""
    i = int(re.search(r"What is (\d+)", request["messages"][-1]["content"]).group(1))
    return f"It is {2 * i if i % 2 == 0 else 2 * i + 1}."


@pytest.fixture(scope="module")
def candidate():
    with OpenAIServer(responder=_answer) as server:
        yield server


def _judge_config(
    folder: Path, candidate: OpenAIServer, judge_url: str, prompt: str | None
) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"What is {i} plus {i}?", "answer": str(2 * i)}
        for i in range(N_PROBLEMS)
    ]
    data = folder / "qs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # a generous timeout: the server answers one request at a time, and on a loaded CPU a
    # queued judge request can wait minutes (a timeout would be a grader error with no reply)
    grader = {
        "endpoint": judge_url,
        "model": LOCAL_MODEL_NAME,
        "max_tokens": JUDGE_MAX_TOKENS,
        "timeout_s": 900,
    }
    if prompt is not None:
        grader["prompt"] = prompt
    task = {"name": "sums", "path": str(data), "type": "judge", "id_field": "id", "grader": grader}
    cfg = folder / "run.yaml"
    cfg.write_text(
        json.dumps(  # JSON is YAML
            {
                "model": candidate.model,
                "endpoints": [candidate.base_url],
                "n": N_ROLLOUTS,
                "seed": 3,
                "tasks": [task],
            }
        )
    )
    return cfg


def _run(folder: Path, candidate: OpenAIServer, judge_url: str, prompt: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = _judge_config(folder, candidate, judge_url, prompt)
    res = run_cli("run", "--config", str(cfg), "--out", str(folder / "run"), "--no-progress")
    assert res.returncode == 0, res.stderr
    return folder / "run"


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory, candidate, embedded_server) -> Path:
    """A run of 4 problems x 2 rollouts judged by the embedded model (default prompt)."""
    return _run(tmp_path_factory.mktemp("judged"), candidate, embedded_server.base_url)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _judgements(run: Path, name: str = "judgements.jsonl") -> list[dict]:
    return _lines(run / "tasks" / "sums" / name)


def _check_classification(judgements: list[dict]) -> None:
    """Each judgement's judgement is what the grader's own parser reads in the stored reply."""
    for j in judgements:
        assert j["status"] == "ok" and j["extracted"], j  # every answer was asked
        reply = j["judge_raw"]
        assert isinstance(reply, str), j
        judgement = parse_judge_reply(reply)
        if judgement is None:  # no judgement in the reply: a grader error, not a wrong answer
            assert j.get("correct") is None and "VERDICT" in j["grader_error"], j
        else:
            assert j["correct"] is judgement and j.get("grader_error") is None, j


def _expected_pass1(judgements: list[dict]) -> float | None:
    """pass@1 from the judgements: per problem correct / judged (grader errors left out),
    averaged over the problems with a judged rollout; ``None`` when none has one."""
    per: dict[str, list[bool]] = {}
    for j in judgements:
        if j.get("grader_error") is None:
            per.setdefault(j["problem_id"], []).append(j["correct"])
    if not per:
        return None
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def _report(run: Path) -> dict:
    res = run_cli("report", str(run), "--format", "json", "--no-write")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["tasks"]["sums"]


def _check_report(run: Path, judgements: list[dict]) -> None:
    rep = _report(run)
    errors = sum(1 for j in judgements if j.get("grader_error"))
    assert rep["health"]["grader_errors"]["count"] == errors
    expected = _expected_pass1(judgements)
    value = rep["metrics"]["pass@1"]["value"]
    assert value is None if expected is None else value == pytest.approx(expected, abs=1e-12)


def test_every_rollout_has_one_judgement_holding_the_judges_full_reply(judged_run):
    counts = assert_run_valid(judged_run)
    rollouts = _lines(judged_run / "tasks" / "sums" / "rollouts.jsonl")
    judgements = _judgements(judged_run)
    assert counts["judgements.jsonl"] == len(judgements) == N_PROBLEMS * N_ROLLOUTS
    keys = [(j["problem_id"], j["index"]) for j in judgements]
    assert len(set(keys)) == len(keys) == len(rollouts)
    assert set(keys) == {(r["problem_id"], r["index"]) for r in rollouts}
    _check_classification(judgements)
    for j in judgements:
        usage = j["grader_usage"]
        # the rendered prompt reached the judge: a BPE tokenizer splits at whitespace at
        # least, so it has at least as many tokens as the rendered message has words
        i = int(j["problem_id"].rsplit("q", 1)[1])
        rendered = JudgeGrader("http://x/v1", "m").render(
            f"What is {i} plus {i}?", str(2 * i), j["extracted"]
        )
        assert usage["prompt_tokens"] >= len(rendered.split()), j
        # the judge's max_tokens reached it; a reply has at least one token
        assert 1 <= usage["completion_tokens"] <= JUDGE_MAX_TOKENS, j
        assert j["judge_raw"].strip(), j  # the judge said something, and it is stored


def test_judge_spend_is_summed_apart_from_the_candidates(judged_run):
    judgements = _judgements(judged_run)
    profile = json.loads((judged_run / "tasks" / "sums" / "profile.json").read_text())
    spend = profile["grader_tokens"]
    assert spend["calls"] == len(judgements)  # unparseable replies cost tokens too
    for key in ("prompt_tokens", "completion_tokens"):
        total = sum(j["grader_usage"][key] for j in judgements)
        assert spend[key.replace("_tokens", "_total")] == total
    # the candidate's tokens are the scripted server's: "It is N." is 3 words per rollout
    assert profile["tokens"]["completion_total"] == 3 * N_PROBLEMS * N_ROLLOUTS
    rollouts = _lines(judged_run / "tasks" / "sums" / "rollouts.jsonl")
    assert profile["tokens"]["prompt_total"] == sum(r["usage"]["prompt_tokens"] for r in rollouts)


def test_report_and_show_read_the_judged_run(judged_run):
    judgements = _judgements(judged_run)
    _check_report(judged_run, judgements)
    res = run_cli("show", str(judged_run), "--format", "jsonl")
    assert res.returncode == 0, res.stderr
    shown = {
        (item["problem_id"], r["index"]): r
        for item in map(json.loads, res.stdout.splitlines())
        for r in item["rollouts"]
    }
    assert len(shown) == len(judgements)
    for j in judgements:
        r = shown[(j["problem_id"], j["index"])]
        assert r["judge_raw"] == j["judge_raw"] and r["grader_error"] == j.get("grader_error")
    res = run_cli("show", str(judged_run))
    assert res.returncode == 0, res.stderr
    errors = sum(1 for j in judgements if j.get("grader_error"))
    assert res.stdout.count("[grader error: judge reply has no") == errors
    assert res.stdout.count("--- rollout ") == len(judgements)


def test_regrade_asks_the_embedded_judge_again(judged_run, tmp_path):
    run = tmp_path / "copy"
    shutil.copytree(judged_run, run)
    before = _judgements(run)
    profile = (run / "tasks" / "sums" / "profile.json").read_bytes()
    res = run_cli("regrade", str(run))
    assert res.returncode == 0, res.stderr
    after = _judgements(run)
    assert _judgements(run, "judgements.prev.jsonl") == before
    assert len(after) == len(before)
    _check_classification(after)
    old = {(j["problem_id"], j["index"]): j for j in before}
    changed = sum(
        1
        for j in after
        if (
            old[(j["problem_id"], j["index"])].get("correct"),
            old[(j["problem_id"], j["index"])]["extracted"],
        )
        != (j.get("correct"), j["extracted"])
    )
    total = N_PROBLEMS * N_ROLLOUTS
    assert f"sums: {total} of {total} rollouts graded, {changed} judgements changed" in res.stdout
    _check_report(run, after)
    # the profile keeps the spend of the run's own grading (docs/tasks.md)
    assert (run / "tasks" / "sums" / "profile.json").read_bytes() == profile
    assert_run_valid(run)


def test_judge_identity_holds_model_prompt_sampling_and_a_changed_prompt_refuses_compare(
    judged_run, candidate, embedded_server, tmp_path
):
    settings = json.loads((judged_run / "tasks" / "sums" / "task.json").read_text())
    spec = settings["grader"]
    assert (spec["model"], spec["prompt"]) == (LOCAL_MODEL_NAME, DEFAULT_JUDGE_PROMPT)
    assert (spec["temperature"], spec["max_tokens"]) == (0.0, JUDGE_MAX_TOKENS)
    identity = JudgeGrader(
        "http://elsewhere:1/v1", LOCAL_MODEL_NAME, max_tokens=JUDGE_MAX_TOKENS
    ).identity
    assert {j["grader"] for j in _judgements(judged_run)} == {identity}
    assert settings["grader_identity"] == identity

    other = _run(tmp_path / "other", candidate, embedded_server.base_url, OTHER_PROMPT)
    other_ids = {j["grader"] for j in _judgements(other)}
    assert len(other_ids) == 1 and other_ids != {identity}
    _check_classification(_judgements(other))
    res = run_cli("compare", str(judged_run), str(judged_run), "--format", "json")
    assert res.returncode != 2, res.stderr
    res = run_cli("compare", str(judged_run), str(other))
    assert res.returncode == 2, res.stdout
    assert "grader" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
