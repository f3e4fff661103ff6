"""Both sides' scores of one text, token by token (pure): :func:`compare_text`.

The two sides must have tokenized the text identically (same ids, or same token texts
where a side gives no ids); otherwise :class:`TokenizerMismatch` names the first token that
differs. A position is scored when both sides give the actual token a finite log-prob (the
first token has none). Per position:

* both sides sent full-vocabulary log-probs: the exact KL divergence;
* one did: the tokens the other side lists, with the full side's values at them, every
  other token of the full side apart, its probability on the listing side capped at that
  side's smallest listed one (:func:`~rolleval.drift._math.kl_capped_tail`);
* neither, matched by id: the tokens both sides list, the tokens one side lists capped on
  the other side, the rest one tail (:func:`~rolleval.drift._math.kl_capped_tail`);
* neither, matched by text: the tokens both sides list and one merged tail
  (:func:`~rolleval.drift._math.kl_merged_tail`; a cap needs distinct tokens, and texts
  can collide).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ._math import argmax_key, kl_capped_tail, kl_divergence, kl_merged_tail
from ._scores import SideScores

__all__ = ["TextFigures", "TokenizerMismatch", "compare_text"]

#: Alternatives kept per side and position for reports (the worst tokens in context).
SHOWN_ALTERNATIVES = 3


class TokenizerMismatch(UsageError):
    """The two sides split a text into different tokens (exit 2)."""


@dataclass(frozen=True)
class TextFigures:
    """Per-token figures of one text (arrays over its scored positions)."""

    positions: np.ndarray
    """Index of each scored token in the text's token sequence."""
    kld: np.ndarray
    agree: np.ndarray
    delta_nll: np.ndarray
    baseline_tail: np.ndarray
    """The baseline's probability outside the tokens the KL was computed on (0 when exact)."""
    keyed_by: str
    """``id`` or ``text``: how the two sides' tokens and alternatives were matched."""
    exact: bool
    """Every position's KL is exact (both sides sent full distributions)."""
    tokens: tuple[str, ...]
    """Every token's text (the whole sequence, first token included)."""
    baseline_alternatives: tuple[tuple[tuple[str, float], ...], ...]
    candidate_alternatives: tuple[tuple[tuple[str, float], ...], ...]
    """Per scored position, each side's most likely tokens as ``(text, log-prob)``."""


def _align_keys(
    baseline: SideScores, candidate: SideScores, text_id: str
) -> tuple[SideScores, SideScores]:
    if baseline.keyed_by != candidate.keyed_by:
        baseline, candidate = baseline.by_text(), candidate.by_text()
    for i, (b, c) in enumerate(zip(baseline.keys, candidate.keys, strict=False)):
        if b != c:
            raise TokenizerMismatch(
                f"text {text_id!r}: the two sides tokenize it differently: token {i} is "
                f"{baseline.texts[i]!r} (key {b!r}) on the baseline and {candidate.texts[i]!r} "
                f"(key {c!r}) on the candidate; drift needs the same tokenizer on both sides"
            )
    if len(baseline) != len(candidate):
        short, side = (
            (len(candidate), "candidate")
            if len(candidate) < len(baseline)
            else (len(baseline), "baseline")
        )
        longer = baseline if side == "candidate" else candidate
        raise TokenizerMismatch(
            f"text {text_id!r}: the two sides tokenize it differently: the {side} has "
            f"{short} tokens, the other side's token {short} is {longer.texts[short]!r}; "
            "drift needs the same tokenizer on both sides"
        )
    return baseline, candidate


def _shown(side: SideScores, i: int, row: np.ndarray | None) -> tuple[tuple[str, float], ...]:
    if row is not None and len(side.top[i]) < SHOWN_ALTERNATIVES + 1:
        part = np.argpartition(-row, SHOWN_ALTERNATIVES)[:SHOWN_ALTERNATIVES]
        ids = part[np.argsort(-row[part], kind="stable")]
        names = side.top_texts[i] if side.top_texts is not None else {}
        return tuple((names.get(int(t), f"id {int(t)}"), float(row[t])) for t in ids)
    entry = side.top[i]
    best = sorted(entry.items(), key=lambda kv: -kv[1])[:SHOWN_ALTERNATIVES]
    if side.keyed_by == "id" and side.top_texts is not None:
        names = side.top_texts[i]
        return tuple((names.get(k, f"id {k}"), v) for k, v in best)
    return tuple((str(k), v) for k, v in best)


