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
* :func:`kl_capped_tail`: tighter, still a lower bound: the tokens only one side lists stay
  apart from the tail, their unknown probability on the other side bounded by that side's
  smallest listed probability (a token a server leaves out of its top-K list is at most as
  likely as the K-th), and the bound is the smallest KL divergence any pair of distributions
  consistent with what is known can have.
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
    "kl_capped_tail",
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


def _exp(logprobs: object) -> np.ndarray:
    return np.exp(np.asarray(logprobs, dtype=np.float64).reshape(-1))


#: The one-sided tokens sorted per position: the largest this many (a full side's 49,152
#: entries are summed, not sorted, beyond them; all are sorted when more would be capped).
_KEEP = 512


def _largest(x: np.ndarray, keep: int | None = _KEEP) -> tuple[np.ndarray, float, float]:
    """The ``keep`` largest positive entries, descending; the sum and the largest of the rest."""
    x = x[x > 0]
    if keep is None or x.size <= keep:
        return np.sort(x)[::-1], 0.0, 0.0
    part = np.argpartition(-x, keep)
    top, others = x[part[:keep]], x[part[keep:]]
    return np.sort(top)[::-1], float(others.sum()), float(others.max())


def _candidate_capped(
    p_only: np.ndarray, q_cap: float, p_rest: float, q_rest: float, keep: int | None = _KEEP
) -> float:
    """``min sum_v p_v log(p_v / q_v) + p_rest log(p_rest / Q_U)`` over ``0 <= q_v <= q_cap``
    with ``Q_U = q_rest - sum q_v >= 0``: NaN when no candidate solution is consistent.

    Stationarity (the problem is convex): ``q_v = min(q_cap, p_v / rho)`` and ``Q_U = p_rest
    / rho`` for one ``rho > 0``; with the ``m`` largest ``p_v`` capped, ``rho = (sum of the
    uncapped p + p_rest) / (q_rest - m q_cap)``, and the ``m`` that is consistent with its
    ``rho`` (``p_(m) >= rho q_cap >= p_(m+1)``) gives the minimum
    ``sum_capped p log(p / q_cap) + (sum_uncapped p + p_rest) log rho``.
    """
    p, rest, below_all = _largest(p_only, keep)
    tail = np.append(np.cumsum(p[::-1])[::-1], 0.0) + rest  # tail[m]: sum beyond the m largest
    head = np.append(0.0, np.cumsum(p * np.log(p / q_cap)))  # head[m]: the m capped terms
    m = np.arange(p.size + 1)
    denom = q_rest - m * q_cap
    num = tail + p_rest
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(denom > 0, num / denom, np.inf)
        level = rho * q_cap
        above = np.append(np.inf, p)  # p_(m), the smallest capped
        below = np.append(p, below_all)  # p_(m+1), the largest uncapped
        ok = (denom > 0) & (above >= level * (1 - 1e-9)) & (level >= below * (1 - 1e-9))
        if rest > 0:
            ok[-1] = False  # more than the kept largest would be capped: sort them all
        if not ok.any():
            return math.nan if rest == 0 else _candidate_capped(p_only, q_cap, p_rest, q_rest, None)
        j = int(np.flatnonzero(ok)[0])
        return float(head[j] + (num[j] * math.log(rho[j]) if num[j] > 0 else 0.0))


