"""The embedded model's server: llama-cpp-python's, with correct prompt log-probs.

``python -m rolleval._local._serve`` takes the arguments of ``python -m llama_cpp.server``
and serves the same OpenAI-protocol app, with one change: a ``/v1/completions`` request
with ``echo`` and ``logprobs`` is answered here, from the model's logits, instead of by
llama-cpp-python, whose echoed prompt log-probs are shifted by one position (the entry of
token *i* is read from the distribution that predicts token *i + 1*; llama-cpp-python issue
1983). Everything else (generation, chat, ``/v1/models``) is llama-cpp-python's own.

:func:`prompt_logprobs` does the computation: the prompt is tokenized as
llama-cpp-python tokenizes a completion prompt, evaluated once with ``logits_all``, and
token *i* gets ``log_softmax(logits[i - 1])[token_i]``; the first token has none.

**Opt-in request field** ``"rolleval"`` (an object; other servers never see it, and
without it the answer is the plain OpenAI one): ``{"token_ids": true}`` adds to
``choices[0].logprobs`` the token ids (``token_ids``) and each position's listed
alternatives keyed by id, ``top_logprob_ids``: ``[[id, text, logprob], ...]`` per token
(``None`` for the first), most likely first, the token itself included (several tokens
print as the same or as empty text, so text-keyed ``top_logprobs`` entries collide);
``{"full_logprobs": true}`` (implies ``token_ids``) adds ``full_logprobs``: every prompt
position's whole next-token distribution, ``{"encoding": "base64-float32-le", "shape":
[n_prompt_tokens, n_vocab], "data": ...}``, row *i* the log-probs that predict token *i*
(row 0 NaN). rolleval's drift measurement (:mod:`rolleval.drift`) asks for it to score a
side exactly.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

__all__ = ["EchoLogprobsApp", "log_softmax", "prompt_logprobs"]


def log_softmax(row: np.ndarray) -> np.ndarray:
    """Natural-log probabilities of one row of logits (computed in float64)."""
    x = np.asarray(row, dtype=np.float64)
    m = float(np.max(x))
    return x - (m + float(np.log(np.sum(np.exp(x - m)))))


def _top(row: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values of ``row``, largest first."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, len(row))
    part = np.argpartition(-row, k - 1)[:k]
    return part[np.argsort(-row[part], kind="stable")]


def _options(request: dict[str, Any]) -> tuple[bool, bool]:
    """``(token_ids, full_logprobs)`` asked for by the opt-in ``"rolleval"`` field."""
    opt = request.get("rolleval")
    if not isinstance(opt, dict):
        return False, False
    full = opt.get("full_logprobs") is True
    return full or opt.get("token_ids") is True, full


def prompt_logprobs(
    llama: Any,
    prompt: str,
    top: int,
    max_tokens: int = 1,
    *,
    token_ids: bool = False,
    full_logprobs: bool = False,
) -> dict[str, Any]:
    """The ``choices[0]`` and ``usage`` of an echoed completion of ``prompt``: every prompt
    token's log-prob given the tokens before it, its ``top`` most likely alternatives (and
    itself), character offsets, then ``max_tokens`` (0 or 1) greedy token appended.
    ``token_ids`` and ``full_logprobs``: the opt-in fields of the module docstring."""
    tokens: list[int] = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    if len(tokens) + 1 > llama.n_ctx():
        raise ValueError(f"the prompt has {len(tokens)} tokens; the context holds {llama.n_ctx()}")
    llama.reset()
    llama.eval(tokens)
    scores = np.array(llama.scores[: len(tokens)], copy=True)  # float32; rows go to float64
    pieces = [llama.detokenize([t], prev_tokens=tokens[:i]) for i, t in enumerate(tokens)]
    texts: list[str] = []
    offsets: list[int] = []
    done = b""
    for piece in pieces:
        offsets.append(len(done.decode("utf-8", errors="ignore")))
        texts.append(piece.decode("utf-8", errors="replace"))
        done += piece

    def text_of(token: int, i: int) -> str:
        text: str = llama.detokenize([token], prev_tokens=tokens[:i]).decode("utf-8", "replace")
        return text

    values: list[float | None] = [None]
    tops: list[dict[str, float] | None] = [None]
    top_ids: list[list[list[Any]] | None] = [None]
    full = (
        np.full((len(tokens), scores.shape[1]), np.nan, dtype=np.float32) if full_logprobs else None
    )
    for i in range(1, len(tokens)):
        row = log_softmax(scores[i - 1])
        if full is not None:
            full[i] = row
        values.append(float(row[tokens[i]]))
        listed = [int(t) for t in _top(row, top)]
        entry = {text_of(t, i): float(row[t]) for t in listed}
        entry.setdefault(texts[i], float(row[tokens[i]]))
        tops.append(entry)
        if token_ids:
            if tokens[i] not in listed:
                listed.append(int(tokens[i]))
            top_ids.append([[t, text_of(t, i), float(row[t])] for t in listed])
    text = prompt
    completion_tokens = 0
    if max_tokens > 0:
        row = log_softmax(scores[-1])
        nxt = int(np.argmax(row))
        piece = text_of(nxt, len(tokens))
        offsets.append(len(done.decode("utf-8", errors="ignore")))
        texts.append(piece)
        values.append(float(row[nxt]))
        tops.append({text_of(int(t), len(tokens)): float(row[t]) for t in _top(row, top)})
        text += piece
        completion_tokens = 1
    logprobs = {
        "tokens": texts,
        "token_logprobs": values,
        "top_logprobs": tops,
        "text_offset": offsets,
    }
    if token_ids:
        logprobs["token_ids"] = [int(t) for t in tokens]
        logprobs["top_logprob_ids"] = top_ids
    if full is not None:
        logprobs["full_logprobs"] = {
            "encoding": "base64-float32-le",
            "shape": list(full.shape),
            "data": base64.b64encode(full.astype("<f4").tobytes()).decode("ascii"),
        }
    return {
        "choice": {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": "length"},
        "usage": {
            "prompt_tokens": len(tokens),
            "completion_tokens": completion_tokens,
            "total_tokens": len(tokens) + completion_tokens,
        },
    }


class EchoLogprobsApp:
    """ASGI wrapper: echo-with-logprobs completions answered by :func:`prompt_logprobs`
    under llama-cpp-python's own model lock; every other request goes to ``app``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if not (
            scope.get("type") == "http"
            and scope.get("method") == "POST"
            and str(scope.get("path", "")).endswith("/completions")
            and not str(scope.get("path", "")).endswith("/chat/completions")
        ):
            await self.app(scope, receive, send)
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if not (
            isinstance(request, dict)
            and request.get("echo")
            and request.get("logprobs") is not None
            and isinstance(request.get("prompt"), str)
            and request["prompt"]
        ):
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        status, payload = await self._answer(request)
        data = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})

    async def _answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        from llama_cpp.server import app as server_app
        from starlette.concurrency import run_in_threadpool

        top = int(request["logprobs"])
        max_tokens = 0 if request.get("max_tokens") == 0 else 1
        token_ids, full_logprobs = _options(request)
        try:
            async with contextlib.asynccontextmanager(server_app.get_llama_proxy)() as proxy:
                llama = proxy(request.get("model"))
                result = await run_in_threadpool(
                    functools.partial(
                        prompt_logprobs,
                        token_ids=token_ids,
                        full_logprobs=full_logprobs,
                    ),
                    llama,
                    request["prompt"],
                    top,
                    max_tokens,
                )
        except Exception as exc:
            return 500, {
                "error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}
            }
        return 200, {
            "id": "cmpl-echo",
            "object": "text_completion",
            "created": 0,
            "model": request.get("model"),
            "choices": [result["choice"]],
            "usage": result["usage"],
        }


def main() -> None:  # pragma: no cover - the server process
    """``python -m llama_cpp.server``'s main, with the app wrapped in :class:`EchoLogprobsApp`."""
    import argparse

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description="rolleval's embedded llama.cpp server")
    add_args_from_model(parser, Settings)
    args = parser.parse_args()
    try:
        server_settings: Any = parse_model_from_args(ServerSettings, args)
        model_settings: Any = [parse_model_from_args(ModelSettings, args)]
    except Exception as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    if not model_settings[0].logits_all:
        print("rolleval's embedded server needs logits_all", file=sys.stderr)
        sys.exit(1)
    app = create_app(server_settings=server_settings, model_settings=model_settings)
    uvicorn.run(
        EchoLogprobsApp(app),
        host=os.getenv("HOST", server_settings.host),
        port=int(os.getenv("PORT", server_settings.port)),
    )


if __name__ == "__main__":  # pragma: no cover
    main()
