"""Reasoning models (issue 19): the thought kept apart from the answer, and a budget run out
mid-thought counted as a truncated wrong answer, never an outage.

Every wire shape goes through a real HTTP server on 127.0.0.1 (:class:`OpenAIServer`) and
the real client, runner, MCQ grader and report; each test fails on the code before issue
19 (which recorded null content as an infra error, graded inline thoughts and stored no
thought). Nothing here is random: the server's answers are fixed functions of the problem
and the rollout seed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import complete, make_config
from rolleval import build_config, compare_runs, regrade_run, report_run, run_eval
from rolleval.compare import gate_run
from rolleval.testing import Fault, OpenAIServer

# ---------------------------------------------------------------- the wire, one completion


def _one(responder: Any, **config: Any) -> Any:
    with OpenAIServer(responder=responder) as srv:
        return complete(make_config(srv.base_url, **config))


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_both_thought_fields_are_read(field: str) -> None:
    done = _one(lambda r: {"text": "Answer: B", field: "Let me think. Answer: A? No."})
    assert done.status == "ok" and done.text == "Answer: B"
    assert done.reasoning == "Let me think. Answer: A? No."


def test_reasoning_wins_over_reasoning_content_when_both_are_sent() -> None:
    done = _one(lambda r: {"text": "B", "reasoning": "new", "reasoning_content": "old"})
    assert done.reasoning == "new"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"completion_tokens_details": {"reasoning_tokens": 7}}, 7),  # OpenAI, vLLM
        ({"reasoning_tokens": 5}, 5),  # SGLang
        ({"completion_tokens_details": {"reasoning_tokens": None}}, None),  # vLLM 0.25
        ({}, None),  # llama.cpp: not counted is N/A, never 0
    ],
)
def test_reasoning_tokens_are_read_or_na(usage: dict[str, Any], expected: int | None) -> None:
    done = _one(lambda r: {"text": "B", "reasoning": "hm", "usage": usage})
    assert done.reasoning_tokens == expected
    record = done.to_record("p", 0, seed=1)
    assert record.usage is not None and record.usage.reasoning_tokens == expected


@pytest.mark.parametrize("text", [None, ""])
@pytest.mark.parametrize("finish", ["length", "stop"])
def test_null_or_empty_content_with_a_finish_reason_is_a_completed_rollout(
    text: str | None, finish: str
) -> None:
    """Before issue 19 a null content was 'malformed response' (an infra error)."""
    done = _one(lambda r: {"text": text, "finish_reason": finish, "reasoning": "I think"})
    assert done.status == "ok" and done.error is None
    assert done.text == text and done.finish_reason == finish
    assert done.reasoning == "I think"


def test_a_choice_with_nothing_in_it_is_still_malformed() -> None:
    with OpenAIServer() as srv:
        srv.faults = [Fault.raw({"choices": [{"index": 0, "message": {"content": None}}]})]
        done = complete(make_config(srv.base_url))
    assert done.status == "infra_error"
    assert done.error is not None and "no choices[0].message.content and no finish_reason" in (
        done.error
    )


# ---------------------------------------------------------------- the split


@pytest.mark.parametrize(
    ("text", "reasoning", "answer", "thought_chars", "in_thought"),
    [
        ("B", None, "B", None, False),
        ("<think>Answer: A</think>B", None, "B", 9, False),
        ("<think>a</think>x<think>b</think> B", None, " B", 3, False),  # last close wins
        ("Answer: A, or...</think>\nB", None, "\nB", 16, False),  # closing only
        ("<think>Answer: B", None, None, 9, True),  # unclosed: no answer whatever it holds
        ("<think>done</think>  \n", None, None, 4, True),  # nothing after the thought
        (None, "thinking", None, 8, True),  # null content beside a thought
        ("", None, None, None, False),  # empty, no thought
        ("B", "why", "B", 3, False),
    ],
)
def test_split_thought_rules(
    text: str | None,
    reasoning: str | None,
    answer: str | None,
    thought_chars: int | None,
    in_thought: bool,
) -> None:
    from rolleval.grading import split_thought

    split = split_thought(text, reasoning)
    assert (split.answer, split.thought_chars, split.in_thought) == (
        answer,
        thought_chars,
        in_thought,
    )


def test_split_thought_none_grades_the_text_whole() -> None:
    from rolleval.grading import split_thought

    assert split_thought("<think>Answer: A", None, None).answer == "<think>Answer: A"


def test_an_empty_opening_delimiter_means_the_prompt_opened_the_thought() -> None:
    """Templates that pre-fill <think> in the prompt: a reply cut at the budget holds no tag
    at all; with the default pair it would be graded whole (its letter counted)."""
    from rolleval.grading import split_thought

    cut = "So Answer: B seems right, but let me check"
    assert split_thought(cut).answer == cut  # the default pair cannot tell
    split = split_thought(cut, None, ("", "</think>"))
    assert (split.answer, split.in_thought, split.thought_chars) == (None, True, len(cut))
    done = split_thought("hmm</think>\nB", None, ("", "</think>"))
    assert (done.answer, done.thought_chars) == ("\nB", 3)


def test_other_delimiters() -> None:
    from rolleval.grading import split_thought

    split = split_thought(
        "<|channel|>analysis A<|message|>final: B", None, ("<|channel|>", "<|message|>")
    )
    assert split.answer == "final: B" and split.thought_chars == len("analysis A")


# ---------------------------------------------------------------- runs against the server

LETTERS = "ABCD"
N_PROBLEMS = 6


def _write_mcq(path: Path, n: int = N_PROBLEMS) -> Path:
    rows = [
        {
            "id": f"q{i:03d}",
            "question": f"Question number {i}: which letter?",
            "choices": ["one", "two", "three", "four"],
            "answer": LETTERS[i % 4],
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _gold(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    i = int(re.search(r"Question number (\d+):", content).group(1))
    return LETTERS[i % 4]


def _wrong(letter: str) -> str:
    return LETTERS[(LETTERS.index(letter) + 1) % 4]


def _unit(request: dict[str, Any], salt: str = "") -> float:
    """A fixed number in [0, 1) per (problem, seed): the server's 'coin'."""
    key = f"{request['messages'][-1]['content']}|{request.get('seed')}|{salt}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") / 2**32


