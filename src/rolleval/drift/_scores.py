"""One side's scores of one text, parsed from an echoed ``/v1/completions`` response (pure).

What a response can carry, best first:

* rolleval's own server with the opt-in ``"rolleval": {"full_logprobs": true}`` field
  (:mod:`rolleval._local._serve`): token ids, top-K alternatives keyed by id, and every
  position's full-vocabulary log-probs;
* token ids in the token strings (vLLM's ``return_tokens_as_token_ids``: ``"token_id:123"``);
* the plain OpenAI form: token texts, ``token_logprobs`` and ``top_logprobs`` keyed by text
  (several tokens print as the same or empty text, so such keys can collide).

Only the prompt's tokens are kept: those before ``usage.prompt_tokens``, else those whose
``text_offset`` lies inside the text, else those whose texts spell it.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["SideScores", "parse_side"]

_ID_PREFIX = "token_id:"


@dataclass(frozen=True)
class SideScores:
    """One side's teacher-forced scores of one text.

    ``keys[i]`` identifies token i (its id when ``keyed_by == "id"``, else its text);
    ``logprobs[i]`` is its log-prob given the tokens before it (NaN where none: the first);
    ``top[i]`` the listed alternatives ``{key: log-prob}`` (the token itself included);
    ``full`` the ``(n, n_vocab)`` log-probs when the server sent them (row i predicts
    token i), else ``None``. ``texts`` are the tokens' texts (for reports).
    """

    keys: tuple[Hashable, ...]
    texts: tuple[str, ...]
    logprobs: np.ndarray
    top: tuple[dict[Hashable, float], ...]
    keyed_by: Literal["id", "text"]
    full: np.ndarray | None = None
    top_texts: tuple[dict[Hashable, str], ...] | None = None
    """Per position, the text of each listed id (id-keyed sides only)."""
    floors: np.ndarray | None = None
    """Per position, the smallest log-prob the server listed, the actual token's entry left
    out (servers add the actual token to the list; NaN where nothing else is listed): every
    token the server left out is at most this likely (its top-K list holds its K most
    likely tokens; leaving the actual token out can only loosen the cap by one rank)."""

    def __len__(self) -> int:
        return len(self.keys)

    def by_text(self) -> SideScores:
        """The same scores keyed by token text (to meet a side that gives no ids); the
        full distribution is dropped (it cannot be keyed by text without the vocabulary)."""
        if self.keyed_by == "text":
            return self
        tops: list[dict[Hashable, float]] = []
        for i, entry in enumerate(self.top):
            names = self.top_texts[i] if self.top_texts is not None else {}
            out: dict[Hashable, float] = {}
            for key, value in entry.items():
                out.setdefault(names.get(key, str(key)), value)
            tops.append(out)
        return SideScores(
            keys=self.texts,
            texts=self.texts,
            logprobs=self.logprobs,
            top=tuple(tops),
            keyed_by="text",
            floors=self.floors,
        )


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def _keep(logprobs: dict[str, Any], usage: Any, text: str, n: int) -> int:
    prompt_tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(prompt_tokens, int) and 0 < prompt_tokens <= n:
        return prompt_tokens
    offsets = logprobs.get("text_offset")
    if isinstance(offsets, list) and len(offsets) == n:
        return sum(1 for o in offsets if isinstance(o, int) and o < len(text))
    keep, spelled = 0, 0  # no offsets: the tokens that spell the text
    tokens = logprobs["tokens"]
    while keep < n and spelled < len(text):
        spelled += len(str(tokens[keep]))
        keep += 1
    return keep


def _full(logprobs: dict[str, Any], keep: int) -> np.ndarray | None:
    block = logprobs.get("full_logprobs")
    if not isinstance(block, dict) or block.get("encoding") != "base64-float32-le":
        return None
    rows, width = block["shape"]
    data = np.frombuffer(base64.b64decode(block["data"]), dtype="<f4").reshape(rows, width)
    if rows < keep:
        raise ValueError(f"full_logprobs has {rows} rows for {keep} prompt tokens")
    return data[:keep]


def _floor(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return min(finite) if finite else math.nan


def parse_side(response: Any, text: str) -> SideScores:
    """The prompt tokens' scores in an echoed completion of ``text``. ``ValueError`` (with
    what is missing) when the response has no per-token log-probs."""
    try:
        logprobs = response["choices"][0]["logprobs"]
        tokens = [str(t) for t in logprobs["tokens"]]
        values = list(logprobs["token_logprobs"])
    except (KeyError, IndexError, TypeError):
        raise ValueError("the response has no echoed log-probs (choices[0].logprobs)") from None
    n = len(tokens)
    if n == 0 or len(values) != n:
        raise ValueError("the response's tokens and token_logprobs differ in length or are empty")
    keep = _keep(logprobs, response.get("usage"), text, n)
    lp = np.array([_number(v) for v in values[:keep]], dtype=np.float64)
    ids = logprobs.get("token_ids")
    top_ids = logprobs.get("top_logprob_ids")
    if isinstance(ids, list) and isinstance(top_ids, list) and len(ids) >= keep:
        tops: list[dict[Hashable, float]] = []
        names: list[dict[Hashable, str]] = []
        floors = np.full(keep, np.nan)
        for i in range(keep):
            entry = top_ids[i] or []
            tops.append({int(t): float(v) for t, _, v in entry})
            floors[i] = _floor([v for t, v in tops[i].items() if t != int(ids[i])])
            names.append({int(t): str(s) for t, s, _ in entry})
            if i > 0 and int(ids[i]) not in tops[i] and math.isfinite(lp[i]):
                tops[i][int(ids[i])] = float(lp[i])
        return SideScores(
            keys=tuple(int(t) for t in ids[:keep]),
            texts=tuple(tokens[:keep]),
            logprobs=lp,
            top=tuple(tops),
            keyed_by="id",
            full=_full(logprobs, keep),
            top_texts=tuple(names),
            floors=floors,
        )
    raw_top = list(logprobs.get("top_logprobs") or [None] * n)[:keep]
    as_ids = all(t.startswith(_ID_PREFIX) for t in tokens[:keep])
    keys: list[Hashable] = [int(t[len(_ID_PREFIX) :]) if as_ids else t for t in tokens[:keep]]
    tops = []
    floors = np.full(keep, np.nan)
    for i in range(keep):
        entry = raw_top[i] if i < len(raw_top) and isinstance(raw_top[i], dict) else {}
        out: dict[Hashable, float] = {}
        for k, v in entry.items():
            key: Hashable = int(k[len(_ID_PREFIX) :]) if as_ids and k.startswith(_ID_PREFIX) else k
            out[key] = _number(v)
        floors[i] = _floor([v for k, v in out.items() if k != keys[i]])
        if i > 0 and keys[i] not in out and math.isfinite(lp[i]):
            out[keys[i]] = float(lp[i])
        tops.append(out)
    return SideScores(
        keys=tuple(keys),
        texts=tuple(tokens[:keep]),
        logprobs=lp,
        top=tuple(tops),
        keyed_by="id" if as_ids else "text",
        floors=floors,
    )
