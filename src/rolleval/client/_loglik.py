"""Scoring the options of a log-likelihood problem through ``/v1/completions``.

Each option is one request: the option's context followed by its continuation, sent with
``echo`` and ``logprobs`` so the server returns a log-prob for every prompt token. The
option's score is the sum over the tokens that reach into the continuation (found by
``text_offset``; a token straddling the boundary counts as continuation). The endpoint is
probed first (:mod:`._logprob_probe`), so these values are trusted to be aligned.

:func:`continuation_logprob` is pure; :func:`score_problem` does the requests.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ..records import OptionScore, PromptRecord
from ._completion import Completion

__all__ = ["continuation_logprob", "option_texts", "score_problem"]


def option_texts(prompt: PromptRecord) -> list[tuple[str, str, str]]:
    """``(option text, context, continuation)`` of each option of a log-likelihood prompt.

    The prompt record's ``extras`` hold ``choices`` and optionally ``continuations``
    (default: a space and the choice) and ``contexts`` (default: the prompt for every option).
    """
    choices = list(prompt.extras.get("choices") or [])
    if not isinstance(prompt.prompt, str) or len(choices) < 2:
        raise ValueError(
            f"problem {prompt.problem_id!r} is not a log-likelihood problem "
            "(a text prompt and at least 2 choices)"
        )
    continuations = prompt.extras.get("continuations") or [" " + c for c in choices]
    contexts = prompt.extras.get("contexts") or [prompt.prompt] * len(choices)
    return list(zip(choices, contexts, continuations, strict=True))


def continuation_logprob(data: Any, context: str, continuation: str) -> tuple[float, int]:
    """``(sum of log-probs, token count)`` of ``continuation`` in an echoed response to
    ``context + continuation``. ``ValueError`` when the response has no usable log-probs."""
    text = context + continuation
    try:
        logprobs = data["choices"][0]["logprobs"]
        tokens = list(logprobs["tokens"])
        values = list(logprobs["token_logprobs"])
        offsets = logprobs.get("text_offset")
    except (KeyError, IndexError, TypeError):
        raise ValueError("the response has no echoed log-probs (choices[0].logprobs)") from None
    if len(values) != len(tokens) or not tokens:
        raise ValueError("the response's tokens and token_logprobs differ in length")
    if not (isinstance(offsets, list) and len(offsets) == len(tokens)):
        offsets, at = [], 0  # no offsets: the token texts spell the prompt
        for token in tokens:
            offsets.append(at)
            at += len(str(token))
    ends = [*offsets[1:], max(len(text), offsets[-1] + 1)]
    picked = [
        i
        for i in range(len(tokens))
        if isinstance(offsets[i], int) and offsets[i] < len(text) and ends[i] > len(context)
    ]
    if not picked:
        raise ValueError("no echoed token covers the continuation")
    total = 0.0
    for i in picked:
        value = values[i]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValueError(
                f"token {i} ({tokens[i]!r}) of the continuation has log-prob {value!r}"
            )
        total += float(value)
    return total, len(picked)


def _total(values: list[int | None]) -> int | None:
    """The sum, or ``None`` when any value is missing (a total not measured is N/A)."""
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


async def score_problem(client: Any, prompt: PromptRecord) -> Completion:
    """Score every option of one problem (one request each, concurrently, through
    :meth:`Client.echo`) into one :class:`Completion` whose ``options`` hold the scores and
    whose ``text`` is the option with the highest log-prob. A failed option fails the whole
    rollout (status and error of the first failure, the option named)."""
    parts = option_texts(prompt)
    results = await asyncio.gather(*(client.echo(ctx + cont) for _, ctx, cont in parts))
    latency = max(c.latency_s for _, c in results)
    retries = sum(c.retries for _, c in results)
    last = results[-1][1]
    prompt_tokens = [c.prompt_tokens for _, c in results]
    completion_tokens = [c.completion_tokens for _, c in results]
    scores: list[OptionScore] = []
    error: tuple[str, str] | None = None
    for i, ((text, ctx, cont), (data, comp)) in enumerate(zip(parts, results, strict=True)):
        if comp.status != "ok":
            error = (comp.status, f"option {i}: {comp.error}")
            break
        try:
            logprob, n_tokens = continuation_logprob(data, ctx, cont)
        except ValueError as exc:
            error = ("infra_error", f"option {i}: unusable log-probs: {exc}")
            break
        scores.append(OptionScore(text=text, logprob=logprob, tokens=n_tokens, chars=len(cont)))
    common = {
        "latency_s": latency,
        "retries": retries,
        "model": last.model,
        "system_fingerprint": last.system_fingerprint,
        "endpoint": last.endpoint,
        "finish_reason": None,
    }
    if error is not None:
        return Completion(
            status=error[0],  # type: ignore[arg-type]
            text=None,
            prompt_tokens=None,
            completion_tokens=None,
            error=error[1],
            **common,
        )
    best = max(range(len(scores)), key=lambda i: (scores[i].logprob, -i))
    return Completion(
        status="ok",
        text=scores[best].text,
        prompt_tokens=_total(prompt_tokens),
        completion_tokens=_total(completion_tokens),
        error=None,
        options=tuple(scores),
        **common,
    )
