"""Drift on the real embedded model against an exact computation.

The shipped Q4_1 SmolLM2 is the baseline and a Q4_0 requantization of it (llama.cpp's own
quantizer, about a second) the candidate, each served by rolleval's server. The exact
figures come from llama-cpp-python in this process (``logits_all=True``, full-vocabulary
log-softmax of every position). Nothing here is random: the model, the texts and the
computation are fixed, so no assertion can fail by chance; the tolerances cover float32
logits and the server's batched evaluation.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

pytestmark = pytest.mark.local_model

TEXTS = [
    ("capital", "The capital of France is Paris, and the capital of Italy is Rome."),
    ("water", "Water boils at 100 degrees Celsius at sea level, and freezes at 0 degrees."),
    ("fox", "Once upon a time, a small fox lived at the edge of a large forest."),
]


def _requantize(src: str, dst: str) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
    params.allow_requantize = True
    params.nthread = 1
    assert llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params)) == 0


def _exact_rows(path: str, texts=None) -> dict[str, tuple[list[int], np.ndarray]]:
    """Per text, the token ids and the log-softmax rows predicting tokens 1..n-1."""
    import llama_cpp

    from rolleval._local._serve import log_softmax

    llm = llama_cpp.Llama(model_path=path, n_ctx=512, logits_all=True, verbose=False, n_threads=2)
    out = {}
    for text_id, text in texts or TEXTS:
        ids = llm.tokenize(text.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        out[text_id] = (ids, np.array([log_softmax(r) for r in llm.scores[: len(ids) - 1]]))
    return out


def test_drift_of_a_requantized_candidate_matches_the_exact_computation(tmp_path):
    pytest.importorskip("llama_cpp")
    from rolleval._local._launcher import LocalServer, LocalServerOptions, default_model_path
    from rolleval.drift import DriftOptions, DriftSide, kl_divergence, measure_drift

    base = str(default_model_path())
    cand = str(tmp_path / "q4_0.gguf")
    _requantize(base, cand)
    exact_kld, exact_agree = {}, {}
    b_exact, c_exact = _exact_rows(base), _exact_rows(cand)
    for text_id, _ in TEXTS:
        (b_ids, b_rows), (c_ids, c_rows) = b_exact[text_id], c_exact[text_id]
        assert b_ids == c_ids
        exact_kld[text_id] = np.asarray(kl_divergence(b_rows, c_rows))
        exact_agree[text_id] = np.argmax(b_rows, 1) == np.argmax(c_rows, 1)
    opts = {"n_threads": 2}
    with (
        LocalServer(LocalServerOptions(model_path=base, server_options=opts)) as b_srv,
        LocalServer(LocalServerOptions(model_path=cand, server_options=opts)) as c_srv,
    ):
        full = measure_drift(
            DriftSide(b_srv.base_url, "m", full_logprobs=True),
            DriftSide(c_srv.base_url, "m", full_logprobs=True),
            TEXTS,
            DriftOptions(n_resamples=200),
        )
        top = measure_drift(
            DriftSide(b_srv.base_url, "m", token_ids=True),
            DriftSide(c_srv.base_url, "m", token_ids=True),
            TEXTS,
            DriftOptions(top_logprobs=20, n_resamples=200),
        )
    assert full.method.tail_rule == "none (exact)" and top.method.keyed_by == "id"
    assert full.token_level.n_exact == full.n_tokens == sum(len(v) for v in exact_kld.values())
    for rec_full, rec_top in zip(full.tokens, top.tokens, strict=True):
        want = exact_kld[rec_full["id"]]
        got = np.array(rec_full["kld"])
        # the same logits evaluated in the server's batch: equal to float32 rounding
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
        assert rec_full["top1_agree"] == exact_agree[rec_full["id"]].tolist()
        # top-20 with one merged tail: a lower bound on every token, never far below on
        # average (docs/contract.md, "Drift": 22% low at K=20 on this model)
        low = np.array(rec_top["kld"])
        assert np.all(low <= want + 1e-4), (low - want).max()
        assert rec_top["top1_agree"] == rec_full["top1_agree"]  # the argmax is always listed
        np.testing.assert_allclose(rec_top["delta_nll"], rec_full["delta_nll"], atol=1e-6)
    assert 0.5 * full.token_level.mean_kld <= top.token_level.mean_kld <= full.token_level.mean_kld
    # a requantization moves the distributions: far from 0 (measured 0.2 to 0.5 nats)
    assert full.mean_kld.value > 0.05 and full.verdict == "above_threshold"


def test_sampled_continuations_of_a_task_are_scored_exactly(tmp_path):
    """``--continuation sampled`` on the embedded model: the baseline (a .gguf rolleval
    serves) continues two ARC-Easy prompts with recorded seeds and its own server's
    whole-distribution sampling settings; both sides then score prompt + continuation,
    and the figures equal the exact computation on those texts. Whatever the sampled
    text (it depends on the seed and the server's cache), the assertions hold: none can
    fail by chance."""
    pytest.importorskip("llama_cpp")
    from rolleval._local._launcher import default_model_path
    from rolleval.drift import (
        DriftOptions,
        SampledContinuation,
        kl_divergence,
        measure_drift,
        task_prompts,
    )

    base = str(default_model_path())
    cand = str(tmp_path / "q4_0.gguf")
    _requantize(base, cand)
    prompts = task_prompts("arc_easy", limit=2)
    spec = SampledContinuation(seed=3, max_tokens=12)
    res = measure_drift(
        base, cand, prompts, DriftOptions(n_resamples=200, continuation=spec, probe=False)
    )
    cont = res.method.continuation
    assert cont["kind"] == "sampled" and cont["seed"] == 3
    assert cont["sent"] == {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 12,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
    }
    assert [c["id"] for c in res.continuations] == [i for i, _ in prompts]
    assert [c["seed"] for c in res.continuations] == [spec.seed_of(i) for i, _ in prompts]
    assert all(
        c["completion_tokens"] is None or c["completion_tokens"] <= 12 for c in res.continuations
    )
    scored = [(i, p + c["text"]) for (i, p), c in zip(prompts, res.continuations, strict=True)]
    b_exact, c_exact = _exact_rows(base, scored), _exact_rows(cand, scored)
    for rec in res.tokens:
        (b_ids, b_rows), (c_ids, c_rows) = b_exact[rec["id"]], c_exact[rec["id"]]
        assert b_ids == c_ids and len(rec["kld"]) == len(b_ids) - 1
        want = np.asarray(kl_divergence(b_rows, c_rows))
        np.testing.assert_allclose(rec["kld"], want, rtol=1e-3, atol=1e-5)
    assert res.token_level.n_exact == res.n_tokens
