"""maj@n and self-consistency: scalar rules and the vectorised suite form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rolleval.errors import UsageError
from rolleval.metrics import MajorityVote, majority_vote, majority_vote_array


def test_plain_majority():
    # answers A A B A  -> labels 0 0 2 0
    result = majority_vote([0, 0, 2, 0], [True, True, False, True])
    assert result == MajorityVote(correct=True, winner=0, modal_size=3, n=4, self_consistency=0.75)


def test_minority_correct_answer_loses():
    result = majority_vote([0, 1, 1, 1], [True, False, False, False])
    assert (result.correct, result.winner, result.modal_size) == (False, 1, 3)


def test_tie_goes_to_cluster_with_lowest_rollout_index():
    # answers A B B A : tie 2-2, A holds rollout 0
    result = majority_vote([0, 1, 1, 0], [False, True, True, False])
    assert (result.correct, result.winner, result.modal_size) == (False, 0, 2)
    # answers B A A B written with labels 0 (B) and 1 (A): B holds rollout 0
    result = majority_vote([0, 1, 1, 0], [True, False, False, True])
    assert (result.correct, result.winner) == (True, 0)
    # an unextracted rollout 0 does not take part: tie between clusters 1 and 2
    result = majority_vote([None, 1, 2, 2, 1], [False, True, False, False, True])
    assert (result.correct, result.winner, result.modal_size) == (True, 1, 2)
    # three-way tie
    result = majority_vote([0, 1, 2, 3], [False, False, True, True])
    assert (result.correct, result.winner, result.modal_size) == (False, 0, 1)


def test_unextracted_never_forms_a_cluster_but_counts_in_n():
    result = majority_vote([None, None, None, 3, 3], [False, False, False, True, True])
    assert result == MajorityVote(correct=True, winner=3, modal_size=2, n=5, self_consistency=0.4)


def test_all_unextracted():
    result = majority_vote([None, None, None], [False, False, False])
    assert result == MajorityVote(
        correct=False, winner=None, modal_size=0, n=3, self_consistency=0.0
    )


def test_winner_correctness_is_that_of_its_lowest_index_member():
    # a grader that disagrees with itself inside a cluster: the first member decides
    assert majority_vote([0, 0, 0], [True, False, False]).correct is True
    assert majority_vote([0, 0, 0], [False, True, True]).correct is False
    assert majority_vote([None, 1, 1], [True, False, True]).correct is False


def test_single_rollout():
    assert majority_vote([0], [True]) == MajorityVote(True, 0, 1, 1, 1.0)
    assert majority_vote([None], [False]) == MajorityVote(False, None, 0, 1, 0.0)


@pytest.mark.parametrize(
    ("clusters", "correct", "pattern"),
    [
        ([], [], r"clusters must hold at least one judged rollout; a problem with n = 0"),
        ([0, 0], [True], r"one entry per judged rollout; got lengths 2 and 1"),
        ([0, -1], [True, False], r"clusters\[1\] must be an integer >= 0 or None; got -1"),
        ([0, "a"], [True, False], r"clusters\[1\] must be an integer >= 0 or None; got 'a'"),
        ([0, 1.5], [True, False], r"clusters\[1\] must be an integer"),
        ([0, 0], [True, 1], r"correct\[1\] must be a bool; got 1"),
        ([0, 0], [True, None], r"correct\[1\] must be a bool; got None"),
    ],
)
def test_invalid_input_raises(clusters, correct, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        majority_vote(clusters, correct)
    assert isinstance(info.value, UsageError)


# ---------------------------------------------------------------------------------------
# vectorised form


def test_array_small_example():
    out = majority_vote_array(
        problem=[0, 0, 0, 2, 2, 3, 3, 3, 3],
        clusters=[0, 1, 1, -1, -1, 0, 1, 1, 0],
        correct=[True, False, False, False, False, True, False, False, True],
        n_problems=4,
    )
    np.testing.assert_array_equal(out.correct, [0.0, np.nan, 0.0, 1.0])
    np.testing.assert_array_equal(out.self_consistency, [2 / 3, np.nan, 0.0, 0.5])
    np.testing.assert_array_equal(out.modal_size, [2, 0, 0, 2])
    np.testing.assert_array_equal(out.n, [3, 0, 2, 4])
    np.testing.assert_array_equal(out.winner, [1, -1, -1, 0])


@pytest.mark.parametrize("at_most_one", [True, False])
def test_array_equals_the_scalar_vote_per_problem(at_most_one):
    """Both branches (one rollout per problem at most: no sort; else the sorted groups)
    against :func:`majority_vote` problem by problem."""
    rng = np.random.default_rng(7)
    n_problems = 300
    if at_most_one:
        problem = rng.permutation(n_problems)[:200]
    else:
        problem = rng.integers(0, n_problems, 1500)
    clusters = rng.integers(-1, 4, problem.size)
    correct = rng.random(problem.size) < 0.5
    out = majority_vote_array(problem, clusters, correct, n_problems)
    for i in range(n_problems):
        members = np.flatnonzero(problem == i)
        if not members.size:
            assert np.isnan(out.correct[i]) and out.n[i] == 0 and out.winner[i] == -1
            continue
        want = majority_vote(
            [int(c) if c >= 0 else None for c in clusters[members]],
            [bool(v) for v in correct[members]],
        )
        assert out.correct[i] == float(want.correct)
        assert out.winner[i] == (-1 if want.winner is None else want.winner)
        assert out.modal_size[i] == want.modal_size and out.n[i] == want.n
        assert out.self_consistency[i] == want.self_consistency


def test_array_empty():
    out = majority_vote_array([], [], [], 2)
    assert np.isnan(out.correct).all() and np.isnan(out.self_consistency).all()
    np.testing.assert_array_equal(out.n, [0, 0])
    out = majority_vote_array([], [], [], 0)
    assert out.correct.shape == (0,)


def test_array_accepts_integer_verdicts():
    a = majority_vote_array([0, 0], [0, 0], [1, 0], 1)
    b = majority_vote_array([0, 0], [0, 0], [True, False], 1)
    np.testing.assert_array_equal(a.correct, b.correct)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (
            ([0, 1], [0, 0], [True, True], 1),
            r"problem must hold positions 0 <= problem < n_problems=1; got 1 at position 1",
        ),
        (([0, -1], [0, 0], [True, True], 2), r"problem must hold positions .*got -1"),
        (
            ([0, 0], [0, -2], [True, True], 1),
            r"clusters must hold labels >= 0, or -1 .*got -2 at position 1",
        ),
        (([0, 0], [0], [True, True], 1), r"one entry per rollout; got lengths 2, 1 and 2"),
        (([0, 0], [0, 0], [True, 2], 1), r"correct must be an array of bools \(or 0/1\)"),
        (
            ([0.0, 0.0], [0, 0], [True, True], 1),
            r"problem must be an array of integers; got dtype float64",
        ),
        (([[0, 0]], [0, 0], [True, True], 1), r"problem must be a 1-D array"),
        (([0], [0], [True], -1), r"n_problems must be an integer >= 0; got -1"),
    ],
)
def test_array_invalid_input_raises(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        majority_vote_array(*args)


@st.composite
def suites(draw):
    """Problems of rollouts with answers from a small alphabet (or none), flattened in a
    random interleaving that keeps each problem's rollouts in rollout-index order."""
    n_problems = draw(st.integers(0, 12))
    problems = []
    for _ in range(n_problems):
        n = draw(st.integers(0, 9))
        answers = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=n, max_size=n))
        correct = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        first: dict[int, int] = {}
        labels = []
        for i, a in enumerate(answers):
            if a is None:
                labels.append(None)
            else:
                labels.append(first.setdefault(a, i))
        problems.append((labels, correct))
    slots = [p for p, (labels, _) in enumerate(problems) for _ in labels]
    order = draw(st.permutations(slots)) if slots else []
    return problems, order


