"""Majority vote (maj@n, and maj@k for k <= n) and self-consistency over answer clusters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import comb

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import UsageError
from ._validate import _as_int

__all__ = [
    "MajorityVote",
    "MajorityVoteArrays",
    "VoteAtK",
    "majority_vote",
    "majority_vote_array",
    "majority_vote_at_k",
    "majority_vote_at_k_array",
]


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
        Number of judged rollouts, unextracted ones included.
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
        maj@n as 1.0 / 0.0; ``NaN`` where the problem has no judged rollout (unavailable).
    self_consistency : numpy.ndarray of float64
        ``modal_size / n``; ``NaN`` where ``n == 0``.
    modal_size : numpy.ndarray of int64
        Size of the winning cluster (0 when nothing was extracted).
    n : numpy.ndarray of int64
        Judged rollouts per problem, unextracted ones included.
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
    judgements = list(correct)
    if len(labels) != len(judgements):
        raise UsageError(
            f"clusters and correct must have one entry per judged rollout; "
            f"got lengths {len(labels)} and {len(judgements)}"
        )
    if not labels:
        raise UsageError(
            "clusters must hold at least one judged rollout; a problem with n = 0 has no "
            "maj@n (leave it out: it is unavailable)"
        )
    for pos, label in enumerate(labels):
        if label is not None:
            labels[pos] = _as_int(label, f"clusters[{pos}]", minimum=0, hint="or None")
    for pos, judgement in enumerate(judgements):
        if not isinstance(judgement, (bool, np.bool_)):
            raise UsageError(f"correct[{pos}] must be a bool; got {judgement!r}")
        judgements[pos] = bool(judgement)
    return labels, judgements


def majority_vote(clusters: Sequence[int | None], correct: Sequence[bool]) -> MajorityVote:
    r"""maj@n and self-consistency of one problem from its answer clusters.

    The n judged rollouts' extracted answers are grouped into equivalence classes by the
    task's own equivalence (done upstream by the grader). The largest class wins; a tie
    goes to the class holding the lowest rollout index. maj@n is correct iff the winning
    answer is correct, and self-consistency is the winning class's share of all n
    rollouts:

    .. math::

        \text{self-consistency} = \frac{|\text{modal cluster}|}{n}

    Parameters
    ----------
    clusters : sequence of int or None
        One entry per judged rollout, in rollout-index order: the cluster label, which is
        the lowest rollout index of the rollout's equivalence class (so the smallest label
        is the class holding the lowest rollout index). ``None`` = nothing extracted; such
        rollouts never form a cluster but count in ``n``.
    correct : sequence of bool
        Judgement per rollout, same order. The winner's correctness is that of its first
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
        not a non-negative integer or ``None``, or a judgement is not a bool.

    Notes
    -----
    Unit of analysis: one problem; maj@n exists only for k = n (all judged rollouts vote).

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
    labels, judgements = _validate_majority_vote(clusters, correct)
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
        correct=judgements[first[winner]],
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
    judgements = np.asarray(correct)
    if judgements.ndim != 1:
        raise UsageError(f"correct must be a 1-D array of bools; got shape {judgements.shape}")
    if judgements.size and judgements.dtype != np.bool_:
        if np.issubdtype(judgements.dtype, np.integer) and np.isin(judgements, (0, 1)).all():
            judgements = judgements.astype(np.bool_)
        else:
            raise UsageError(
                f"correct must be an array of bools (or 0/1); got dtype {judgements.dtype}"
            )
    judgements = judgements.astype(np.bool_, copy=False)
    if not prob.size == labels.size == judgements.size:
        raise UsageError(
            f"problem, clusters and correct must have one entry per rollout; got lengths "
            f"{prob.size}, {labels.size} and {judgements.size}"
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
    return prob, labels, judgements, n_problems_


def majority_vote_array(
    problem: ArrayLike, clusters: ArrayLike, correct: ArrayLike, n_problems: int
) -> MajorityVoteArrays:
    """:func:`majority_vote` for every problem of a suite, from flat per-rollout arrays.

    Parameters
    ----------
    problem : array_like of int, shape (R,)
        Position ``0 <= problem[r] < n_problems`` of the problem each judged rollout
        belongs to. Rollouts of a problem need not be contiguous but must appear in
        rollout-index order (the first listed member of the winning cluster gives its
        correctness).
    clusters : array_like of int, shape (R,)
        Cluster label per rollout (the lowest rollout index of its equivalence class);
        ``-1`` for an unextracted rollout.
    correct : array_like of bool, shape (R,)
        Judgement per rollout.
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
        ``[0, n_problems)``, labels below -1 or judgements that are not bools.

    Notes
    -----
    Fully vectorised: one stable sort of the extracted rollouts by (problem, label), then
    run-length counts; about 0.1 s for 10^6 rollouts. With at most one rollout per problem
    each extracted rollout is its problem's vote, without the sort.

    Examples
    --------
    >>> from rolleval.metrics import majority_vote_array
    >>> out = majority_vote_array([0, 0, 0, 2, 2], [0, 1, 1, -1, -1],
    ...                           [True, False, False, False, False], 3)
    >>> out.correct, out.self_consistency
    (array([ 0., nan,  0.]), array([0.66666667,        nan, 0.        ]))
    """
    prob, labels, judgements, n_problems_ = _validate_majority_vote_array(
        problem, clusters, correct, n_problems
    )
    n = np.bincount(prob, minlength=n_problems_).astype(np.int64)
    modal = np.zeros(n_problems_, dtype=np.int64)
    winner = np.full(n_problems_, -1, dtype=np.int64)
    maj = np.zeros(n_problems_, dtype=np.float64)

    extracted = np.flatnonzero(labels >= 0)
    if extracted.size and int(n.max()) == 1:
        # at most one rollout per problem (an import of a take_first log, say): each
        # extracted rollout is its own problem's vote, no sort needed
        p = prob[extracted]
        modal[p] = 1
        winner[p] = labels[extracted]
        maj[p] = judgements[extracted]
    elif extracted.size:
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
        maj[w_problem] = judgements[g_first[first_modal]]

    empty = n == 0
    maj[empty] = np.nan
    consistency = np.where(empty, np.nan, modal / np.maximum(n, 1))
    return MajorityVoteArrays(
        correct=maj, self_consistency=consistency, modal_size=modal, n=n, winner=winner
    )


# ------------------------------------------------------------------ maj@k, k <= n


@dataclass(frozen=True)
class VoteAtK:
    """Result of :func:`majority_vote_at_k` for one problem.

    Attributes
    ----------
    correct : float
        maj@k: the expected correctness of the majority vote of ``k`` rollouts drawn
        without replacement from the problem's ``n`` (ties shared equally).
    self_consistency : float
        The expected modal share ``E[size of the largest cluster among the k] / k``.
    k : int
        Rollouts per vote.
    n : int
        Rollouts of the problem, unextracted ones included.
    """

    correct: float
    self_consistency: float
    k: int
    n: int


def _signature(
    labels: Sequence[int | None], judgements: Sequence[bool]
) -> tuple[tuple[tuple[int, bool], ...], int]:
    """Cluster sizes with their correctness (that of the lowest-index member), sorted, and
    the number of unextracted rollouts."""
    sizes: dict[int, int] = {}
    first: dict[int, bool] = {}
    unextracted = 0
    for label, judgement in zip(labels, judgements):
        if label is None:
            unextracted += 1
            continue
        sizes[label] = sizes.get(label, 0) + 1
        first.setdefault(label, bool(judgement))
    return tuple(sorted((sizes[c], first[c]) for c in sizes)), unextracted


@lru_cache(maxsize=65_536)
def _vote_at_k_exact(
    clusters: tuple[tuple[int, bool], ...], unextracted: int, k: int
) -> tuple[Fraction, Fraction]:
    """maj@k and E[modal size] / k as exact fractions (see :func:`majority_vote_at_k`)."""
    n = sum(s for s, _ in clusters) + unextracted
    total = comb(n, k)
    maj = Fraction(0)
    modal = 0  # sum over subsets of the largest cluster count
    for v in range(1, k + 1):
        # ways[(drawn, tied correct, tied wrong)]: every cluster drawn at most v times
        ways: dict[tuple[int, int, int], int] = {(0, 0, 0): 1}
        for size, good in clusters:
            nxt: dict[tuple[int, int, int], int] = {}
            for (drawn, a, b), w in ways.items():
                for x in range(min(size, v, k - drawn) + 1):
                    key = (drawn + x, a + (x == v and good), b + (x == v and not good))
                    nxt[key] = nxt.get(key, 0) + w * comb(size, x)
            ways = nxt
        for (drawn, a, b), w in ways.items():
            if a + b == 0:
                continue
            rest = comb(unextracted, k - drawn)
            if rest:
                maj += Fraction(w * rest * a, a + b)
                modal += w * rest * v
    return maj / total, Fraction(modal, total * k)


def majority_vote_at_k(clusters: Sequence[int | None], correct: Sequence[bool], k: int) -> VoteAtK:
    r"""maj@k and self-consistency at ``k``, for ``k <= n``, from one problem's answer clusters.

    maj@n depends on ``n``: a vote of 16 rollouts is right more often than a vote of 4
    when the correct answer is the most frequent one. Two runs with different ``n`` can
    only be compared at a common ``k``. This estimator gives, from the ``n`` observed
    rollouts, the expectation over all ``C(n, k)`` subsets of ``k`` rollouts (drawn
    without replacement, as pass@k does [1]_):

    .. math::

        \text{maj@}k = \frac{1}{\binom{n}{k}} \sum_{|S| = k}
            \frac{\#\{\text{correct clusters tied for the most votes in } S\}}
                 {\#\{\text{clusters tied for the most votes in } S\}}

    and :math:`\text{sc@}k = E_S[\max_j X_j(S)] / k`, :math:`X_j(S)` the members of
    cluster :math:`j` in :math:`S`. A subset with no extracted answer votes wrong and has
    modal size 0.

    Tie rule (declared): clusters tied for the most votes share the vote equally, i.e. a
    uniformly random tie-break. It does not depend on the order of the rollouts, unlike
    the lowest-index rule of :func:`majority_vote`; the two agree whenever the largest
    cluster is unique, and sc@n equals :func:`majority_vote`'s self-consistency.

    Under the model where the ``n`` rollouts are exchangeable draws from the problem's
    answer distribution, maj@k is an unbiased estimate of the majority-vote accuracy of
    ``k`` fresh rollouts (with that tie rule), by the same argument as for pass@k: every
    ``k``-subset of exchangeable draws is itself a sample of ``k`` draws.

    Computation: exact, by a dynamic programme over the clusters for each possible modal
    count ``v`` (counting, with ``math.comb``, the subsets in which no cluster exceeds
    ``v`` and tracking how many correct and wrong clusters reach it), summed as
    :class:`fractions.Fraction` and rounded once to float. Results are cached per
    multiset of (cluster size, correctness) and unextracted count.

    Parameters
    ----------
    clusters : sequence of int or None
        One cluster label per judged rollout (``None``: nothing extracted), as for
        :func:`majority_vote`.
    correct : sequence of bool
        Judgement per rollout; a cluster's correctness is that of its lowest-index member.
    k : int
        Rollouts per vote, ``1 <= k <= n``.

    Returns
    -------
    VoteAtK

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) on the inputs :func:`majority_vote` refuses,
        or ``k`` outside ``[1, n]``.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating Large Language Models Trained on Code",
       arXiv:2107.03374, 2021 (the unbiased subset estimator of pass@k).
    .. [2] X. Wang et al., "Self-Consistency Improves Chain of Thought Reasoning in
       Language Models", arXiv:2203.11171, 2022.

    Examples
    --------
    >>> from rolleval.metrics import majority_vote_at_k
    >>> r = majority_vote_at_k([0, 0, 2, None], [True, True, False, False], 2)
    >>> r.correct, r.self_consistency  # of 6 pairs: 3 right, 2 ties (1/2 each), 1 wrong
    (0.6666666666666666, 0.5833333333333334)
    >>> majority_vote_at_k([0, 0, 2, None], [True, True, False, False], 4).correct
    1.0
    """
    labels, judgements = _validate_majority_vote(clusters, correct)
    k_ = _as_int(k, "k", minimum=1)
    if k_ > len(labels):
        raise UsageError(
            f"k must be at most the number of rollouts n = {len(labels)}; got k = {k_}"
        )
    sig, unextracted = _signature(labels, judgements)
    maj, sc = _vote_at_k_exact(sig, unextracted, k_)
    return VoteAtK(correct=float(maj), self_consistency=float(sc), k=k_, n=len(labels))


#: One problem's votes: ((cluster size, cluster correct), ...) sorted, and the unextracted count.
VoteSignature = tuple[tuple[tuple[int, bool], ...], int]


def vote_signatures(
    problem: ArrayLike,
    clusters: ArrayLike,
    correct: ArrayLike,
    n_problems: int,
    *,
    extra_unextracted: ArrayLike | None = None,
) -> list[VoteSignature]:
    """Per problem, everything maj@k and sc@k depend on (see :func:`majority_vote_at_k`).

    Arguments as for :func:`majority_vote_at_k_array`. The signature is order-free: the
    sorted (size, correctness) of the clusters and the number of rollouts that vote for
    nothing (unextracted, plus ``extra_unextracted``).
    """
    prob, labels, judgements, n_problems_ = _validate_majority_vote_array(
        problem, clusters, correct, n_problems
    )
    extra = (
        np.zeros(n_problems_, dtype=np.int64)
        if extra_unextracted is None
        else np.asarray(extra_unextracted, dtype=np.int64)
    )
    if extra.shape != (n_problems_,) or (extra < 0).any():
        raise UsageError(f"extra_unextracted must hold one count >= 0 per problem ({n_problems_})")
    per: list[list[int]] = [[] for _ in range(n_problems_)]
    for r in np.argsort(prob, kind="stable").tolist():
        per[int(prob[r])].append(r)
    out: list[VoteSignature] = []
    for i in range(n_problems_):
        rows = per[i]
        sig, unextracted = _signature(
            [None if labels[r] < 0 else int(labels[r]) for r in rows],
            [bool(judgements[r]) for r in rows],
        )
        out.append((sig, unextracted + int(extra[i])))
    return out


def votes_at_k(
    signatures: Sequence[VoteSignature], k: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """maj@k and sc@k per problem from :func:`vote_signatures`; ``NaN`` where ``k == 0``."""
    ks = np.asarray(k)
    if ks.shape != (len(signatures),) or (ks.size and not np.issubdtype(ks.dtype, np.integer)):
        raise UsageError(f"k must hold one integer per problem ({len(signatures)}); got {ks!r}")
    maj = np.full(len(signatures), np.nan)
    sc = np.full(len(signatures), np.nan)
    for i, (sig, unextracted) in enumerate(signatures):
        ki = int(ks[i])
        if ki == 0:
            continue
        n_i = sum(size for size, _ in sig) + unextracted
        if ki < 0 or ki > n_i:
            raise UsageError(f"k = {ki} for problem {i} must lie in [1, n = {n_i}]")
        if ki == n_i:
            maj[i], sc[i] = _vote_of_all(sig, n_i)
            continue
        m, c = _vote_at_k_exact(tuple(sig), int(unextracted), ki)
        maj[i], sc[i] = float(m), float(c)
    return maj, sc


def _vote_of_all(clusters: Sequence[tuple[int, bool]], n: int) -> tuple[float, float]:
    """:func:`_vote_at_k_exact` at ``k = n``: the one subset is every rollout, so maj@n is
    the correct share of the clusters tied for the most votes and sc@n the largest cluster
    over ``n`` (0 and 0 when nothing was extracted). Same floats: both are one correctly
    rounded division of the same integers."""
    if not clusters:
        return 0.0, 0.0
    top = max(size for size, _ in clusters)
    tied = [good for size, good in clusters if size == top]
    return sum(tied) / len(tied), top / n


def majority_vote_at_k_array(
    problem: ArrayLike,
    clusters: ArrayLike,
    correct: ArrayLike,
    n_problems: int,
    k: ArrayLike,
    *,
    extra_unextracted: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`majority_vote_at_k` for every problem, with its own ``k`` per problem.

    Parameters
    ----------
    problem, clusters, correct : array_like, shape (R,)
        As for :func:`majority_vote_array` (``-1`` = unextracted).
    n_problems : int
    k : array_like of int, shape (n_problems,)
        Rollouts per vote for each problem; 0 marks a problem left out (NaN).
    extra_unextracted : array_like of int, shape (n_problems,), optional
        Rollouts to add to each problem as votes for nothing (used under the
        ``requested`` denominator policy, where a missing rollout counts as wrong).

    Returns
    -------
    (maj, self_consistency) : two numpy.ndarray of float64
        ``NaN`` where ``k`` is 0; a ``k`` above the problem's ``n`` is a usage error.

    Examples
    --------
    >>> from rolleval.metrics import majority_vote_at_k_array
    >>> maj, sc = majority_vote_at_k_array([0, 0, 1], [0, 1, 2], [True, False, True], 2, [1, 1])
    >>> maj.tolist(), sc.tolist()
    ([0.5, 1.0], [1.0, 1.0])
    """
    sigs = vote_signatures(
        problem, clusters, correct, n_problems, extra_unextracted=extra_unextracted
    )
    return votes_at_k(sigs, k)
