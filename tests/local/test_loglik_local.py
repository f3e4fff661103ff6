"""The embedded model (``--model local``) serves correct prompt log-probs, and a
log-likelihood task runs on it end to end."""

from __future__ import annotations

import json
import math

import httpx
import numpy as np
import pytest

from conftest import run_cli

pytestmark = pytest.mark.local_model


def _direct(llm, ids: list[int]) -> list[float]:
    """Each token's log-prob computed by evaluating its prefix alone (no shared pass)."""
    out = []
    for i in range(1, len(ids)):
        llm.reset()
        llm.eval(ids[:i])
        row = np.asarray(llm.scores[i - 1], dtype=np.float64)
        out.append(float(row[ids[i]] - np.logaddexp.reduce(row)))
    return out


def test_served_prompt_logprobs_match_a_direct_computation():
    llama_cpp = pytest.importorskip("llama_cpp")
    from rolleval._local._launcher import (
        LOCAL_MODEL_NAME,
        LocalServer,
        LocalServerOptions,
        default_model_path,
    )
    from rolleval.client._logprob_probe import require_prompt_logprobs

    text = "The capital of France is Paris, and the capital of Italy is Rome."
    with LocalServer(LocalServerOptions(server_options={"n_threads": 2})) as server:
        assert require_prompt_logprobs(server.base_url, LOCAL_MODEL_NAME).ok
        body = {
            "model": LOCAL_MODEL_NAME,
            "prompt": text,
            "max_tokens": 1,
            "echo": True,
            "logprobs": 2,
        }
        served = httpx.post(server.base_url + "/completions", json=body, timeout=120).json()
    lp = served["choices"][0]["logprobs"]
    llm = llama_cpp.Llama(
        model_path=str(default_model_path()), n_ctx=512, logits_all=True, verbose=False, n_threads=2
    )
    ids = llm.tokenize(text.encode(), add_bos=True, special=True)
    n = len(ids)
    assert "".join(lp["tokens"][:n]) == text and lp["token_logprobs"][0] is None
    direct = _direct(llm, ids)
    diffs = [abs(a - b) for a, b in zip(lp["token_logprobs"][1:n], direct, strict=True)]
    assert max(diffs) < 0.05, diffs  # one batched pass vs prefix by prefix: close, not bit-equal
    assert lp["top_logprobs"][2][" of"] == pytest.approx(lp["token_logprobs"][2])
    assert math.isclose(sum(lp["token_logprobs"][1:n]), sum(direct), abs_tol=0.2)


def test_loglik_task_end_to_end_on_the_embedded_model(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "model: local\nlimit: 5\nseed: 1\ntasks: [arc_easy_rc]\nserver_options: {n_threads: 2}\n"
    )
    res = run_cli("run", "--config", cfg, "--out", tmp_path / "r", "--no-progress", timeout=900)
    assert res.returncode == 0, res.stderr
    folder = tmp_path / "r" / "tasks" / "arc_easy_rc"
    rollouts = [json.loads(x) for x in (folder / "rollouts.jsonl").read_text().splitlines()]
    judgements = [json.loads(x) for x in (folder / "judgements.jsonl").read_text().splitlines()]
    assert len(rollouts) == len(judgements) == 5
    for r, j in zip(rollouts, judgements, strict=True):
        assert r["status"] == "ok" and all(o["logprob"] < 0 for o in r["options"])
        gold = [o["logprob"] for o in r["options"] if o["text"] == j.get("extracted")]
        assert gold and max(o["logprob"] for o in r["options"]) == gold[0]
        assert j["correct"] is (j["metrics"]["logprob_margin"] > 0)
