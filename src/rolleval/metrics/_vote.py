"""Majority vote (maj@n) and self-consistency over answer clusters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import UsageError
from ._validate import _as_int

__all__ = ["MajorityVote", "MajorityVoteArrays", "majority_vote", "majority_vote_array"]


@dataclass(frozen=True)
class MajorityVote:
    """Result of :func:`majority_vote` for one problem.

    Attributes
    ----------
    correct : bool
        maj@n: whether the winning cluster's answer is correct. ``False`` when no rollout
        was extracted.
    winner : int or None
        Label of the winning cluster (the lowest rollout index in it); ``None`` when no
        rollout was extracted.
    modal_size : int
        Number of rollouts in the winning cluster (0 when none was extracted).
    n : int
        Number of gradable rollouts, unextracted ones included.
    self_consistency : float
        ``modal_size / n``.
    """

    correct: bool
    winner: int | None
    modal_size: int
    n: int
    self_consistency: float


@dataclass(frozen=True, eq=False)
class MajorityVoteArrays:
    """Result of :func:`majority_vote_array`: one entry per problem.

    Attributes
    ----------
    correct : numpy.ndarray of float64
        maj@n as 1.0 / 0.0; ``NaN`` where the problem has no gradable rollout (unavailable).
    self_consistency : numpy.ndarray of float64
        ``modal_size / n``; ``NaN`` where ``n == 0``.
    modal_size : numpy.ndarray of int64
        Size of the winning cluster (0 when nothing was extracted).
    n : numpy.ndarray of int64
        Gradable rollouts per problem, unextracted ones included.
    winner : numpy.ndarray of int64
        Winning cluster label; -1 where there is no cluster.
    """

    correct: NDArray[np.float64]
    self_consistency: NDArray[np.float64]
    modal_size: NDArray[np.int64]
    n: NDArray[np.int64]
    winner: NDArray[np.int64]


def _validate_majority_vote(
    clusters: Sequence[int | None], correct: Sequence[bool]
) -> tuple[list[int | None], list[bool]]:
    labels = list(clusters)
    verdicts = list(correct)
    if len(labels) != len(verdicts):
        raise UsageError(
            f"clusters and correct must have one entry per gradable rollout; "
            f"got lengths {len(labels)} and {len(verdicts)}"
        )
    if not labels:
        raise UsageError(
            "clusters must hold at least one gradable rollout; a problem with n = 0 has no "
            "maj@n (leave it out: it is unavailable)"
        )
    for pos, label in enumerate(labels):
        if label is not None:
            labels[pos] = _as_int(label, f"clusters[{pos}]", minimum=0, hint="or None")
    for pos, verdict in enumerate(verdicts):
        if not isinstance(verdict, (bool, np.bool_)):
            raise UsageError(f"correct[{pos}] must be a bool; got {verdict!r}")
        verdicts[pos] = bool(verdict)
    return labels, verdicts


def majority_vote(clusters: Sequence[int | None], correct: Sequence[bool]) -> MajorityVote:
    r"""maj@n and self-consistency of one problem from its answer clusters.

    The n gradable rollouts' extracted answers are grouped into equivalence classes by the
    task's own equivalence (done upstream by the grader). The largest class wins; a tie
    goes to the class holding the lowest rollout index. maj@n is correct iff the winning
    answer is correct, and self-consistency is the winning class's share of all n
    rollouts:

    .. math::

        \text{self-consistency} = \frac{|\text{modal cluster}|}{n}

    Parameters
    ----------
    clusters : sequence of int or None
        One entry per gradable rollout, in rollout-index order: the cluster label, which is
        the lowest rollout index of the rollout's equivalence class (so the smallest label
        is the class holding the lowest rollout index). ``None`` = nothing extracted; such
        rollouts never form a cluster but count in ``n``.
    correct : sequence of bool
        Verdict per rollout, same order. The winner's correctness is that of its first
        (lowest-index) member.

    Returns
    -------
    MajorityVote
        ``correct``, ``winner``, ``modal_size``, ``n`` and ``self_consistency``. When no
        rollout was extracted: ``correct=False``, ``winner=None``, ``modal_size=0``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if the sequences differ in length, are empty
        (``n = 0``: maj@n is unavailable, the caller must leave the problem out), a label is
        not a non-negative integer or ``None``, or a verdict is not a bool.

    Notes
    -----
    Unit of analysis: one problem; maj@n exists only for k = n (all gradable rollouts vote).

    References
    ----------
    .. [1] SiEval RFC, sampled-answer metric family (maj@n, self-consistency).
    .. [2] X. Wang et al., "Self-Consistency Improves Chain of Thought Reasoning in
       Language Models", arXiv:2203.11171, 2022.

    Examples
    --------
    >>> from rolleval.metrics import majority_vote
    >>> majority_vote([0, 1, 0, 1, None], [False, True, False, True, False])
    MajorityVote(correct=False, winner=0, modal_size=2, n=5, self_consistency=0.4)
    >>> majority_vote([None, None], [False, False]).winner is None
    True
    """
    labels, verdicts = _validate_majority_vote(clusters, correct)
    counts: dict[int, int] = {}
    first: dict[int, int] = {}
    for pos, label in enumerate(labels):
        if label is None:
            continue
        counts[label] = counts.get(label, 0) + 1
        first.setdefault(label, pos)
    n = len(labels)
    if not counts:
        return MajorityVote(correct=False, winner=None, modal_size=0, n=n, self_consistency=0.0)
    winner = min(counts, key=lambda label: (-counts[label], label))
    modal = counts[winner]
    return MajorityVote(
        correct=verdicts[first[winner]],
        winner=winner,
        modal_size=modal,
        n=n,
        self_consistency=modal / n,
    )


def _int_vector(values: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise UsageError(
            f"{name} must be a 1-D array (one entry per rollout); got shape {arr.shape}"
        )
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise UsageError(f"{name} must be an array of integers; got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _validate_majority_vote_array(
    problem: ArrayLike, clusters: ArrayLike, correct: ArrayLike, n_problems: object
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_], int]:
    n_problems_ = _as_int(n_problems, "n_problems", minimum=0)
    prob = _int_vector(problem, "problem")
    labels = _int_vector(clusters, "clusters")
    verdicts = np.asarray(correct)
    if verdicts.ndim != 1:
        raise UsageError(f"correct must be a 1-D array of bools; got shape {verdicts.shape}")
    if verdicts.size and verdicts.dtype != np.bool_:
        if np.issubdtype(verdicts.dtype, np.integer) and np.isin(verdicts, (0, 1)).all():
            verdicts = verdicts.astype(np.bool_)
        else:
            raise UsageError(
                f"correct must be an array of bools (or 0/1); got dtype {verdicts.dtype}"
            )
    verdicts = verdicts.astype(np.bool_, copy=False)
    if not prob.size == labels.size == verdicts.size:
        raise UsageError(
            f"problem, clusters and correct must have one entry per rollout; got lengths "
            f"{prob.size}, {labels.size} and {verdicts.size}"
        )
    if prob.size:
        bad = (prob < 0) | (prob >= n_problems_)
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise UsageError(
                f"problem must hold positions 0 <= problem < n_problems={n_problems_}; "
                f"got {int(prob[pos])} at position {pos}"
            )
        bad = labels < -1
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise UsageError(
                f"clusters must hold labels >= 0, or -1 for an unextracted rollout; "
                f"got {int(labels[pos])} at position {pos}"
            )
    return prob, labels, verdicts, n_problems_


def majority_vote_array(
    problem: ArrayLike, clusters: ArrayLike, correct: ArrayLike, n_problems: int
) -> MajorityVoteArrays:
    """:func:`majority_vote` for every problem of a suite, from flat per-rollout arrays.

    Parameters
    ----------
    problem : array_like of int, shape (R,)
        Position ``0 <= problem[r] < n_problems`` of the problem each gradable rollout
        belongs to. Rollouts of a problem need not be contiguous but must appear in
        rollout-index order (the first listed member of the winning cluster gives its
        correctness).
    clusters : array_like of int, shape (R,)
        Cluster label per rollout (the lowest rollout index of its equivalence class);
        ``-1`` for an unextracted rollout.
    correct : array_like of bool, shape (R,)
        Verdict per rollout.
    n_problems : int
        Number of problems; problems without any rollout get ``NaN``.

    Returns
    -------
    MajorityVoteArrays
        Per-problem ``correct`` (1.0/0.0, ``NaN`` where ``n == 0``), ``self_consistency``
        (``NaN`` where ``n == 0``), ``modal_size``, ``n`` and ``winner`` (-1 for none).
        Entry ``i`` equals ``majority_vote`` on problem ``i``'s rollouts.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) on lengths that differ, positions outside
        ``[0, n_problems)``, labels below -1 or verdicts that are not bools.

    Notes
    -----
    Fully vectorised: one stable sort of the extracted rollouts by (problem, label), then
    run-length counts; about 0.1 s for 10^6 rollouts.

    Examples
    --------
    >>> from rolleval.metrics import majority_vote_array
    >>> out = majority_vote_array([0, 0, 0, 2, 2], [0, 1, 1, -1, -1],
    ...                           [True, False, False, False, False], 3)
    >>> out.correct, out.self_consistency
    (array([ 0., nan,  0.]), array([0.66666667,        nan, 0.        ]))
    """
    prob, labels, verdicts, n_problems_ = _validate_majority_vote_array(
        problem, clusters, correct, n_problems
    )
    n = np.bincount(prob, minlength=n_problems_).astype(np.int64)
    modal = np.zeros(n_problems_, dtype=np.int64)
    winner = np.full(n_problems_, -1, dtype=np.int64)
    maj = np.zeros(n_problems_, dtype=np.float64)

    extracted = np.flatnonzero(labels >= 0)
    if extracted.size:
        p = prob[extracted]
        lab = labels[extracted]
        order = np.lexsort((lab, p))  # stable: equal keys keep rollout order
        p_s = p[order]
        l_s = lab[order]
        new_group = np.empty(p_s.size, dtype=np.bool_)
        new_group[0] = True
        np.not_equal(p_s[1:], p_s[:-1], out=new_group[1:])
        new_group[1:] |= l_s[1:] != l_s[:-1]
        starts = np.flatnonzero(new_group)
        sizes = np.diff(np.append(starts, p_s.size))
        g_problem = p_s[starts]
        g_label = l_s[starts]
        g_first = extracted[order[starts]]
        # groups are sorted by problem, so each problem's groups form one segment
        seg_start = np.flatnonzero(np.r_[True, g_problem[1:] != g_problem[:-1]])
        seg_problem = g_problem[seg_start]
        modal[seg_problem] = np.maximum.reduceat(sizes, seg_start)
        # winner: first group (smallest label) of its problem whose size is the modal size
        is_modal = np.flatnonzero(sizes == modal[g_problem])
        m_problem = g_problem[is_modal]
        first_modal = is_modal[np.r_[True, m_problem[1:] != m_problem[:-1]]]
        w_problem = g_problem[first_modal]
        winner[w_problem] = g_label[first_modal]
        maj[w_problem] = verdicts[g_first[first_modal]]

    empty = n == 0
    maj[empty] = np.nan
    consistency = np.where(empty, np.nan, modal / np.maximum(n, 1))
    return MajorityVoteArrays(
        correct=maj, self_consistency=consistency, modal_size=modal, n=n, winner=winner
    )