def _settings(srv: OpenAIServer, data: Path, **over: Any) -> Any:
    return build_config(
        {
            "model": srv.model,
            "endpoints": [srv.base_url],
            "tasks": [
                {
                    "name": "letters",
                    "path": str(data),
                    "type": "mcq",
                    "id_field": "id",
                    "question_field": "question",
                    "choices_field": "choices",
                    "answer_field": "answer",
                }
            ],
            "n_rollouts": 4,
            "grading_workers": 0,
            "max_retries": 0,
            "timeout_s": 10,
            **over,
        }
    )


def _run(tmp: Path, name: str, responder: Any, **over: Any) -> tuple[Path, list[dict[str, Any]]]:
    data = _write_mcq(tmp / "letters.jsonl")
    out = tmp / name
    with OpenAIServer(responder=responder) as srv:
        run_eval(_settings(srv, data, **over), out, progress=False)
    return out, _judgements(out)


def _judgements(out: Path) -> list[dict[str, Any]]:
    text = (out / "tasks" / "letters" / "judgements.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _rollouts(out: Path) -> list[dict[str, Any]]:
    text = (out / "tasks" / "letters" / "rollouts.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _health(out: Path) -> dict[str, Any]:
    report = report_run(out, write=False).report
    return report["tasks"]["letters"]["health"]


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_run_stores_the_thought_apart_and_never_grades_it(tmp_path: Path, field: str) -> None:
    # the thought names the right letter, the answer a wrong one: graded wrong
    def responder(r: dict[str, Any]) -> dict[str, Any]:
        gold = _gold(r)
        return {
            "text": f"Answer: {_wrong(gold)}",
            field: f"Answer: {gold}",
            "usage": {"completion_tokens_details": {"reasoning_tokens": 3}},
        }

    out, judged = _run(tmp_path, "run", responder)
    assert len(judged) == 4 * N_PROBLEMS
    assert all(j["correct"] is False and j["extracted"] is not None for j in judged)
    assert all(j["reasoning_tokens"] == 3 and j["thought_chars"] == 9 for j in judged)
    rollouts = _rollouts(out)
    assert all(r["reasoning"].startswith("Answer: ") for r in rollouts)
    assert all(r["usage"]["reasoning_tokens"] == 3 for r in rollouts)


def test_inline_thought_with_a_wrong_letter_is_not_graded(tmp_path: Path) -> None:
    """The issue's false regression: a wrong 'Answer: X' inside <think>...</think>."""

    def responder(r: dict[str, Any]) -> str:
        gold = _gold(r)
        return f"<think>Maybe Answer: {_wrong(gold)}. Let me check.</think>\n{gold}"

    _, judged = _run(tmp_path, "run", responder)
    assert all(j["correct"] is True for j in judged)
    assert all(j["thought_chars"] > 0 and j.get("in_thought") is None for j in judged)


def test_closing_delimiter_only_means_the_prompt_opened_the_thought(tmp_path: Path) -> None:
    def responder(r: dict[str, Any]) -> str:
        gold = _gold(r)
        return f"Answer: {_wrong(gold)} looks tempting.\n</think>\n\n{gold}"

    _, judged = _run(tmp_path, "run", responder)
    assert all(j["correct"] is True for j in judged)


def test_unclosed_thought_is_no_answer_whatever_it_holds(tmp_path: Path) -> None:
    """The issue's false improvement: an unclosed thought holding the right letter."""

    def responder(r: dict[str, Any]) -> tuple[str, str]:
        return f"<think>So the Answer: {_gold(r)} probably, but", "length"

    out, judged = _run(tmp_path, "run", responder)
    assert all(j["correct"] is False and j.get("extracted") is None for j in judged)
    assert all(j["in_thought"] is True and j["finish_reason"] == "length" for j in judged)
    health = _health(out)
    assert health["n_truncated"]["count"] == 4 * N_PROBLEMS
    assert health["n_truncated_in_thought"]["count"] == 4 * N_PROBLEMS
    assert health["n_unextracted"]["count"] == 4 * N_PROBLEMS


@pytest.mark.parametrize("text", [None, ""])
def test_null_or_empty_content_cut_at_length_is_truncated_and_wrong(
    tmp_path: Path, text: str | None
) -> None:
    def responder(r: dict[str, Any]) -> dict[str, Any]:
        return {"text": text, "finish_reason": "length", "reasoning": f"Answer: {_gold(r)}"}

    out, judged = _run(tmp_path, "run", responder)
    assert all(j["status"] == "ok" and j["correct"] is False for j in judged)
    health = _health(out)
    assert health["infra_errors"]["count"] == 0
    assert health["n_truncated"] == {"count": 24, "of": 24, "rate": 1.0}
    assert health["n_truncated_in_thought"]["count"] == 24


@pytest.mark.parametrize("text", [None, ""])
def test_null_or_empty_content_with_stop_is_no_answer(tmp_path: Path, text: str | None) -> None:
    out, judged = _run(tmp_path, "run", lambda r: {"text": text, "finish_reason": "stop"})
    assert all(j["status"] == "ok" and j["correct"] is False for j in judged)
    health = _health(out)
    assert health["infra_errors"]["count"] == 0 and health["n_truncated"]["count"] == 0
    assert health["n_unextracted"]["count"] == 24


def test_server_side_n_mixes_the_shapes_in_one_response(tmp_path: Path) -> None:
    """``server_n``: one request, four choices, each shape in its own choice."""
    calls: dict[str, int] = {}

    def responder(r: dict[str, Any]) -> Any:
        gold = _gold(r)
        k = calls.get(gold + r["messages"][-1]["content"], 0)
        calls[gold + r["messages"][-1]["content"]] = k + 1
        return [
            {"text": gold, "reasoning": f"Answer: {_wrong(gold)}"},
            f"<think>Answer: {_wrong(gold)}</think>{gold}",
            {"text": None, "finish_reason": "length", "reasoning": f"Answer: {gold}"},
            (f"<think>Answer: {gold}", "length"),
        ][k % 4]

    out, judged = _run(tmp_path, "run", responder, server_n=True)
    by_index: dict[int, list[Any]] = {}
    for j in judged:
        by_index.setdefault(j["index"], []).append(j["correct"])
    assert by_index == {0: [True] * 6, 1: [True] * 6, 2: [False] * 6, 3: [False] * 6}
    assert _health(out)["n_truncated_in_thought"]["count"] == 12


def test_resume_does_not_re_request_truncated_rollouts(tmp_path: Path) -> None:
    data = _write_mcq(tmp_path / "letters.jsonl")
    out = tmp_path / "run"

    def responder(r: dict[str, Any]) -> Any:
        return {"text": None, "finish_reason": "length", "reasoning": "..."}

    with OpenAIServer(responder=responder) as srv:
        run_eval(_settings(srv, data), out, progress=False)
        first = srv.completion_requests
        run_eval(_settings(srv, data), out, resume=True, progress=False)
        assert srv.completion_requests == first == 24  # nothing re-requested


def test_truncating_every_rollout_does_not_trip_the_breaker(tmp_path: Path) -> None:
    """Before issue 19, 24 null-content rollouts in a row stopped the run as 'server down'."""
    data = _write_mcq(tmp_path / "letters.jsonl", n=10)
    out = tmp_path / "run"
    with OpenAIServer(responder=lambda r: {"text": None, "finish_reason": "length"}) as srv:
        outcome = run_eval(_settings(srv, data, concurrency=1), out, progress=False)
    assert outcome.failed == 0 and outcome.completed == 40


def test_regrade_re_splits_with_changed_delimiters(tmp_path: Path) -> None:
    """A delimiter fix costs a regrade, never a re-run: the texts are stored whole."""

    def responder(r: dict[str, Any]) -> str:
        gold = _gold(r)
        return f"<reason>Answer: {_wrong(gold)}</reason>{gold}"

    out, judged = _run(tmp_path, "run", responder)
    assert all(j["correct"] is False for j in judged)  # default <think> pair: graded whole
    regrade_run(out, thinking=["<reason>", "</reason>"], workers=0)
    assert all(j["correct"] is True for j in _judgements(out))
    task = json.loads((out / "tasks" / "letters" / "task.json").read_text())
    assert task["thinking"] == ["<reason>", "</reason>"]
    regrade_run(out, thinking="none", workers=0)
    assert all(j["correct"] is False for j in _judgements(out))


def test_thinking_none_grades_literal_tags(tmp_path: Path) -> None:
    _, judged = _run(tmp_path, "run", lambda r: f"<think>{_gold(r)}", thinking="none")
    assert all(j["correct"] is True for j in judged)


def test_reasoning_effort_and_extra_body_are_sent_and_part_of_the_run_identity(
    tmp_path: Path,
) -> None:
    from rolleval.errors import UsageError

    data = _write_mcq(tmp_path / "letters.jsonl")
    out = tmp_path / "run"
    sampling = {
        "reasoning_effort": "high",
        "extra_body": {"chat_template_kwargs": {"enable_thinking": True}},
    }
    with OpenAIServer(responder=lambda r: _gold(r)) as srv:
        run_eval(_settings(srv, data, sampling=sampling), out, progress=False)
        sent = srv.requests[-1].json
        assert sent["reasoning_effort"] == "high"
        assert sent["chat_template_kwargs"] == {"enable_thinking": True}
        changed = {**sampling, "reasoning_effort": "low"}
        with pytest.raises(UsageError, match=r"reasoning_effort: 'high' -> 'low'"):
            run_eval(_settings(srv, data, sampling=changed), out, resume=True, progress=False)


# ---------------------------------------------------------------- the three scenarios
#
# 60 problems x 4 rollouts; the baseline is right on a rollout when its 'coin' (a hash of
# problem and seed) is below 0.5, so both runs see the same coins and differ only in the
# shape the candidate answers in. Each scenario's verdict was wrong before issue 19.

SCENARIO_PROBLEMS = 60


def _baseline_answer(r: dict[str, Any]) -> dict[str, Any]:
    gold = _gold(r)
    letter = gold if _unit(r) < 0.5 else _wrong(gold)
    return {"text": f"Answer: {letter}", "reasoning": "Let me think it over."}


def _scenario(tmp: Path, candidate: Any) -> tuple[Path, Path]:
    data = _write_mcq(tmp / "letters.jsonl", n=SCENARIO_PROBLEMS)
    runs = []
    for name, responder in (("baseline", _baseline_answer), ("candidate", candidate)):
        with OpenAIServer(responder=responder) as srv:
            run_eval(_settings(srv, data), tmp / name, progress=False)
        runs.append(tmp / name)
    return runs[0], runs[1]


def _pass1(run: Path) -> float:
    return report_run(run, write=False).report["tasks"]["letters"]["metrics"]["pass@1"]["value"]


def test_budget_run_out_mid_thought_is_a_regression_not_an_outage(tmp_path: Path) -> None:
    """Scenario 1: 30% of the candidate's rollouts run out of budget in thought (null content,
    ``length``). Before: infra errors, pass@1 over the survivors (0.50), compare
    inconclusive, gate outage (exit 4)."""

    def candidate(r: dict[str, Any]) -> dict[str, Any]:
        if _unit(r, "budget") < 0.3:
            return {"text": None, "finish_reason": "length", "reasoning": "Let me think it"}
        return _baseline_answer(r)

    baseline, cand = _scenario(tmp_path, candidate)
    assert _pass1(baseline) > 0.45 and _pass1(cand) < 0.40  # fixed coins: 0.50 and 0.35 or so
    result = compare_runs(baseline, cand, n_resamples=2000)
    assert (result.verdict, result.exit_code) == ("regression", 1)
    health = result.tasks[0].health
    assert health["infra_error_rate"]["candidate"] == 0.0
    assert health["truncated_in_thought_rate"]["baseline"] == 0.0
    assert health["truncated_in_thought_rate"]["candidate"] > 0.2
    (warning,) = result.tasks[0].warnings
    assert warning.startswith("the candidate runs out of budget inside its thought")
    assert warning.endswith("raise max_tokens; truncated answers count as wrong")
    gate = gate_run(cand, baseline, n_resamples=2000)
    assert gate.exit_code == 1  # a regression, never an outage (4)
    warnings = report_run(cand, write=False).report["tasks"]["letters"]["warnings"]
    assert "raise max_tokens; truncated answers count as wrong" in warnings[0]


def test_a_wrong_letter_inside_the_thought_is_no_false_regression(tmp_path: Path) -> None:
    """Scenario 2: the candidate thinks inline and names a wrong letter before </think>,
    then answers as the baseline. Before: the thought's letter was graded (pass@1 0.0)."""

    def candidate(r: dict[str, Any]) -> str:
        base = _baseline_answer(r)["text"].removeprefix("Answer: ")
        return f"<think>Answer: {_wrong(base)} at first sight.</think>\n**{base}**"

    baseline, cand = _scenario(tmp_path, candidate)
    assert _pass1(cand) == _pass1(baseline)
    result = compare_runs(baseline, cand, n_resamples=2000)
    # identical answers: effect 0; 60 problems cannot prove equivalence within the default
    # threshold, so the verdict is "insufficient evidence" (exit 3), never "regression" (1)
    assert result.tasks[0].comparison.effect == 0.0
    assert result.verdict != "regression" and result.exit_code != 1


def test_an_unclosed_thought_holding_the_right_letter_is_no_false_improvement(
    tmp_path: Path,
) -> None:
    """Scenario 3: 30% of the candidate's rollouts are cut in an unclosed thought that
    holds the right letter. Before: judged correct, a false improvement, exit 0."""

    def candidate(r: dict[str, Any]) -> Any:
        if _unit(r, "budget") < 0.3:
            return (f"<think>Surely Answer: {_gold(r)}, but let me", "length")
        return _baseline_answer(r)

    baseline, cand = _scenario(tmp_path, candidate)
    assert _pass1(cand) < _pass1(baseline)
    result = compare_runs(baseline, cand, n_resamples=2000)
    assert (result.verdict, result.exit_code) == ("regression", 1)


# ---------------------------------------------------------------- one definition, show, HTML


def _thinker(extra: int) -> Any:
    """A reasoning model whose thought has ``10 + extra`` words and is counted by the server."""

    def responder(r: dict[str, Any]) -> dict[str, Any]:
        words = 10 + extra
        return {
            "text": f"Answer: {_gold(r)}",
            "reasoning": " ".join(["hmm"] * words),
            "usage": {"completion_tokens_details": {"reasoning_tokens": words}},
        }

    return responder


def test_thought_health_is_one_number_in_report_compare_and_gate(tmp_path: Path) -> None:
    data = _write_mcq(tmp_path / "letters.jsonl")
    for name, extra in (("baseline", 0), ("candidate", 6)):
        with OpenAIServer(responder=_thinker(extra)) as srv:
            run_eval(_settings(srv, data), tmp_path / name, progress=False)
    base, cand = tmp_path / "baseline", tmp_path / "candidate"
    health = _health(cand)
    # 16 reasoning tokens per rollout; the answer is the completion's other tokens (2 words)
    assert health["thought_length_mean"] == {"value": 16.0, "of": 24, "unit": "reasoning_tokens"}
    assert health["reasoning_tokens_mean"]["value"] == 16.0
    assert health["thought_chars_mean"]["value"] == len(" ".join(["hmm"] * 16))
    assert health["answer_tokens_mean"]["value"] == 2.0
    assert health["n_truncated_in_thought"] == {"count": 0, "of": 24, "rate": 0.0}
    comparison = compare_runs(base, cand, n_resamples=2000).tasks[0]
    assert comparison.warnings == []  # it thinks longer but never runs out of budget
    compared = comparison.health
    assert compared["reasoning_tokens"]["baseline"] == 10.0
    assert compared["reasoning_tokens"]["candidate"] == 16.0
    assert compared["reasoning_tokens"]["delta"] == 6.0
    # the optional gate checks on thought length: an absolute limit on the candidate's mean
    # (16 tokens), and a paired limit on its increase (+6 tokens on every problem)
    for policy, code in (
        ({"reasoning_tokens": {"max": 20}}, 0),
        ({"reasoning_tokens": {"max": 12}}, 1),
        ({"reasoning_tokens": {"max_increase": 5}}, 1),
    ):
        gate = gate_run(cand, base, policy={"health": policy}, n_resamples=2000)
        assert gate.exit_code == code, gate.to_dict()["checks"]


def test_a_run_without_thoughts_has_no_thought_health(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, "run", lambda r: f"Answer: {_gold(r)}")
    health = _health(out)
    assert "thought_length_mean" not in health and "n_truncated_in_thought" not in health
    out2, _ = _run(tmp_path, "run2", lambda r: f"Answer: {_gold(r)}")
    assert (
        "truncated_in_thought_rate" not in compare_runs(out, out2, n_resamples=500).tasks[0].health
    )


def test_show_and_html_keep_the_thought_apart_and_inert(tmp_path: Path) -> None:
    from rolleval import show_records
    from rolleval._report._html_data import read_side

    evil = "\x1b[31mred\u202e</pre><script>x()</script>"

    def responder(r: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"<think>inline {evil}</think>Answer: {_gold(r)}", "reasoning": "apart"}

    out, _ = _run(tmp_path, "run", responder)
    item = show_records(out, problem="letters/q000")[0]
    assert item["rollouts"][0]["reasoning"] == "apart"
    view = read_side(out).tasks["letters"]
    row = view.problems["letters/q000"].rollouts[0]
    assert row["thought"] == f"apart\n\ninline {evil}"
    assert row["text"] == "Answer: A"
    from conftest import run_cli

    done = run_cli("show", str(out), "--problem", "letters/q000", "--limit", "1")
    assert done.returncode == 0 and "(thought, 5 chars, collapsed" in done.stdout
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout


# ---------------------------------------------------------------- importers


def test_inspect_reasoning_content_maps_to_the_thought(tmp_path: Path) -> None:
    """A real Inspect log (the seed1 fixture) whose first sample's reply is given Inspect's
    reasoning content part, as a reasoning model's log has it: the thought goes to
    ``reasoning``, the answer text stays whole (before issue 19 a content list holding a
    reasoning part lost its text: stored as "")."""
    from rolleval import import_run
    from rolleval._importers._io import SafeZip

    (log,) = (Path(__file__).parents[1] / "data" / "imports" / "inspect" / "seed1").glob("*.eval")
    with SafeZip(log) as zf:
        header = zf.json("header.json")
        names = sorted(n for n in zf.names() if n.startswith("samples/") and n.endswith(".json"))
        samples = [zf.json(n) for n in names]
    first = samples[0]
    message = first["output"]["choices"][0]["message"]
    answer = message["content"]
    assert isinstance(answer, str)
    message["content"] = [
        {"type": "reasoning", "reasoning": "The flower is yellow, so"},
        {"type": "text", "text": answer},
    ]
    first["output"]["usage"]["reasoning_tokens"] = 6
    source = tmp_path / "log.json"
    source.write_text(json.dumps({**header, "samples": samples}), encoding="utf-8")
    out = tmp_path / "imported"
    import_run("inspect", source, out)
    (task,) = (out / "tasks").iterdir()
    rolls = [json.loads(x) for x in (task / "rollouts.jsonl").read_text().splitlines()]
    rec = next(
        r for r in rolls if r["problem_id"] == str(first["id"]) and r["index"] == first["epoch"] - 1
    )
    assert rec["text"] == answer and rec["reasoning"] == "The flower is yellow, so"
    assert rec["usage"]["reasoning_tokens"] == 6
    judged = [json.loads(x) for x in (task / "judgements.jsonl").read_text().splitlines()]
    mine = next(
        j for j in judged if (j["problem_id"], j["index"]) == (rec["problem_id"], rec["index"])
    )
    assert mine["reasoning_tokens"] == 6 and mine["thought_chars"] == len(
        "The flower is yellow, so"
    )
    health = report_run(out, write=False).report["tasks"][task.name]["health"]
    assert health["reasoning_tokens_mean"] == {"value": 6.0, "of": 1}


def test_lighteval_reasonings_map_to_the_thought(tmp_path: Path) -> None:
    """A real lighteval details file (the seed1 fixture) whose first document's
    ``reasonings`` holds a thought, as lighteval writes it for a reasoning model."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from rolleval import import_run

    source = tmp_path / "lighteval"
    shutil.copytree(Path(__file__).parents[1] / "data" / "imports" / "lighteval" / "seed1", source)
    (details,) = source.rglob("details_*.parquet")
    table = pq.read_table(details)
    rows = table.to_pylist()
    assert rows[0]["model_response"]["reasonings"] == [None]  # what the fixture holds
    rows[0]["model_response"]["reasonings"] = ["Sunflowers are yellow."]
    pq.write_table(pa.Table.from_pylist(rows), details)  # reasonings: list<null> -> list<string>
    out = tmp_path / "imported"
    import_run("lighteval", source, out)
    (task,) = (out / "tasks").iterdir()
    rolls = [json.loads(x) for x in (task / "rollouts.jsonl").read_text().splitlines()]
    with_thought = [r for r in rolls if r.get("reasoning")]
    assert [r["reasoning"] for r in with_thought] == ["Sunflowers are yellow."]
    assert with_thought[0]["text"] == rows[0]["model_response"]["text"][0]


def test_thinking_as_a_task_setting(tmp_path: Path) -> None:
    """A task config's own ``thinking`` pair; the run's ``thinking`` would override it."""
    data = _write_mcq(tmp_path / "letters.jsonl")
    with OpenAIServer(responder=lambda r: f"[[Answer: {_wrong(_gold(r))}]] {_gold(r)}") as srv:
        config = _settings(srv, data)
        entry = dict(config.tasks[0])
        entry["thinking"] = ["[[", "]]"]
        config = _settings(srv, data, tasks=[entry])
        run_eval(config, tmp_path / "run", progress=False)
    assert all(j["correct"] is True for j in _judgements(tmp_path / "run"))
    task = json.loads((tmp_path / "run" / "tasks" / "letters" / "task.json").read_text())
    assert task["thinking"] == ["[[", "]]"]
    from rolleval._runner._resolve import resolve_tasks
    from rolleval.errors import UsageError

    bad = _settings(srv, data, tasks=[{**entry, "thinking": ["x"]}])
    with pytest.raises(UsageError, match=r"tasks\[0\].*thinking must be 'none' or a pair"):
        resolve_tasks(bad)


def test_a_zero_reasoning_count_beside_a_thought_is_not_a_count(tmp_path: Path) -> None:
    """vLLM parsers that inherit the base counter report 0 reasoning tokens for a real
    thought: the thought length then falls back to characters, never 0 tokens."""

    def responder(r: dict[str, Any]) -> dict[str, Any]:
        return {
            "text": f"Answer: {_gold(r)}",
            "reasoning": "twelve chars",
            "usage": {"completion_tokens_details": {"reasoning_tokens": 0}},
        }

    out, judged = _run(tmp_path, "run", responder)
    assert all(j["reasoning_tokens"] == 0 for j in judged)  # stored as sent
    health = _health(out)
    assert health["reasoning_tokens_mean"]["value"] is None
    assert health["thought_length_mean"] == {"value": 12.0, "of": 24, "unit": "chars"}
    assert health["answer_tokens_mean"]["value"] is None
