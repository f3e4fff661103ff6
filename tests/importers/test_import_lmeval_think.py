"""lm-eval's ``think_end_token`` (issue 19): the imported task's thinking delimiters, the
unclosed thought lm-eval graded as the answer, and a stripped thought recorded as absent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from rolleval import import_run
from rolleval._importers.lmeval._thinking import think_end_token, thinking_pair

THINK = Path(__file__).parents[1] / "data" / "imports" / "lm-eval" / "think"


def _rows(run: Path, name: str) -> list[dict]:
    path = run / "tasks" / "copycolors_local" / name
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def _summary(run: Path) -> dict:
    return orjson.loads((run / "manifest.json").read_bytes())["import"]["tasks"]["copycolors_local"]


@pytest.mark.parametrize(
    ("model_args", "expected"),
    [
        ("pretrained=Qwen/Qwen3-8B,enable_thinking=True,think_end_token=</think>", "</think>"),
        ("pretrained=x,think_end_token='</think>',dtype=auto", "</think>"),
        ('think_end_token="[/THINK]"', "[/THINK]"),
        ("pretrained=x,think_end_token=151668", 151668),
        ({"pretrained": "x", "think_end_token": "</think>"}, "</think>"),
        ({"pretrained": "x", "think_end_token": 151668}, 151668),
        ("pretrained=x,enable_thinking=True", None),
        ({"pretrained": "x", "think_end_token": None}, None),
        ("pretrained=x,think_end_token=", None),
    ],
)
def test_think_end_token_from_model_args(model_args, expected):
    assert think_end_token({"model_args": model_args}) == expected


def test_thinking_pair_matches_the_closing_tag():
    assert thinking_pair("</think>") == ("<think>", "</think>")
    assert thinking_pair("</reasoning>") == ("<reasoning>", "</reasoning>")
    assert thinking_pair("[/THINK]") == ("[THINK]", "[/THINK]")
    assert thinking_pair("<|end_of_thought|>") == ("<think>", "<|end_of_thought|>")
    assert thinking_pair("<think>") is None


@pytest.fixture(scope="module")
def think_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("think") / "run"
    import_run("lm-eval", THINK, out)
    return out


def test_unclosed_thought_is_no_answer_whatever_lm_eval_scored(think_run):
    # doc 1: "<think>\nThe ocean is blue, so the answer is blue" -- lm-eval found no end
    # token, kept the whole thought and scored it right (its #3382); rolleval: no answer
    source = [json.loads(x) for x in next(THINK.glob("samples_*.jsonl")).read_text().splitlines()]
    assert source[1]["exact_match"] == 1.0
    judged = {j["problem_id"]: j for j in _rows(think_run, "judgements.jsonl")}
    j1 = judged["1"]
    assert j1["correct"] is False and j1.get("extracted") is None and j1["in_thought"] is True
    assert j1["answer_chars"] == 0 and j1["thought_chars"] > 0
    # the stripped answers keep lm-eval's verdict, and their thought is absent (N/A)
    for pid in ("0", "2", "3"):
        assert judged[pid]["correct"] is True and "in_thought" not in judged[pid]
        assert judged[pid].get("thought_chars") is None
    assert judged["4"]["correct"] is False  # "The answer might be purple": graded as lm-eval did
    # the text is stored as lm-eval logged it, and the task's delimiters are lm-eval's pair
    texts = {r["problem_id"]: r["text"] for r in _rows(think_run, "rollouts.jsonl")}
    assert texts["1"] == source[1]["resps"][0][0]
    settings = orjson.loads((think_run / "tasks" / "copycolors_local" / "task.json").read_bytes())
    assert settings["thinking"] == ["<think>", "</think>"]
    notes = " ".join(_summary(think_run)["notes"])
    assert "1 logged response(s) open a thought" in notes
    assert "thoughts are absent (N/A)" in notes


def test_regrade_splits_every_repeat_by_the_delimiters(tmp_path):
    out = tmp_path / "run"
    import_run("lm-eval", THINK, out, regrade="short_answer")
    judged = {(j["problem_id"], j["index"]): j for j in _rows(out, "judgements.jsonl")}
    assert len(judged) == 24
    # doc 5 alternates a stripped right answer and an unclosed thought naming the answer
    assert [judged[("5", i)]["correct"] for i in range(4)] == [True, False, True, False]
    assert judged[("5", 1)]["in_thought"] is True and judged[("5", 1)].get("extracted") is None
    assert all(judged[("1", i)]["correct"] is False for i in range(4))
    assert all(judged[("0", i)]["correct"] is True for i in range(4))


def test_a_text_lm_eval_did_not_strip_splits_at_the_end_token(tmp_path):
    # a log whose backend ignored the argument: the text still holds the end token
    src = tmp_path / "src"
    shutil.copytree(THINK, src)
    samples = next(src.glob("samples_*.jsonl"))
    lines = [json.loads(x) for x in samples.read_text().splitlines()]
    lines[2]["resps"] = [["<think>\nred? no</think>\n\ngreen"] * 4]
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    import_run("lm-eval", src, out)
    j2 = {j["problem_id"]: j for j in _rows(out, "judgements.jsonl")}["2"]
    assert j2["thought_chars"] == len("\nred? no") and j2["answer_chars"] == len("\n\ngreen")
    assert "1 logged response(s) still hold '</think>'" in " ".join(_summary(out)["notes"])
    regraded = tmp_path / "regraded"
    import_run("lm-eval", src, regraded, regrade="short_answer")
    judged = [j for j in _rows(regraded, "judgements.jsonl") if j["problem_id"] == "2"]
    assert [j["correct"] for j in judged] == [True] * 4  # the answer after </think>: green


def test_without_the_token_nothing_changes(tmp_path):
    # the same texts without think_end_token in the config: the task has the default
    # delimiters (as every new task; before, an import read as graded whole, "none") and,
    # without --regrade, lm-eval's verdicts stand, the unclosed thought of doc 1 too
    src = tmp_path / "src"
    shutil.copytree(THINK, src)
    results = next(src.glob("results_*.json"))
    data = json.loads(results.read_text())
    del data["config"]["model_args"]["think_end_token"]
    results.write_text(json.dumps(data))
    out = tmp_path / "run"
    import_run("lm-eval", src, out)
    notes = " ".join(_summary(out)["notes"])
    assert "think_end_token" not in notes
    settings = orjson.loads((out / "tasks" / "copycolors_local" / "task.json").read_bytes())
    assert settings["thinking"] == ["<think>", "</think>"]
    assert {j["problem_id"]: j for j in _rows(out, "judgements.jsonl")}["1"]["correct"] is True
    regraded = tmp_path / "regraded"
    import_run("lm-eval", src, regraded, regrade="short_answer")
    judged = [j for j in _rows(regraded, "judgements.jsonl") if j["problem_id"] == "1"]
    assert [j["correct"] for j in judged] == [False] * 4  # the unclosed thought: no answer
