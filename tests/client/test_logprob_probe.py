"""The prompt log-prob probe: pure analysis, a served endpoint over real HTTP, and the real
embedded llama-cpp-python server (whose echo log-probs are shifted by one position)."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from rolleval.client._logprob_probe import (
    PROBE_TEXTS,
    PromptLogprobs,
    analyse_prompt_logprobs,
    parse_echo,
    probe_prompt_logprobs,
    require_prompt_logprobs,
    scramble,
)
from rolleval.errors import UsageError

Echo = Callable[[str, int], dict]


@contextmanager
def serve(echo: Echo) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering ``/v1/completions`` with ``echo(prompt, k)``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            payload = json.dumps(echo(body["prompt"], body["logprobs"])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _toy(prompt: str, shift: bool = False, own: float = -0.5) -> PromptLogprobs:
    """Word tokens; a fluent text (a probe text) is likely, a scrambled one is not."""
    words = prompt.split(" ")
    tokens = [words[0]] + [" " + w for w in words[1:]]
    fluent = prompt in PROBE_TEXTS
    values: list[float | None] = [None]
    top: list[dict[str, float] | None] = [None]
    for i in range(1, len(tokens)):
        value = own if fluent else -6.0
        if shift:  # the distribution of the next position, as llama-cpp-python's server
            nxt = tokens[i + 1] if i + 1 < len(tokens) else "."
            value = -9.0
            top.append({nxt: -0.3, " the": -2.0, tokens[i]: value})
        else:
            top.append({tokens[i]: value, " zzz": min(value, -7.0) - 1.0})
        values.append(value)
    return PromptLogprobs(tokens, values, top)


def _analyse(**kw) -> object:
    return analyse_prompt_logprobs(
        [_toy(t, **kw) for t in PROBE_TEXTS], [_toy(scramble(t), **kw) for t in PROBE_TEXTS]
    )


def test_analysis_accepts_aligned_and_names_each_fault():
    assert _analyse().ok is True
    shifted = _analyse(shift=True)
    assert (shifted.ok, shifted.fault) == (False, "shifted")
    flat = analyse_prompt_logprobs(
        [_toy(t, own=-6.0) for t in PROBE_TEXTS], [_toy(scramble(t)) for t in PROBE_TEXTS]
    )
    assert flat.fault == "not_discriminating" and flat.details["margins"] == [0.0, 0.0, 0.0]
    bad = _toy(PROBE_TEXTS[0])
    bad.token_logprobs[3] = -0.1  # differs from its own entry among the top log-probs (-0.5)
    result = analyse_prompt_logprobs(
        [bad, *[_toy(t) for t in PROBE_TEXTS[1:]]], [_toy(scramble(t)) for t in PROBE_TEXTS]
    )
    assert result.fault == "inconsistent" and "token 3" in result.message
    missing = analyse_prompt_logprobs([None, None, None], [None, None, None])
    assert missing.fault == "missing"


def test_parse_echo_drops_generated_tokens():
    prompt = "ab cd"
    response = {
        "choices": [
            {
                "logprobs": {
                    "tokens": ["ab", " cd", " ef"],
                    "token_logprobs": [None, -1.0, -2.0],
                    "top_logprobs": [None, {" cd": -1.0}, {" ef": -2.0}],
                    "text_offset": [0, 2, 5],
                }
            }
        ]
    }
    item = parse_echo(response, prompt)
    assert item.tokens == ["ab", " cd"] and item.token_logprobs == [None, -1.0]
    assert parse_echo({"choices": [{"logprobs": None}]}, prompt) is None


def _offsets(tokens: list[str]) -> list[int]:
    out, at = [], 0
    for t in tokens:
        out.append(at)
        at += len(t)
    return out


def test_endpoint_without_prompt_logprobs_is_refused():
    """Like llama.cpp's own server: a completion, but no log-probs for the prompt."""

    def echo(prompt: str, k: int) -> dict:
        return {"choices": [{"text": prompt + " x", "logprobs": None}]}

    with serve(echo) as url:
        result = probe_prompt_logprobs(url, "m")
        assert (result.ok, result.fault) == (False, "missing")
        with pytest.raises(UsageError, match=r"127\.0\.0\.1.*model 'm'.*\(missing\)"):
            require_prompt_logprobs(url, "m")


