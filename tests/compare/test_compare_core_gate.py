"""rolleval.compare: holm, gate_decision, problem_movers and the package surface."""

from __future__ import annotations

import dataclasses
import doctest
import inspect
import itertools
import json
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy.stats import fisher_exact

import rolleval.compare as compare_pkg
from rolleval.compare import (
    GateDecision,
    PairedInput,
    gate_decision,
    holm,
    paired_compare,
    problem_movers,
)
from rolleval.errors import UsageError

# ------------------------------------------------------------------------------- holm


def holm_brute_force(p: list[float]) -> list[float]:
    """Textbook definition, with loops: adj_(i) = max_{j<=i} min(1, (m - j + 1) p_(j))."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    for rank, i in enumerate(order):
        adjusted[i] = max(min(1.0, (m - j) * p[order[j]]) for j in range(rank + 1))
    return adjusted


def holm_rejections(p: list[float], alpha: float) -> set[int]:
    """Holm (1979) step-down procedure: reject while p_(j) <= alpha / (m - j + 1)."""
    m = len(p)
    rejected = set()
    for j, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        if p[i] > alpha / (m - j):
            break
        rejected.add(i)
    return rejected


def test_holm_textbook_example():
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == [0.03, 0.06, 0.06, 0.02]


@pytest.mark.parametrize("seed", range(30))
def test_holm_matches_brute_force_and_the_step_down_procedure(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 12))
    p = rng.uniform(0, 0.2, m) ** rng.uniform(0.5, 2)
    if seed % 3 == 0:
        p[: m // 2] = p[0]  # ties
    adjusted = holm(p)
    assert adjusted == pytest.approx(holm_brute_force(p.tolist()), abs=1e-15)
    assert np.all(adjusted >= p) and np.all(adjusted <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= 0)  # monotone in the sorted order
    for alpha in (0.001, 0.01, 0.05, 0.1, 0.2):
        assert set(np.flatnonzero(adjusted <= alpha).tolist()) == holm_rejections(p.tolist(), alpha)


def test_holm_edge_cases():
    assert holm([]).size == 0
    assert holm([0.3]).tolist() == [0.3]
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]  # capped
    with pytest.raises(UsageError, match="`pvalues`"):
        holm([0.1, float("nan")])
    with pytest.raises(UsageError, match="`pvalues`"):
        holm([1.5])
    with pytest.raises(UsageError, match="`pvalues`"):
        holm([[0.1]])


# ------------------------------------------------------------------------------- gate

BASE = np.tile([0.75, 0.25, 1.0, 0.5], 50)


def regression(p: float | None = None):
    res = paired_compare(PairedInput(BASE, BASE - np.tile([0.125, 0, 0, 0.125], 50)))
    assert res.verdict == "regression"
    return res if p is None else dataclasses.replace(res, pvalue=p)


def equivalent():
    cand = BASE + np.tile([0.125, -0.125, 0, 0], 50) * (np.arange(200) < 40)
    res = paired_compare(PairedInput(BASE, cand))
    assert res.verdict == "equivalent_within_threshold"
    return res


def test_gate_blocks_on_a_regression():
    gate = gate_decision({"pass@1": regression(), "unextracted": equivalent()})
    assert isinstance(gate, GateDecision)
    assert (gate.verdict, gate.exit_code, gate.method) == ("regression", 1, "holm")
    assert gate.metrics["pass@1"].verdict == "regression"
    assert gate.metrics["unextracted"].verdict == "equivalent_within_threshold"
    assert gate.verdicts == {
        "pass@1": "regression",
        "unextracted": "equivalent_within_threshold",
    }
    assert gate.adjusted_pvalues == {name: m.adjusted_pvalue for name, m in gate.metrics.items()}


def test_gate_passes_when_all_metrics_are_fine():
    improvement = paired_compare(PairedInput(BASE, BASE + np.tile([0.125, 0, 0, 0.125], 50)))
    gate = gate_decision({"a": equivalent(), "b": improvement})
    assert (gate.verdict, gate.exit_code) == ("pass", 0)


def test_gate_inconclusive_on_insufficient_or_inconclusive_metric():
    tiny = paired_compare(PairedInput(BASE[:4], BASE[:4] - 0.125))
    assert tiny.verdict == "insufficient_evidence"
    gate = gate_decision({"a": equivalent(), "b": tiny})
    assert (gate.verdict, gate.exit_code) == ("inconclusive", 3)
    assert gate.metrics["b"].verdict == "insufficient_evidence"
    # a regression anywhere still wins over inconclusive
    assert gate_decision({"a": regression(), "b": tiny}).exit_code == 1


def test_holm_can_remove_a_regression():
    # each p = 0.03 passes alone; three of them adjust to 0.09 > 0.05
    comps = {name: regression(0.03) for name in ("x", "y", "z")}
    assert all(c.verdict == "regression" for c in comps.values())
    gate = gate_decision(comps)
    for metric in gate.metrics.values():
        assert metric.pvalue == 0.03 and metric.adjusted_pvalue == pytest.approx(0.09)
        assert not metric.significant
        assert metric.unadjusted_verdict == "regression"
        assert metric.verdict == "inconclusive"
    assert (gate.verdict, gate.exit_code) == ("inconclusive", 3)
    # with one strong metric the step-down keeps it: 3 * 0.001, then 2 * 0.03 = 0.06 > 0.05
    gate = gate_decision({"x": regression(0.001), "y": regression(0.03), "z": regression(0.03)})
    assert gate.metrics["x"].verdict == "regression"
    assert gate.metrics["x"].adjusted_pvalue == pytest.approx(0.003)
    assert gate.metrics["y"].verdict == "inconclusive"
    assert gate.exit_code == 1


def test_gate_metric_without_pvalue_counts_in_the_family():
    empty = paired_compare(PairedInput(np.array([np.nan]), np.array([0.5])))
    gate = gate_decision({"x": regression(0.02), "y": regression(0.02), "e": empty})
    assert gate.metrics["e"].adjusted_pvalue is None
    assert gate.metrics["x"].adjusted_pvalue == pytest.approx(0.06)  # m = 3, not 2
    assert gate.exit_code == 3


def test_gate_to_dict_is_json_ready():
    out = gate_decision({"pass@1": regression(), "u": equivalent()}).to_dict()
    assert json.loads(json.dumps(out)) == out
    assert out["metrics"]["pass@1"]["verdict"] == "regression"


def test_gate_validation():
    with pytest.raises(UsageError, match="at least one"):
        gate_decision({})
    with pytest.raises(UsageError, match="`alpha`"):
        gate_decision({"a": regression()}, alpha=0.1)
    with pytest.raises(UsageError, match="`comparisons\\['a'\\]`"):
        gate_decision({"a": 0.3})
    with pytest.raises(UsageError, match="`comparisons`"):
        gate_decision([regression()])


# ----------------------------------------------------------------------------- movers


def random_counts(seed: int, t: int = 60, k: int = 8):
    rng = np.random.default_rng(seed)
    p = rng.beta(1, 1, t)
    nb = rng.integers(0, k + 1, t)
    nc = rng.integers(0, k + 1, t)
    nb[:3] = k
    nc[:3] = k
    return (
        [f"q{i:03d}" for i in range(t)],
        rng.binomial(nb, p),
        nb,
        rng.binomial(nc, np.clip(p - 0.2, 0, 1)),
        nc,
    )


def _exact_fisher(cb, nb, cc, nc, alternative):
    """Brute force with Fractions: P(X >= a) or P(X <= a), X hypergeometric with the table's margins."""
    a, b, c, d = int(cb), int(nb - cb), int(cc), int(nc - cc)
    n, k, total = a + b, a + c, a + b + c + d
    support = range(max(0, n + k - total), min(n, k) + 1)
    pmf = {x: Fraction(comb(k, x) * comb(total - k, n - x), comb(total, n)) for x in support}
    tail = sum(p for x, p in pmf.items() if (x >= a if alternative == "greater" else x <= a))
    return min(1.0, float(tail))


