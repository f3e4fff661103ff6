"""Consecutive-window pass^k (TraceLens convention)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rolleval.errors import UsageError
from rolleval.metrics import window_pass_hat_k


def trials_from(passed, *, excluded=(), missing=(), start=0):
    out = []
    for offset, p in enumerate(passed):
        i = start + offset
        if i in missing:
            continue
        trial = {"run_index": i, "passed": bool(p)}
        if i in excluded:
            trial["excluded"] = True
        out.append(trial)
    return out


def brute_window(trials, k):
    """Scan every start r; a window is complete iff r..r+k-1 are all usable."""
    usable = {t["run_index"]: t["passed"] for t in trials if not t.get("excluded", False)}
    if not usable:
        return None
    complete = passed = 0
    for r in range(min(usable), max(usable) + 1):
        window = range(r, r + k)
        if all(i in usable for i in window):
            complete += 1
            passed += all(usable[i] for i in window)
    return None if complete == 0 else passed / complete


def test_no_gaps():
    trials = trials_from([1, 1, 0, 1, 1, 1])
    assert window_pass_hat_k(trials, 1) == 5 / 6
    assert window_pass_hat_k(trials, 2) == 3 / 5
    assert window_pass_hat_k(trials, 3) == 1 / 4
    assert window_pass_hat_k(trials, 6) == 0.0
    assert window_pass_hat_k(trials, 7) is None


def test_all_pass_and_all_fail():
    assert window_pass_hat_k(trials_from([1] * 10), 4) == 1.0
    assert window_pass_hat_k(trials_from([0] * 10), 4) == 0.0


def test_missing_index_is_a_gap():
    # indices 0 1 2 _ 4 5 : windows of 2 are 01 12 45
    trials = trials_from([1, 1, 0, 1, 1, 1], missing={3})
    assert window_pass_hat_k(trials, 2) == 2 / 3  # 01 and 45 pass, 12 fails
    assert window_pass_hat_k(trials, 3) == 0.0  # only 012 is complete
    assert window_pass_hat_k(trials, 4) is None


def test_excluded_index_is_a_gap():
    trials = trials_from([1, 1, 0, 1, 1, 1], excluded={2})
    # usable 0 1 _ 3 4 5 : windows of 2 are 01 34 45, all pass
    assert window_pass_hat_k(trials, 2) == 1.0
    assert window_pass_hat_k(trials, 3) == 1.0  # only 345
    assert window_pass_hat_k(trials, 4) is None
    # an excluded failure does not count; an excluded pass does not help either
    trials = trials_from([1, 1, 1, 1], excluded={1})
    assert window_pass_hat_k(trials, 2) == 1.0
    assert window_pass_hat_k(trials, 3) is None


def test_explicit_excluded_false_and_order_does_not_matter():
    trials = trials_from([1, 0, 1, 1, 1, 0, 1])
    for t in trials:
        t["excluded"] = False
    shuffled = trials[:]
    random.Random(3).shuffle(shuffled)
    for k in range(1, 8):
        assert window_pass_hat_k(shuffled, k) == window_pass_hat_k(trials, k)


def test_indices_need_not_start_at_zero():
    trials = trials_from([1, 1, 0, 1], start=10)
    assert window_pass_hat_k(trials, 2) == 1 / 3


def test_no_complete_window_is_unavailable():
    assert window_pass_hat_k([], 1) is None
    assert window_pass_hat_k(trials_from([1, 1, 1], excluded={0, 1, 2}), 1) is None
    # four usable trials, but never two in a row
    trials = trials_from([1, 1, 1, 1, 1, 1, 1], missing={1, 3, 5})
    assert window_pass_hat_k(trials, 1) == 1.0
    assert window_pass_hat_k(trials, 2) is None


def test_duplicate_run_index_raises():
    trials = trials_from([1, 0, 1])
    trials.append({"run_index": 1, "passed": True})
    with pytest.raises(ValueError, match=r"trials\[3\]\['run_index'\] = 1 occurs twice"):
        window_pass_hat_k(trials, 2)
    # even when the duplicate is excluded
    trials[-1]["excluded"] = True
    with pytest.raises(UsageError, match=r"occurs twice"):
        window_pass_hat_k(trials, 2)


@pytest.mark.parametrize(
    ("trials", "k", "pattern"),
    [
        (
            [{"run_index": 0, "passed": True}],
            0,
            r"k must be an integer >= 1 \(window length\); got 0",
        ),
        ([{"run_index": 0, "passed": True}], 1.5, r"k must be an integer >= 1"),
        ([{"run_index": 0}], 1, r"trials\[0\] must have the keys 'run_index' and 'passed'"),
        ([{"passed": True}], 1, r"trials\[0\] must have the keys"),
        (
            [{"run_index": -1, "passed": True}],
            1,
            r"trials\[0\]\['run_index'\] must be an integer >= 0",
        ),
        ([{"run_index": "0", "passed": True}], 1, r"trials\[0\]\['run_index'\] must be an integer"),
        ([{"run_index": 0, "passed": 1}], 1, r"trials\[0\]\['passed'\] must be a bool; got 1"),
        (
            [{"run_index": 0, "passed": True, "excluded": None}],
            1,
            r"trials\[0\]\['excluded'\] must be a bool; got None",
        ),
        ([(0, True)], 1, r"trials\[0\] must be a mapping"),
    ],
)
def test_invalid_input_raises(trials, k, pattern):
    with pytest.raises(ValueError, match=pattern):
        window_pass_hat_k(trials, k)


def test_accepts_numpy_fields_and_generators():
    trials = ({"run_index": np.int64(i), "passed": np.bool_(i != 2)} for i in range(5))
    assert window_pass_hat_k(trials, 2) == 2 / 4


@settings(max_examples=300, deadline=None)
@given(
    cells=st.lists(
        st.sampled_from(["pass", "fail", "missing", "excluded-pass", "excluded-fail"]),
        max_size=30,
    ),
    k=st.integers(1, 8),
    seed=st.integers(0, 1000),
)
def test_matches_brute_force(cells, k, seed):
    trials = []
    for i, cell in enumerate(cells):
        if cell == "missing":
            continue
        trial = {"run_index": i, "passed": cell.endswith("pass")}
        if cell.startswith("excluded"):
            trial["excluded"] = True
        trials.append(trial)
    random.Random(seed).shuffle(trials)
    assert window_pass_hat_k(trials, k) == brute_window(trials, k)