def _baseline_capped(
    q_only: np.ndarray, p_cap: float, p_rest: float, q_rest: float, keep: int | None = _KEEP
) -> float:
    """``min sum_v p_v log(p_v / q_v) + P_U log(P_U / q_rest)`` over ``0 <= p_v <= p_cap``
    with ``P_U = p_rest - sum p_v >= 0``: NaN when no solution is consistent.

    Stationarity: ``p_v = min(p_cap, rho q_v)``, ``P_U = rho q_rest``; with the ``m`` largest
    ``q_v`` capped, ``rho = (p_rest - m p_cap) / (sum of the uncapped q + q_rest)``, and the
    consistent ``m`` (``rho q_(m) >= p_cap >= rho q_(m+1)``) gives
    ``sum_capped p_cap log(p_cap / q) + (p_rest - m p_cap) log rho``.
    """
    q, rest, below_all = _largest(q_only, keep)
    tail = np.append(np.cumsum(q[::-1])[::-1], 0.0) + rest
    head = np.append(0.0, np.cumsum(p_cap * np.log(p_cap / q)))
    m = np.arange(q.size + 1)
    num = p_rest - m * p_cap
    denom = tail + q_rest
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where((denom > 0) & (num >= 0), num / denom, np.nan)
        above = np.append(np.inf, q) * rho
        below = np.append(q, below_all) * rho
        ok = np.isfinite(rho) & (above >= p_cap * (1 - 1e-9)) & (below <= p_cap * (1 + 1e-9))
        if rest > 0:
            ok[-1] = False
        if not ok.any():
            return math.nan if rest == 0 else _baseline_capped(q_only, p_cap, p_rest, q_rest, None)
        j = int(np.flatnonzero(ok)[0])
        return float(head[j] + (num[j] * math.log(rho[j]) if num[j] > 0 else 0.0))


def kl_capped_tail(
    baseline_known: object,
    candidate_known: object,
    *,
    baseline_only: object = (),
    candidate_floor: float = 0.0,
    candidate_only: object = (),
    baseline_floor: float = 0.0,
) -> float:
    r"""A lower bound on ``KL(P || Q)`` from partial knowledge, tighter than the merged tail.

    Known: ``baseline_known[j]``, ``candidate_known[j]``, both sides' log-probs of the tokens
    S listed on both sides; ``baseline_only``: the baseline's log-probs of tokens A the
    baseline lists and the candidate does not, whose candidate probability is therefore at
    most ``exp(candidate_floor)`` (the candidate's smallest listed log-prob: a server lists
    its K most likely tokens); ``candidate_only``: the candidate's log-probs of tokens C it
    lists and the baseline does not (baseline probability at most ``exp(baseline_floor)``).
    Everything else is the tail U, of mass ``1 - sum`` on each side.

    The bound is the minimum of the KL divergence of the coarsening (the tokens of S and A,
    or of S and C, one by one, everything else one bucket) over every completion consistent
    with the known values and the caps:

    .. math::

        \sum_{v \in S} P_v \lograc{P_v}{Q_v}
        + \min_{0 \le q_v \le q_{cap}} \Big[\sum_{v \in A} P_v \lograc{P_v}{q_v}
        + P_U \lograc{P_U}{Q_U}\Big]

    The true distributions are one such completion and coarsening never raises the KL
    divergence (data processing; the log-sum inequality), so the value is at most the exact
    KL, and at least :func:`kl_merged_tail` (which drops the caps). When A is not empty,
    C is merged into the tail (one cap at a time keeps the minimisation monotone in its
    multiplier); when A is empty, C is kept apart with its cap. With no caps
    (``floor = 0``) or no A and C, equal to :func:`kl_merged_tail`. Inconsistent input
    (rounding making the caps unattainable) falls back to :func:`kl_merged_tail`.
    """
    p_log = np.asarray(baseline_known, dtype=np.float64).reshape(-1)
    q_log = np.asarray(candidate_known, dtype=np.float64).reshape(-1)
    merged = kl_merged_tail(p_log, q_log)
    p_a, q_c = _exp(baseline_only), _exp(candidate_only)
    if p_a.size == 0 and q_c.size == 0:
        return merged
    p = np.exp(p_log)
    with np.errstate(invalid="ignore"):
        head = float(np.where(p > 0, p * (p_log - q_log), 0.0).sum())
    p_rest, q_rest = _tail(p_log), _tail(q_log)
    if p_a.size:
        pu = max(p_rest - float(p_a.sum()), 0.0)
        value = _candidate_capped(p_a, math.exp(candidate_floor), pu, q_rest)
    else:
        qu = max(q_rest - float(q_c.sum()), 0.0)
        value = _baseline_capped(q_c, math.exp(baseline_floor), p_rest, qu)
    if not math.isfinite(value):
        return merged
    return max(head + value, merged)


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