def test_served_toy_endpoints_over_http():
    def echo_with(shift: bool) -> Echo:
        def echo(prompt: str, k: int) -> dict:
            item = _toy(prompt, shift=shift)
            logprobs = {
                "tokens": item.tokens,
                "token_logprobs": item.token_logprobs,
                "top_logprobs": item.top,
                "text_offset": _offsets(item.tokens),
            }
            return {"choices": [{"text": prompt, "logprobs": logprobs}]}

        return echo

    with serve(echo_with(False)) as url:
        assert require_prompt_logprobs(url, "m").ok
    with serve(echo_with(True)) as url:
        assert probe_prompt_logprobs(url, "m").fault == "shifted"


# --------------------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def llama():
    llama_cpp = pytest.importorskip("llama_cpp")
    from rolleval._local._launcher import default_model_path

    return llama_cpp.Llama(
        model_path=str(default_model_path()),
        n_ctx=512,
        logits_all=True,
        verbose=False,
        n_threads=2,
    )


def _direct(llm, prompt: str, k: int, *, shift: bool) -> dict:
    """Echo log-probs computed in process from the model's logits: each prompt token scored
    by the distribution of the position before it, or (``shift``) of its own position."""
    import numpy as np

    ids = llm.tokenize(prompt.encode(), add_bos=False)
    llm.reset()
    llm.eval(ids)
    logits = np.asarray(llm.scores[: len(ids)], dtype=np.float64)
    logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    strings = [llm.detokenize([t]).decode("utf-8", errors="replace") for t in ids]
    values: list[float | None] = [None]
    top: list[dict[str, float] | None] = [None]
    for i in range(1, len(ids)):
        row = logp[i if shift else i - 1]
        best = np.argsort(row)[::-1][:k]
        entry = {
            llm.detokenize([int(j)]).decode("utf-8", errors="replace"): float(row[j]) for j in best
        }
        value = float(row[ids[i]])
        entry[strings[i]] = value
        values.append(value)
        top.append(entry)
    logprobs = {
        "tokens": strings,
        "token_logprobs": values,
        "top_logprobs": top,
        "text_offset": _offsets(strings),
    }
    return {"choices": [{"text": prompt, "logprobs": logprobs}]}


@pytest.mark.local_model
def test_correct_logprobs_from_the_model_pass(llama):
    with serve(lambda prompt, k: _direct(llama, prompt, k, shift=False)) as url:
        result = require_prompt_logprobs(url, "SmolLM2-135M-Instruct.Q4_1")
    assert result.ok and min(result.details["margins"]) >= 5.0
    assert result.details["top_is_own_token"] > result.details["top_is_next_token"]


@pytest.mark.local_model
def test_embedded_llama_cpp_python_server_is_refused_as_shifted(llama):
    from rolleval._local._launcher import LOCAL_MODEL_NAME, LocalServer, LocalServerOptions

    options = LocalServerOptions(server_options={"n_threads": 2}, server_module="llama_cpp.server")
    with LocalServer(options) as server:
        result = probe_prompt_logprobs(server.base_url, LOCAL_MODEL_NAME)
        assert (result.ok, result.fault) == (False, "shifted"), result.message
        with pytest.raises(UsageError, match=r"\(shifted\)"):
            require_prompt_logprobs(server.base_url, LOCAL_MODEL_NAME)
        # the diagnosis: the server's values are the model's distribution of the token's
        # own position (the one that predicts the next token), computed directly
        text = PROBE_TEXTS[0]
        served = parse_echo(
            httpx.post(
                server.base_url + "/completions",
                json={
                    "model": LOCAL_MODEL_NAME,
                    "prompt": text,
                    "max_tokens": 1,
                    "temperature": 0.0,
                    "echo": True,
                    "logprobs": 3,
                },
                timeout=120,
            ).json(),
            text,
        )
    shifted = parse_echo(_direct(llama, text, 3, shift=True), text)
    assert served.tokens == shifted.tokens
    diffs = [
        abs(a - b)
        for a, b in zip(served.token_logprobs[1:], shifted.token_logprobs[1:], strict=True)
    ]
    assert max(diffs) < 0.05, diffs  # same weights, quantised kernels: close, not bit-equal
    assert not math.isclose(
        served.total(), parse_echo(_direct(llama, text, 3, shift=False), text).total()
    )
