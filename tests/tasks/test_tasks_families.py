"""Task configs and built-in loaders of the code and qa families."""

from __future__ import annotations

import json

import pytest

from rolleval.errors import UsageError
from rolleval.tasks import get_task, task_from_config


def _file(tmp_path, rows):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_qa_and_code_configs_default_and_check_score_key(tmp_path):
    path = _file(tmp_path, [{"id": "a", "question": "q?", "answers": ["x", "y"]}])
    qa = task_from_config({"name": "r", "path": path, "type": "qa", "answer_field": "answers"})
    assert qa.score_key == "metrics.f1" and qa.grader == {"type": "qa", "style": "squad"}
    assert qa.to_dict()["score_key"] == "metrics.f1"
    assert qa.load()[0].reference == ["x", "y"]
    em = task_from_config(
        {"name": "r", "path": path, "type": "qa", "answer_field": "answers", "score_key": "correct"}
    )
    assert em.score_key == "correct"
    with pytest.raises(UsageError, match="metrics em and f1"):
        task_from_config({"name": "r", "path": path, "type": "qa", "score_key": "metrics.bleu"})
    with pytest.raises(UsageError, match="score_key must be"):
        task_from_config({"name": "r", "path": path, "type": "qa", "score_key": "f1"})
    code = task_from_config({"name": "c", "path": path, "type": "code", "answer_field": "answers"})
    assert code.score_key == "correct" and code.grader["type"] == "code"
    assert code.sampling["max_tokens"] == 1024
    with pytest.raises(UsageError, match=r"grader\.type"):
        task_from_config({"name": "c", "path": path, "type": "code", "grader": {"type": "qa"}})


def test_humaneval_and_mbpp_problems():
    humaneval = get_task("humaneval").load()
    first = humaneval[0]
    assert first.problem_id == "humaneval/0000"
    assert first.extras == {"entry_point": "has_close_elements"}
    (test,) = first.reference
    assert test.startswith("METADATA") and test.endswith("check(has_close_elements)")
    assert "```python\nfrom typing import List" in first.prompt[-1]["content"]
    mbpp = {p.problem_id: p for p in get_task("mbpp").load()}
    assert len(mbpp) == 500 and min(mbpp) == "mbpp/0011" and max(mbpp) == "mbpp/0510"
    # three asserts each, except three problems whose repeated asserts count once
    short = sorted(pid for pid, p in mbpp.items() if len(p.reference) < 3)
    assert short == ["mbpp/0037", "mbpp/0337", "mbpp/0508"]
    with_setup = [p for p in mbpp.values() if p.reference[0].count("\n") > 0]
    assert len(with_setup) == 1 and "Node(" in with_setup[0].reference[0]
    assert 'assert remove_Occ("hello","l") == "heo"' in mbpp["mbpp/0011"].prompt[-1]["content"]


def test_qa_built_ins():
    drop = get_task("drop").load()
    assert get_task("drop").grader == {"type": "qa", "style": "drop"}
    multi = [p for p in drop if any(" | " in a for a in p.reference)]
    assert multi, "DROP has multi-span answers, written 'span | span'"
    squad = get_task("squad").load()
    assert all("Passage: " in p.prompt[-1]["content"] for p in squad[:20])
    assert "Background:" not in squad[0].prompt[-1]["content"]
    assert get_task("nq_open").score_key == "metrics.em"
