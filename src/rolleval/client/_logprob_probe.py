"""Trust no endpoint's prompt log-probabilities: probe them before a log-likelihood run.

A log-likelihood task scores each option by the log-probabilities the server reports for
the prompt's own tokens (``/v1/completions`` with ``echo`` and ``logprobs``). Servers get
this wrong in ways that do not raise an error:

* llama.cpp's own server returns no prompt log-probs at all;
* llama-cpp-python's server returns them shifted by one position: the entry of token *i*
  holds the distribution that predicts token *i + 1* (its top alternative for " capital" in
  "The capital of France is Paris" is " of"), and the token's own value is read from that
  wrong distribution.

:func:`probe_prompt_logprobs` sends a few fixed texts and their scrambled versions and
checks, in this order (the first failure is the fault):

``missing``
    every text comes back with a log-prob for each of its tokens after the first;
``inconsistent``
    each such log-prob is a number <= 0, equals the token's entry among its position's top
    log-probs when listed there (else is no larger than the smallest listed), and the listed
    probabilities sum to at most 1;
``shifted``
    the most likely alternative at a position is the text's token at that position more
    often than it is the *next* token (a shifted server shows the opposite);
``not_discriminating``
    every fluent text scores at least :data:`MIN_MARGIN` nats above the same words in
    reverse order.

:func:`require_prompt_logprobs` raises :class:`~rolleval.errors.UsageError` (exit 2) naming
the server and the fault. The analysis (:func:`analyse_prompt_logprobs`) is pure; only
:func:`probe_prompt_logprobs` does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..errors import UsageError

__all__ = [
    "MIN_MARGIN",
    "PROBE_TEXTS",
    "ProbeResult",
    "PromptLogprobs",
    "analyse_prompt_logprobs",
    "parse_echo",
    "probe_prompt_logprobs",
    "require_prompt_logprobs",
    "scramble",
]

#: Fluent texts whose reversed-word versions any language model finds far less likely.
PROBE_TEXTS: tuple[str, ...] = (
    "The capital of France is Paris, and the capital of Italy is Rome.",
    "One, two, three, four, five, six, seven, eight, nine, ten.",
    "The cat sat on the mat because it was tired after a long day.",
)
#: Nats by which each fluent text must outscore its scrambled version.
MIN_MARGIN = 5.0
_TOLERANCE = 1e-3


def scramble(text: str) -> str:
    """The same words in reverse order (a fixed, model-independent scramble)."""
    return " ".join(reversed(text.split()))


@dataclass(frozen=True)
class PromptLogprobs:
    """The echoed log-probs of one prompt's tokens (generated tokens dropped)."""

    tokens: list[str]
    token_logprobs: list[float | None]
    top: list[dict[str, float] | None]

    def total(self) -> float:
        """Sum of the log-probs of every token after the first."""
        return float(sum(v for v in self.token_logprobs[1:] if v is not None))


@dataclass(frozen=True)
class ProbeResult:
    """The verdict on an endpoint's prompt log-probs."""

    ok: bool
    fault: str | None
    """``None``, ``request_failed``, ``missing``, ``inconsistent``, ``shifted`` or
    ``not_discriminating``."""
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def parse_echo(response: Any, prompt: str) -> PromptLogprobs | None:
    """The prompt part of an echoed ``/v1/completions`` choice; ``None`` when the response
    carries no usable per-token log-probs for the prompt."""
    try:
        logprobs = response["choices"][0]["logprobs"]
        tokens = list(logprobs["tokens"])
        values = list(logprobs["token_logprobs"])
        top = list(logprobs.get("top_logprobs") or [None] * len(tokens))
        offsets = logprobs.get("text_offset")
    except (KeyError, IndexError, TypeError):
        return None
    if not tokens or len(values) != len(tokens) or len(top) != len(tokens):
        return None
    if isinstance(offsets, list) and len(offsets) == len(tokens):
        keep = sum(1 for o in offsets if isinstance(o, int) and o < len(prompt))
    else:  # no offsets: the tokens that spell the prompt
        keep, text = 0, ""
        while keep < len(tokens) and len(text) < len(prompt):
            text += str(tokens[keep])
            keep += 1
    if keep < 2:
        return None
    return PromptLogprobs(tokens[:keep], values[:keep], top[:keep])


