"""maj@n and self-consistency compared at a common k (their expectation depends on n).

maj@16 of a model is not maj@4 of the same model, so two runs with different numbers of
judged rollouts per problem cannot be compared on maj@n or self-consistency directly.
Both sides are evaluated instead at ``k_i = min(n_baseline_i, n_candidate_i)`` per problem,
with the exact subset estimator :func:`rolleval.metrics.majority_vote_at_k` (ties share the
vote). On equal, complete sides this is every rollout (``k = n``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UsageError
from ..metrics._vote import votes_at_k
from ._frame import ProblemFrame

__all__ = ["COMMON_K_METRICS", "common_k_values"]

#: Metrics whose per-problem expectation depends on the rollout count.
COMMON_K_METRICS = ("maj@n", "self_consistency")


def _vote_n(frame: ProblemFrame, pos: np.ndarray) -> np.ndarray:
    votes = frame.votes
    assert votes is not None
    return np.array(
        [sum(size for size, _ in votes[i][0]) + votes[i][1] for i in pos.tolist()], dtype=np.int64
    )


def common_k_values(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    pos_baseline: np.ndarray,
    pos_candidate: np.ndarray,
    metric: str,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Per-problem values of ``metric`` (maj@n or self_consistency) on both sides at a common k.

    Returns the baseline values, the candidate values (NaN where a side has no rollout)
    and a description (``k`` range, per-side n, a note). Refuses (``UsageError``, exit 2)
    when a side carries no answer clusters (a baseline file written before rolleval
    stored them).
    """
    for side, frame in (("baseline", baseline), ("candidate", candidate)):
        if frame.votes is None:
            raise UsageError(
                f"{frame.source}: task {frame.task!r} carries no answer clusters, so {metric} "
                f"cannot be evaluated at a common k with the other side; save the {side} "
                "baseline file again with this rolleval (`rolleval baseline save RUN`)"
            )
    nb = _vote_n(baseline, pos_baseline)
    nc = _vote_n(candidate, pos_candidate)
    k = np.minimum(nb, nc)
    maj_b, sc_b = votes_at_k([baseline.votes[i] for i in pos_baseline.tolist()], k)  # type: ignore[index]
    maj_c, sc_c = votes_at_k([candidate.votes[i] for i in pos_candidate.tolist()], k)  # type: ignore[index]
    vb, vc = (maj_b, maj_c) if metric == "maj@n" else (sc_b, sc_c)
    used = k > 0
    info: dict[str, Any] = {
        "estimator": "exact expectation over k-subsets of the rollouts; ties share the vote",
        "k_min": int(k[used].min()) if used.any() else None,
        "k_max": int(k[used].max()) if used.any() else None,
        "n_baseline": [int(nb.min()), int(nb.max())] if nb.size else None,
        "n_candidate": [int(nc.min()), int(nc.max())] if nc.size else None,
    }
    if not used.any():
        info["note"] = f"{metric}: no problem has a rollout on both sides"
        return vb, vc, info
    k_s = (
        str(info["k_min"])
        if info["k_min"] == info["k_max"]
        else f"{info['k_min']} to {info['k_max']}"
    )
    note = (
        f"{metric} compared at a common k = {k_s} per problem (the smaller side's rollouts: "
        f"baseline n {nb.min()}-{nb.max()}, candidate n {nc.min()}-{nc.max()}), exact "
        "expectation over k-subsets, ties share the vote"
    )
    short = int(np.count_nonzero(nb[used] != nc[used]))
    if short:
        note += f"; {short} problem(s) had fewer rollouts on one side"
    info["note"] = note
    return vb, vc, info