@settings(max_examples=150, deadline=None)
@given(suites())
def test_array_equals_scalar(data):
    problems, order = data
    cursor = [0] * len(problems)
    pos, lab, cor = [], [], []
    for p in order:
        labels, correct = problems[p]
        i = cursor[p]
        cursor[p] += 1
        pos.append(p)
        lab.append(-1 if labels[i] is None else labels[i])
        cor.append(correct[i])
    out = majority_vote_array(
        np.array(pos, dtype=np.int64),
        np.array(lab, dtype=np.int64),
        np.array(cor, dtype=bool),
        len(problems),
    )
    for p, (labels, correct) in enumerate(problems):
        if not labels:
            assert math.isnan(out.correct[p]) and math.isnan(out.self_consistency[p])
            assert out.n[p] == 0 and out.modal_size[p] == 0 and out.winner[p] == -1
            continue
        ref = majority_vote(labels, correct)
        assert out.correct[p] == float(ref.correct)
        assert out.self_consistency[p] == ref.self_consistency
        assert out.modal_size[p] == ref.modal_size
        assert out.n[p] == ref.n
        assert out.winner[p] == (-1 if ref.winner is None else ref.winner)


def test_array_million_rollouts_matches_scalar_on_a_sample():
    rng = np.random.default_rng(7)
    n_problems, k = 62_500, 16
    answers = rng.integers(-1, 5, size=(n_problems, k))  # -1 = unextracted
    labels = np.full_like(answers, -1)
    for a in range(5):
        hit = answers == a
        first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
        labels[hit] = np.broadcast_to(first[:, None], hit.shape)[hit]
    correct = rng.random((n_problems, k)) < 0.3
    problem = np.repeat(np.arange(n_problems), k)
    out = majority_vote_array(problem, labels.ravel(), correct.ravel(), n_problems)
    assert out.correct.shape == (n_problems,)
    for p in rng.choice(n_problems, size=300, replace=False):
        row = [None if x < 0 else int(x) for x in labels[p]]
        ref = majority_vote(row, [bool(x) for x in correct[p]])
        assert out.correct[p] == float(ref.correct)
        assert out.self_consistency[p] == ref.self_consistency