def _consistency_errors(item: PromptLogprobs) -> list[str]:
    errors = []
    for i in range(1, len(item.tokens)):
        value, token, top = item.token_logprobs[i], item.tokens[i], item.top[i]
        where = f"token {i} ({token!r})"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            errors.append(f"{where} has log-prob {value!r}")
            continue
        if value > _TOLERANCE:
            errors.append(f"{where} has a positive log-prob {value:.4g}")
        if not top:
            continue
        listed = [v for v in top.values() if isinstance(v, (int, float))]
        if len(listed) != len(top):
            errors.append(f"{where}: top log-probs are not all numbers")
            continue
        if token in top:
            if abs(top[token] - value) > _TOLERANCE * max(1.0, abs(value)):
                errors.append(
                    f"{where}: log-prob {value:.4g} but {top[token]:.4g} among its top log-probs"
                )
        elif value > min(listed) + _TOLERANCE:
            errors.append(
                f"{where}: log-prob {value:.4g} is above every listed alternative yet not listed"
            )
        if math.log(sum(math.exp(v) for v in listed)) > _TOLERANCE:
            errors.append(f"{where}: the listed probabilities sum to more than 1")
    return errors


def _best(top: dict[str, float] | None) -> str | None:
    return max(top, key=lambda k: top[k]) if top else None


def analyse_prompt_logprobs(
    fluent: Sequence[PromptLogprobs | None], scrambled: Sequence[PromptLogprobs | None]
) -> ProbeResult:
    """The verdict on parsed probe responses (checks and order in the module docstring)."""
    missing = [i for i, item in enumerate([*fluent, *scrambled]) if item is None]
    if missing or any(
        all(v is None for v in item.token_logprobs[1:])
        for item in [*fluent, *scrambled]
        if item is not None
    ):
        return ProbeResult(
            False,
            "missing",
            "no per-token log-probs for the prompt (echo with logprobs is not supported)",
            {"texts_without_logprobs": len(missing)},
        )
    items = [item for item in [*fluent, *scrambled] if item is not None]
    errors = [e for item in items for e in _consistency_errors(item)]
    if errors:
        return ProbeResult(
            False,
            "inconsistent",
            f"{len(errors)} inconsistent prompt log-prob(s), first: {errors[0]}",
            {"errors": errors[:20]},
        )
    aligned = shifted = 0
    for item in fluent:
        assert item is not None
        for i in range(1, len(item.tokens)):
            best = _best(item.top[i])
            aligned += best == item.tokens[i]
            if i + 1 < len(item.tokens):
                shifted += best == item.tokens[i + 1]
    details: dict[str, Any] = {"top_is_own_token": aligned, "top_is_next_token": shifted}
    if shifted > aligned:
        return ProbeResult(
            False,
            "shifted",
            f"prompt log-probs are shifted by one position: the most likely alternative is the "
            f"next token at {shifted} positions and the token itself at {aligned}",
            details,
        )
    margins = [
        f.total() - s.total()
        for f, s in zip(fluent, scrambled, strict=True)
        if f is not None and s is not None
    ]
    details["margins"] = margins
    if min(margins) < MIN_MARGIN:
        return ProbeResult(
            False,
            "not_discriminating",
            f"a fluent text scores only {min(margins):.2f} nats above its scrambled words "
            f"(at least {MIN_MARGIN:g} expected)",
            details,
        )
    return ProbeResult(True, None, "prompt log-probs are present, consistent and aligned", details)


def probe_prompt_logprobs(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    top_logprobs: int = 5,
    timeout_s: float = 120.0,
    texts: Sequence[str] = PROBE_TEXTS,
) -> ProbeResult:
    """Ask ``base_url`` (an OpenAI-compatible ``.../v1``) for the echoed log-probs of the
    probe texts and their scrambled versions, and judge them."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    parsed: list[PromptLogprobs | None] = []
    prompts = [*texts, *map(scramble, texts)]
    with httpx.Client(timeout=timeout_s, headers=headers) as http:
        for prompt in prompts:
            body = {
                "model": model,
                "prompt": prompt,
                "max_tokens": 1,
                "temperature": 0.0,
                "echo": True,
                "logprobs": top_logprobs,
            }
            try:
                response = http.post(base_url.rstrip("/") + "/completions", json=body)
                response.raise_for_status()
                data = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                return ProbeResult(False, "request_failed", f"probe request failed: {exc}")
            parsed.append(parse_echo(data, prompt))
    return analyse_prompt_logprobs(parsed[: len(texts)], parsed[len(texts) :])


def require_prompt_logprobs(base_url: str, model: str, **options: Any) -> ProbeResult:
    """:func:`probe_prompt_logprobs`, raising :class:`UsageError` (exit 2) unless it passes."""
    result = probe_prompt_logprobs(base_url, model, **options)
    if not result.ok:
        raise UsageError(
            f"{base_url} (model {model!r}): prompt log-probs unusable for log-likelihood "
            f"scoring ({result.fault}): {result.message}"
        )
    return result