def _floor(side: SideScores, i: int) -> float:
    """The side's smallest listed log-prob at ``i`` (0.0, no cap, where unknown)."""
    if side.floors is None or not np.isfinite(side.floors[i]):
        return 0.0
    return float(side.floors[i])


def _rest(row: np.ndarray, keys: list[Hashable]) -> np.ndarray:
    """A full row's entries at every token not in ``keys``."""
    mask = np.ones(row.size, dtype=bool)
    mask[np.array(keys, dtype=np.int64)] = False
    return row[mask].astype(np.float64)


def _partial(baseline: SideScores, candidate: SideScores, i: int) -> tuple[float, bool, float]:
    """``(kl, agree, baseline tail)`` at position ``i`` when not both sides are full."""
    b_row = baseline.full[i] if baseline.full is not None else None
    c_row = candidate.full[i] if candidate.full is not None else None
    b_top, c_top = baseline.top[i], candidate.top[i]
    if b_row is not None:
        keys: list[Hashable] = list(c_top)
        p = np.array([b_row[int(k)] for k in keys], dtype=np.float64)  # type: ignore[call-overload]
        q = np.array([c_top[k] for k in keys], dtype=np.float64)
        kl = kl_capped_tail(
            p, q, baseline_only=_rest(b_row, keys), candidate_floor=_floor(candidate, i)
        )
        b_best: Hashable = int(np.argmax(b_row))
        c_best = argmax_key(c_top)
    elif c_row is not None:
        keys = list(b_top)
        p = np.array([b_top[k] for k in keys], dtype=np.float64)
        q = np.array([c_row[int(k)] for k in keys], dtype=np.float64)  # type: ignore[call-overload]
        kl = kl_capped_tail(
            p, q, candidate_only=_rest(c_row, keys), baseline_floor=_floor(baseline, i)
        )
        b_best, c_best = argmax_key(b_top), int(np.argmax(c_row))
    else:
        keys = [k for k in b_top if k in c_top]
        p = np.array([b_top[k] for k in keys], dtype=np.float64)
        q = np.array([c_top[k] for k in keys], dtype=np.float64)
        if baseline.keyed_by == "id":
            kl = kl_capped_tail(
                p,
                q,
                baseline_only=[v for k, v in b_top.items() if k not in c_top],
                candidate_floor=_floor(candidate, i),
                candidate_only=[v for k, v in c_top.items() if k not in b_top],
                baseline_floor=_floor(baseline, i),
            )
        else:
            kl = kl_merged_tail(p, q)
        b_best, c_best = argmax_key(b_top), argmax_key(c_top)
    tail = max(1.0 - float(np.exp(p).sum()), 0.0)
    return kl, b_best == c_best, tail


def compare_text(baseline: SideScores, candidate: SideScores, text_id: str) -> TextFigures:
    """Per-token KL divergence, top-1 agreement and delta NLL of one text."""
    baseline, candidate = _align_keys(baseline, candidate, text_id)
    ok = np.isfinite(baseline.logprobs) & np.isfinite(candidate.logprobs)
    ok[0] = False
    positions = np.flatnonzero(ok)
    dnll = baseline.logprobs[positions] - candidate.logprobs[positions]
    exact = baseline.full is not None and candidate.full is not None
    if exact:
        assert baseline.full is not None and candidate.full is not None
        b_rows = baseline.full[positions].astype(np.float64)
        c_rows = candidate.full[positions].astype(np.float64)
        kld = np.asarray(kl_divergence(b_rows, c_rows), dtype=np.float64).reshape(-1)
        agree = np.argmax(b_rows, axis=1) == np.argmax(c_rows, axis=1)
        tail = np.zeros(len(positions))
    else:
        parts = [_partial(baseline, candidate, int(i)) for i in positions]
        kld = np.array([x[0] for x in parts], dtype=np.float64)
        agree = np.array([x[1] for x in parts], dtype=bool)
        tail = np.array([x[2] for x in parts], dtype=np.float64)
    b_full, c_full = baseline.full, candidate.full
    return TextFigures(
        positions=positions,
        kld=kld,
        agree=agree,
        delta_nll=dnll,
        baseline_tail=tail,
        keyed_by=baseline.keyed_by,
        exact=exact,
        tokens=baseline.texts,
        baseline_alternatives=tuple(
            _shown(baseline, int(i), b_full[i] if b_full is not None else None) for i in positions
        ),
        candidate_alternatives=tuple(
            _shown(candidate, int(i), c_full[i] if c_full is not None else None) for i in positions
        ),
    )