@pytest.mark.parametrize(("direction", "alternative"), [(1, "greater"), (-1, "less")])
def test_movers_pvalues_match_fisher_exact_and_holm_over_all(direction, alternative):
    ids, cb, nb, cc, nc = random_counts(1)
    rows = problem_movers(ids, cb, nb, cc, nc, direction=direction, top=None)
    assert len(rows) == len(ids)
    testable = [i for i in range(len(ids)) if nb[i] > 0 and nc[i] > 0]
    scipy_p = {
        ids[i]: fisher_exact([[cb[i], nb[i] - cb[i]], [cc[i], nc[i] - cc[i]]], alternative).pvalue
        for i in testable
    }
    raw = {ids[i]: _exact_fisher(cb[i], nb[i], cc[i], nc[i], alternative) for i in testable}
    adjusted = dict(zip(raw, holm(list(raw.values()))))
    for row in rows:
        if row["id"] in raw:
            assert row["pvalue"] == raw[row["id"]]  # exact, correctly rounded
            assert row["pvalue"] == pytest.approx(scipy_p[row["id"]], rel=1e-12)
            assert row["adjusted_pvalue"] == adjusted[row["id"]]
            i = ids.index(row["id"])
            assert row["delta"] == direction * (cc[i] / nc[i] - cb[i] / nb[i])
        else:
            assert row["pvalue"] is None and row["adjusted_pvalue"] is None
            assert row["delta"] is None
    # Holm over every testable problem, not just the rows returned
    top = problem_movers(ids, cb, nb, cc, nc, direction=direction, top=5)
    assert [r["adjusted_pvalue"] for r in top] == [adjusted[r["id"]] for r in top]
    assert [r["adjusted_pvalue"] for r in top] != holm([r["pvalue"] for r in top]).tolist()


