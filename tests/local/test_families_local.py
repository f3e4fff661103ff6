"""Code and multi-metric tasks end to end with the real embedded model (llama.cpp serving
SmolLM2-135M on 127.0.0.1): every rollout is graded, none is a grader error."""

from __future__ import annotations

import json

import pytest

from rolleval import build_config, run_eval

pytestmark = pytest.mark.local_model

KINDS = {None, "no_code", "syntax", "assertion", "timeout", "crash"}


def test_code_and_qa_tasks_on_the_embedded_model(tmp_path):
    cfg = build_config(
        {
            "model": "local",
            "tasks": ["humaneval", "drop"],
            "limit": 2,
            "n_rollouts": 2,
            "concurrency": 2,
            "sampling": {"max_tokens": 128},
        }
    )
    out = run_eval(cfg, tmp_path / "run", progress=False)
    for name, rep in out.report["tasks"].items():
        assert rep["rollouts"]["completed"] == rep["rollouts"]["requested"] == 4, name
        assert rep["health"]["grader_errors"]["count"] == 0, name
        assert rep["metrics"]["pass@1"]["status"] == "ok", name
    for name in ("humaneval",):
        path = tmp_path / "run" / "tasks" / name / "judgements.jsonl"
        summaries = [json.loads(json.loads(x)["judge_raw"]) for x in path.read_text().splitlines()]
        assert len(summaries) == 4 and {s["failure"] for s in summaries} <= KINDS
        assert all(s.get("isolated", True) for s in summaries)
    for name, headline in (("drop", "metrics.f1"),):
        rep = out.report["tasks"][name]
        assert rep["score_key"] == headline
        for metric in ("metrics.em", "metrics.f1"):
            assert rep["metrics"][metric]["status"] == "ok"
            assert 0.0 <= rep["metrics"][metric]["value"] <= 1.0
