"""Per-token drift mathematics: pure functions of log-probabilities (natural log, nats).

Notation: at one position of a text, ``P`` is the baseline's next-token distribution and
``Q`` the candidate's, both over the same vocabulary; ``x`` is the text's actual token.

* :func:`kl_divergence`: ``KL(P || Q) = sum_v P(v) (log P(v) - log Q(v))``, exact, from
  full-vocabulary log-probabilities (a row per position).
* :func:`kl_merged_tail`: the same from the tokens known on both sides only (top-K lists):
  every token not known on both sides is merged into one *tail* bucket whose mass is what
  the known tokens leave (``1 - sum``), on each side. This is the KL divergence of the two
  coarsened distributions, and by the log-sum inequality it is never above the exact
  value: it is a lower bound, equal to the exact value when every token is known. How far
  below depends on K and the model (docs/contract.md, "Drift"); the tail masses are floored
  at :data:`TAIL_FLOOR` so a side whose listed tokens carry all its mass (to rounding)
  gives a finite figure.
* :func:`kl_from_top`: :func:`kl_merged_tail` over two ``{token: log-prob}`` maps (keyed by
  token id where the server gives ids, else by token text), shared keys only.
* :func:`top1_agreement`: the two sides' most likely tokens are the same token.
* :func:`delta_nll`: ``-log Q(x) - (-log P(x))``: positive when the candidate finds the
  actual token less likely than the baseline does (candidate worse).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping

import numpy as np

__all__ = [
    "TAIL_FLOOR",
    "argmax_key",
    "delta_nll",
    "kl_divergence",
    "kl_from_top",
    "kl_merged_tail",
    "top1_agreement",
]

#: Smallest tail mass used on either side of :func:`kl_merged_tail` (the mass ``1 - sum``
#: of the known tokens, computed in float64, can come out 0 or slightly negative when the
#: listed tokens carry all of a side's probability to rounding).
TAIL_FLOOR = 1e-12


def _rows(x: object, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim not in (1, 2) or a.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D row or a 2-D array of rows")
    return a


def kl_divergence(baseline_logprobs: object, candidate_logprobs: object) -> np.ndarray | float:
    """Exact ``KL(P_baseline || P_candidate)`` in nats from full-vocabulary log-probs.

    Each argument is one row (1-D: a float) or one row per position (2-D: an array), the
    natural-log probabilities of every vocabulary entry. Entries where the baseline's
    probability is 0 (log-prob ``-inf``) contribute 0; rows are used as given (they should
    each sum to 1 in probability: normalise with a log-softmax first). Computed in float64.
    Matches ``scipy.special.rel_entr(p, q).sum()`` and ``scipy.stats.entropy(p, q)``.
    """
    p_log = _rows(baseline_logprobs, "baseline_logprobs")
    q_log = _rows(candidate_logprobs, "candidate_logprobs")
    if p_log.shape != q_log.shape:
        raise ValueError(f"shapes differ: baseline {p_log.shape}, candidate {q_log.shape}")
    p = np.exp(p_log)
    with np.errstate(invalid="ignore"):
        terms = np.where(p > 0, p * (p_log - q_log), 0.0)
    kl = terms.sum(axis=-1)
    return float(kl) if kl.ndim == 0 else kl


def _tail(logprobs: np.ndarray) -> float:
    """``1 - sum(exp(logprobs))``, the mass outside the given tokens, floored."""
    total = float(np.exp(logprobs).sum())
    return max(1.0 - total, TAIL_FLOOR)


def kl_merged_tail(baseline_known: object, candidate_known: object) -> float:
    """``KL`` of the two distributions coarsened to the known tokens plus one tail bucket.

    ``baseline_known[j]`` and ``candidate_known[j]`` are the two sides' log-probs of the
    same token j; every token not listed is merged into the tail, of mass ``1 - sum`` on
    each side (floored at :data:`TAIL_FLOOR`). A lower bound on the exact KL divergence
    (log-sum inequality), equal to it when the known tokens are the whole vocabulary (then
    both tails are rounding, at most ``TAIL_FLOOR``-sized terms). Never negative.
    """
    p_log = np.asarray(baseline_known, dtype=np.float64).reshape(-1)
    q_log = np.asarray(candidate_known, dtype=np.float64).reshape(-1)
    if p_log.shape != q_log.shape:
        raise ValueError(f"shapes differ: baseline {p_log.shape}, candidate {q_log.shape}")
    p = np.exp(p_log)
    with np.errstate(invalid="ignore"):
        head = float(np.where(p > 0, p * (p_log - q_log), 0.0).sum())
    p_tail, q_tail = _tail(p_log), _tail(q_log)
    return max(head + p_tail * math.log(p_tail / q_tail), 0.0)


def kl_from_top(
    baseline_top: Mapping[Hashable, float], candidate_top: Mapping[Hashable, float]
) -> float:
    """:func:`kl_merged_tail` over the tokens listed on both sides (``{token: log-prob}``
    maps, e.g. a server's ``top_logprobs`` entry with the actual token added)."""
    shared = [k for k in baseline_top if k in candidate_top]
    return kl_merged_tail([baseline_top[k] for k in shared], [candidate_top[k] for k in shared])


def argmax_key(top: Mapping[Hashable, float]) -> Hashable:
    """The most likely token of a ``{token: log-prob}`` map (the first listed on a tie)."""
    if not top:
        raise ValueError("no tokens listed")
    best = next(iter(top))
    for k, v in top.items():
        if v > top[best]:
            best = k
    return best


def top1_agreement(
    baseline_top: Mapping[Hashable, float], candidate_top: Mapping[Hashable, float]
) -> bool:
    """Both sides' most likely tokens are the same (each side's argmax of its own map)."""
    return argmax_key(baseline_top) == argmax_key(candidate_top)


def delta_nll(baseline_logprob: float, candidate_logprob: float) -> float:
    """Candidate minus baseline negative log-likelihood of the actual token, in nats
    (``baseline_logprob - candidate_logprob``; positive = the candidate worse)."""
    return float(baseline_logprob) - float(candidate_logprob)