def test_movers_order_and_top():
    ids, cb, nb, cc, nc = random_counts(2)
    rows = problem_movers(ids, cb, nb, cc, nc, top=None)
    tested = [r for r in rows if r["delta"] is not None]
    untested = rows[len(tested) :]
    assert all(r["delta"] is None for r in untested)
    keys = [(-abs(r["delta"]), r["pvalue"]) for r in tested]
    assert keys == sorted(keys)
    assert [r["id"] for r in untested] == sorted(r["id"] for r in untested)  # input order
    assert problem_movers(ids, cb, nb, cc, nc, top=7) == rows[:7]
    assert json.loads(json.dumps(rows)) == rows


def test_movers_one_sided_in_the_worse_direction():
    # q1: correct 8/8 -> 0/8 (worse); q2: 0/8 -> 8/8 (better)
    rows = problem_movers(["q1", "q2"], [8, 0], [8, 8], [0, 8], [8, 8])
    by_id = {r["id"]: r for r in rows}
    assert by_id["q1"]["pvalue"] < 1e-4 and by_id["q2"]["pvalue"] == 1.0
    # unextracted counts (direction -1): 0/8 -> 8/8 is the worse one
    rows = problem_movers(["q1", "q2"], [0, 8], [8, 8], [8, 0], [8, 8], direction=-1)
    by_id = {r["id"]: r for r in rows}
    assert by_id["q1"]["delta"] == -1.0 and by_id["q1"]["pvalue"] < 1e-4
    assert by_id["q2"]["pvalue"] == 1.0


def test_movers_zero_rollout_side_is_not_testable():
    rows = problem_movers(["a", "b", "c"], [0, 3, 1], [0, 8, 4], [2, 3, 0], [8, 8, 0], top=None)
    by_id = {r["id"]: r for r in rows}
    assert by_id["a"]["baseline_rate"] is None and by_id["a"]["candidate_rate"] == 0.25
    assert by_id["a"]["pvalue"] is None and by_id["c"]["pvalue"] is None
    assert by_id["b"]["adjusted_pvalue"] == by_id["b"]["pvalue"]  # a family of one
    assert [r["id"] for r in rows] == ["b", "a", "c"]


@pytest.mark.parametrize(
    ("args", "kwargs", "name"),
    [
        ((["a"], [1], [2], [1], [2, 2]), {}, "`n_candidate`"),
        ((["a"], [3], [2], [1], [2]), {}, "`c_baseline` must not exceed"),
        ((["a", "a"], [1, 1], [2, 2], [1, 1], [2, 2]), {}, "`ids` must be unique"),
        (("ab", [1, 1], [2, 2], [1, 1], [2, 2]), {}, "`ids`"),
        ((["a"], [1], [2], [1], [2]), {"direction": 0}, "`direction`"),
        ((["a"], [1], [2], [1], [2]), {"top": 0}, "`top`"),
        ((["a"], [-1], [2], [1], [2]), {}, "`c_baseline`"),
    ],
)
def test_movers_validation(args, kwargs, name):
    with pytest.raises(UsageError, match=name):
        problem_movers(*args, **kwargs)


# ---------------------------------------------------------------------------- surface


CORE_NAMES = [
    "Comparison",
    "GateDecision",
    "GateMetric",
    "PairedInput",
    "gate_decision",
    "holm",
    "paired_compare",
    "problem_movers",
]


def test_core_names_are_exported_from_the_package():
    # the package's __all__ also holds the run-level names; its order is checked with them
    for name in CORE_NAMES:
        assert name in compare_pkg.__all__
        assert getattr(compare_pkg, name).__module__ == "rolleval.compare"


@pytest.mark.parametrize("name", ["Comparison", "GateMetric", "GateDecision", "PairedInput"])
def test_results_are_frozen_dataclasses(name):
    cls = getattr(compare_pkg, name)
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


@pytest.mark.parametrize("name", ["paired_compare", "gate_decision", "holm", "problem_movers"])
def test_docstrings_have_references_and_examples(name):
    doc = inspect.getdoc(getattr(compare_pkg, name))
    assert "References\n----------\n.. [1]" in doc
    assert "Examples\n--------\n>>> " in doc


def test_only_data_is_positional():
    expected = {
        "paired_compare": ["inp"],
        "gate_decision": ["comparisons"],
        "holm": ["pvalues"],
        "problem_movers": ["ids", "c_baseline", "n_baseline", "c_candidate", "n_candidate"],
    }
    for name, data in expected.items():
        params = inspect.signature(getattr(compare_pkg, name)).parameters.values()
        assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == data


def test_doctests_pass():
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    attempted = 0
    for name in CORE_NAMES:
        for test in finder.find(getattr(compare_pkg, name), name, globs={}):
            result = runner.run(test, out=lambda _: None)
            assert result.failed == 0, name
            attempted += result.attempted
    assert attempted >= 8


def test_holm_small_exhaustive_against_brute_force():
    grid = [0.0, 0.01, 0.02, 0.025, 0.05, 0.5, 1.0]
    for p in itertools.product(grid, repeat=3):
        assert holm(p) == pytest.approx(holm_brute_force(list(p)), abs=1e-15)
