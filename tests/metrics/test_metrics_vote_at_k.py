"""maj@k and self-consistency at k <= n: exact, against brute-force enumeration of subsets."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from rolleval.errors import UsageError
from rolleval.metrics import (
    majority_vote,
    majority_vote_array,
    majority_vote_at_k,
    majority_vote_at_k_array,
)


def brute_force(clusters, correct, k):
    """Enumerate every k-subset of rollout positions; ties share the vote equally."""
    n = len(clusters)
    first = {}
    for label, verdict in zip(clusters, correct):
        if label is not None:
            first.setdefault(label, verdict)
    maj = Fraction(0)
    modal = Fraction(0)
    subsets = list(itertools.combinations(range(n), k))
    for subset in subsets:
        counts: dict[int, int] = {}
        for i in subset:
            if clusters[i] is not None:
                counts[clusters[i]] = counts.get(clusters[i], 0) + 1
        if not counts:
            continue
        top = max(counts.values())
        tied = [c for c, v in counts.items() if v == top]
        maj += Fraction(sum(first[c] for c in tied), len(tied))
        modal += top
    return maj / len(subsets), modal / (len(subsets) * k)


def random_problem(rng, n):
    n_answers = int(rng.integers(1, 5))
    labels = []
    seen: dict[int, int] = {}
    answers = rng.integers(-1, n_answers, size=n)  # -1: nothing extracted
    for j, a in enumerate(answers.tolist()):
        labels.append(None if a < 0 else seen.setdefault(a, j))
    good = int(rng.integers(-1, n_answers))  # the correct answer (maybe none of them)
    correct = [a == good and a >= 0 for a in answers.tolist()]
    return labels, correct


@pytest.mark.parametrize("seed", range(60))
def test_matches_brute_force_enumeration_exactly(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 11))
    labels, correct = random_problem(rng, n)
    for k in range(1, n + 1):
        maj, sc = brute_force(labels, correct, k)
        res = majority_vote_at_k(labels, correct, k)
        assert res.correct == float(maj), (labels, correct, k)
        assert res.self_consistency == float(sc), (labels, correct, k)
        assert (res.k, res.n) == (k, n)


def test_hand_computed_example():
    # pairs of [A, A, B, -]: {A,A} right; {A,B} x2 tie (1/2); {A,-} x2 right; {B,-} wrong
    res = majority_vote_at_k([0, 0, 2, None], [True, True, False, False], 2)
    assert res.correct == float(Fraction(4, 6))
    assert res.self_consistency == float(Fraction(7, 12))


def test_k_equal_n_agrees_with_majority_vote_when_the_mode_is_unique():
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(200):
        n = int(rng.integers(1, 9))
        labels, correct = random_problem(rng, n)
        mv = majority_vote(labels, correct)
        at_n = majority_vote_at_k(labels, correct, n)
        assert at_n.self_consistency == pytest.approx(mv.self_consistency, abs=1e-15)
        sizes = [labels.count(c) for c in set(labels) if c is not None]
        if sizes and sizes.count(max(sizes)) == 1:
            assert at_n.correct == float(mv.correct)
            checked += 1
    assert checked > 50


def test_k1_is_the_share_of_extracted_correct_rollouts():
    labels, correct = [0, 0, 2, None, 4], [True, True, False, False, False]
    assert majority_vote_at_k(labels, correct, 1).correct == pytest.approx(2 / 5, abs=1e-16)
    assert majority_vote_at_k(labels, correct, 1).self_consistency == pytest.approx(4 / 5)


def test_expectation_depends_on_k_so_maj16_and_maj4_differ():
    # a model right 40% of the time, its wrong answers split over 3 values
    labels = [0] * 6 + [6] * 4 + [10] * 3 + [13] * 3
    correct = [True] * 6 + [False] * 10
    at4 = majority_vote_at_k(labels, correct, 4).correct
    at16 = majority_vote_at_k(labels, correct, 16).correct
    assert at16 == 1.0 and at4 < 0.8


def test_array_form_equals_scalar_form_with_per_problem_k():
    rng = np.random.default_rng(11)
    problem, clusters, correct, ks, expected = [], [], [], [], []
    for i in range(25):
        n = int(rng.integers(1, 8))
        labels, good = random_problem(rng, n)
        problem += [i] * n
        clusters += [-1 if c is None else c for c in labels]
        correct += good
        k = int(rng.integers(1, n + 1))
        ks.append(k)
        expected.append(majority_vote_at_k(labels, good, k))
    maj, sc = majority_vote_at_k_array(problem, clusters, correct, 25, ks)
    assert maj.tolist() == [e.correct for e in expected]
    assert sc.tolist() == [e.self_consistency for e in expected]


def test_array_form_k0_is_nan_and_extra_unextracted_votes_for_nothing():
    maj, sc = majority_vote_at_k_array([0, 0, 1], [0, 0, 2], [True, True, True], 3, [2, 0, 0])
    assert maj[0] == 1.0 and np.isnan(maj[1:]).all() and np.isnan(sc[1:]).all()
    maj, _ = majority_vote_at_k_array([0, 0], [0, 0], [True, True], 1, [2], extra_unextracted=[2])
    # C(4,2) = 6 pairs of [A, A, -, -]: 5 contain an A
    assert maj[0] == pytest.approx(5 / 6, abs=1e-16)
    full = majority_vote_array([0, 0], [0, 0], [True, True], 1)
    assert majority_vote_at_k_array([0, 0], [0, 0], [True, True], 1, [2])[0][0] == full.correct[0]


@pytest.mark.parametrize(
    "args, match",
    [
        (([0, 0], [True, True], 3), "at most"),
        (([0, 0], [True, True], 0), "k"),
        (([], [], 1), "at least one"),
    ],
)
def test_bad_input_is_a_usage_error(args, match):
    with pytest.raises(UsageError, match=match):
        majority_vote_at_k(*args)


def test_votes_at_k_at_every_rollout_is_the_exact_estimator():
    """At k = n the one subset is every rollout: the shortcut gives the exact estimator's
    floats (enumerated through ``_vote_at_k_exact``) on every signature of up to 7 rollouts,
    ties, all-unextracted and one-rollout problems included."""
    from rolleval.metrics._vote import _vote_at_k_exact, votes_at_k

    signatures = []
    for n in range(1, 8):
        for labels in itertools.product(range(-1, 3), repeat=n):
            for verdicts in ((True,) * n, tuple(i % 2 == 0 for i in range(n))):
                sizes: dict[int, int] = {}
                first: dict[int, bool] = {}
                for label, verdict in zip(labels, verdicts):
                    if label >= 0:
                        sizes[label] = sizes.get(label, 0) + 1
                        first.setdefault(label, verdict)
                sig = tuple(sorted((sizes[c], first[c]) for c in sizes))
                signatures.append((sig, labels.count(-1)))
    signatures = list(dict.fromkeys(signatures))
    k = np.array([sum(s for s, _ in sig) + u for sig, u in signatures])
    maj, sc = votes_at_k(signatures, k)
    for i, (sig, u) in enumerate(signatures):
        m, c = _vote_at_k_exact(sig, u, int(k[i]))
        assert (maj[i], sc[i]) == (float(m), float(c)), (sig, u)
    assert len(signatures) > 250
