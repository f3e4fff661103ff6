"""Suite summaries, metric keys and the public surface of rolleval.metrics."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rolleval.metrics as metrics
from rolleval.errors import UsageError
from rolleval.metrics import (
    DEFAULT_TAUS,
    METRIC_FAMILIES,
    MetricValue,
    default_ks,
    g_pass_at_k_array,
    metric_name,
    mg_pass_at_k_array,
    parse_metric_name,
    pass_at_k_array,
    pass_hat_k_array,
    suite_metrics,
    summarize,
)

# ---------------------------------------------------------------------------------------
# public surface

EXPECTED_PUBLIC = {
    "pass_at_k",
    "pass_hat_k",
    "g_pass_at_k",
    "mg_pass_at_k",
    "window_pass_hat_k",
    "pass_at_k_array",
    "pass_hat_k_array",
    "g_pass_at_k_array",
    "mg_pass_at_k_array",
    "majority_vote",
    "majority_vote_array",
    "MajorityVote",
    "MetricValue",
    "summarize",
    "suite_metrics",
    "default_ks",
    "parse_metric_name",
}


def test_public_names():
    assert metrics.__all__ == sorted(metrics.__all__)
    assert set(metrics.__all__) >= EXPECTED_PUBLIC
    for name in metrics.__all__:
        obj = getattr(metrics, name)
        if callable(obj):
            assert obj.__module__ == "rolleval.metrics", name
            assert (obj.__doc__ and "Examples" in obj.__doc__) or isinstance(obj, type), name


def test_metric_value_is_frozen():
    mv = summarize("pass@1", np.array([1.0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        mv.value = 0.0  # type: ignore[misc]


# ---------------------------------------------------------------------------------------
# summarize


def test_summarize_mean_over_eligible():
    mv = summarize("pass@4", np.array([1.0, 0.25, np.nan, 0.0]), params={"k": 4})
    assert mv == MetricValue(
        name="pass@4",
        value=1.25 / 3,
        numerator=1.25,
        denominator=3,
        n_total=4,
        status="ok",
        reason=None,
        params={"k": 4},
    )


def test_summarize_zero_is_a_value_not_unavailable():
    mv = summarize("pass^4", np.array([0.0, 0.0]))
    assert (mv.status, mv.value, mv.denominator) == ("ok", 0.0, 2)


def test_summarize_unavailable():
    mv = summarize("pass@8", np.array([np.nan, np.nan]), reason_if_empty="why not")
    assert (mv.status, mv.value, mv.numerator, mv.denominator, mv.n_total, mv.reason) == (
        "unavailable",
        None,
        None,
        0,
        2,
        "why not",
    )
    assert summarize("x", np.array([np.nan])).reason == "no eligible problem"
    assert summarize("x", np.array([])).reason == "no problems"
    assert summarize("x", []).n_total == 0


def test_summarize_order_does_not_matter():
    rng = np.random.default_rng(1)
    values = rng.random(10_001) * 10.0 ** rng.integers(-12, 1, size=10_001)
    values[::7] = np.nan
    base = summarize("x", values)
    for _ in range(5):
        assert summarize("x", rng.permutation(values)) == base
    assert base.numerator == math.fsum(values[~np.isnan(values)].tolist())


@pytest.mark.parametrize(
    ("values", "pattern"),
    [
        (np.array([[1.0, 0.0]]), r"per_problem_values of 'x' must be 1-D .*got shape \(1, 2\)"),
        (np.array([1.0, np.inf]), r"per_problem_values of 'x' must be finite or NaN"),
        (["a", "b"], r"per_problem_values of 'x' must be an array of floats"),
    ],
)
def test_summarize_invalid_raises(values, pattern):
    with pytest.raises(ValueError, match=pattern):
        summarize("x", values)


# ---------------------------------------------------------------------------------------
# suite_metrics


def test_default_ks():
    assert default_ks(1) == [1]
    assert default_ks(6) == [1, 2, 4]
    assert default_ks(8) == [1, 2, 4, 8]
    assert default_ks(100) == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(ValueError, match=r"n_requested must be an integer >= 1"):
        default_ks(0)


def test_suite_keys_and_order():
    res = suite_metrics([4, 4], [1, 2], ks=[1, 2, 4])
    expected = ["pass@1"]
    for k in (1, 2, 4):
        if k != 1:
            expected.append(f"pass@{k}")
        expected.append(f"pass^{k}")
        expected += [f"G-Pass@{k}_{t}" for t in ("0", "0.25", "0.5", "0.75", "1")]
        expected.append(f"mG-Pass@{k}")
    assert list(res) == expected
    assert res.names == tuple(expected)
    assert len(res) == len(expected)
    assert list(res.per_problem) == expected
    assert res["G-Pass@4_0.5"].params == {"k": 4, "tau": 0.5}
    assert res["mG-Pass@2"].params == {"k": 2}
    assert DEFAULT_TAUS == (0.0, 0.25, 0.5, 0.75, 1.0)


def test_suite_values_match_array_functions_and_summarize():
    rng = np.random.default_rng(5)
    n = rng.integers(0, 17, size=2000)
    c = np.floor(rng.random(2000) * (n + 1)).astype(np.int64)
    res = suite_metrics(n, c, ks=[1, 2, 4, 8, 16, 32], taus=[0.0, 0.28, 1.0])
    with np.errstate(invalid="ignore", divide="ignore"):
        pass1 = np.where(n > 0, c / n, np.nan)
    np.testing.assert_array_equal(res.per_problem["pass@1"], pass1)
    for k in (2, 4, 8, 16, 32):
        np.testing.assert_array_equal(res.per_problem[f"pass@{k}"], pass_at_k_array(n, c, k))
    for k in (1, 2, 4, 8, 16, 32):
        np.testing.assert_array_equal(res.per_problem[f"pass^{k}"], pass_hat_k_array(n, c, k))
        np.testing.assert_array_equal(res.per_problem[f"mG-Pass@{k}"], mg_pass_at_k_array(n, c, k))
        for tau in (0.0, 0.28, 1.0):
            np.testing.assert_array_equal(
                res.per_problem[metric_name("g_pass_at_k", k=k, tau=tau)],
                g_pass_at_k_array(n, c, k, tau),
            )
    for name in res:
        per_problem = res.per_problem[name]
        assert res[name] == summarize(
            name, per_problem, params=res[name].params, reason_if_empty=res[name].reason
        )
        assert res[name].n_total == 2000
        assert res[name].denominator == int((~np.isnan(per_problem)).sum())
    assert res["pass^32"].status == "unavailable"
    assert res["pass^16"].denominator == int((n >= 16).sum())


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 20), st.floats(0, 1)), max_size=60),
    k=st.integers(1, 24),
)
def test_suite_value_is_exact_mean_over_eligible(pairs, k):
    n = np.array([p[0] for p in pairs], dtype=np.int64)
    c = np.array([math.floor(p[1] * p[0]) for p in pairs], dtype=np.int64)
    res = suite_metrics(n, c, ks=[k], taus=[0.5])
    values = pass_hat_k_array(n, c, k)
    ok = ~np.isnan(values)
    mv = res[f"pass^{k}"]
    if ok.any():
        assert mv.status == "ok"
        assert mv.value == math.fsum(values[ok].tolist()) / int(ok.sum())
    else:
        assert mv.status == "unavailable" and mv.value is None and mv.numerator is None


def test_suite_unavailable_reason_and_never_zero():
    res = suite_metrics([4, 3, 0], [4, 0, 0], ks=[8])
    for name in ("pass@8", "pass^8", "G-Pass@8_0.5", "mG-Pass@8"):
        mv = res[name]
        assert mv.status == "unavailable"
        assert mv.value is None and mv.numerator is None
        assert (mv.denominator, mv.n_total) == (0, 3)
        assert mv.reason == "no problem has n >= k=8 judged rollouts (max n = 4)"
        assert np.isnan(res.per_problem[name]).all()
    # pass@1 ignores the n = 0 problem
    assert (res["pass@1"].value, res["pass@1"].denominator) == (0.5, 2)


def test_suite_empty_and_all_zero_n():
    res = suite_metrics([], [], ks=[1])
    assert res["pass@1"].status == "unavailable" and res["pass@1"].reason == "no problems"
    res = suite_metrics([0, 0], [0, 0], ks=[1, 2])
    assert res["pass@1"].reason == "no problem has n >= k=1 judged rollouts (max n = 0)"
    assert res["pass@2"].status == "unavailable"


def test_suite_dedupes_ks_and_taus():
    res = suite_metrics([4], [2], ks=[2, 2, 1], taus=[0.5, 0.5, 1])
    assert list(res) == [
        "pass@1",
        "pass@2",
        "pass^2",
        "G-Pass@2_0.5",
        "G-Pass@2_1",
        "mG-Pass@2",
        "pass^1",
        "G-Pass@1_0.5",
        "G-Pass@1_1",
        "mG-Pass@1",
    ]


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"ks": [0]}, r"ks\[0\] must be an integer >= 1; got 0"),
        ({"ks": [2, 1.5]}, r"ks\[1\] must be an integer >= 1; got 1\.5"),
        ({"ks": 4}, r"ks must be a sequence of integers >= 1; got 4"),
        ({"ks": [2], "taus": [0.5, 1.5]}, r"taus\[1\] must be a number in \[0, 1\]; got 1\.5"),
        ({"ks": [2], "taus": 0.5}, r"taus must be a sequence of numbers in \[0, 1\]"),
    ],
)
def test_suite_invalid_parameters_raise(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        suite_metrics([4], [2], **kwargs)


def test_suite_invalid_counts_raise():
    with pytest.raises(ValueError, match=r"c must be an array of integers with 0 <= c <= n"):
        suite_metrics([4, 2], [1, 3], ks=[1])
    with pytest.raises(ValueError, match=r"n and c must be 1-D"):
        suite_metrics([[4]], [[1]], ks=[1])


# ---------------------------------------------------------------------------------------
# metric keys


def test_every_suite_key_parses_and_round_trips():
    res = suite_metrics([16], [5], ks=default_ks(16), taus=[*DEFAULT_TAUS, 0.28, 1e-5])
    for name in res:
        family, params = parse_metric_name(name)
        assert family in METRIC_FAMILIES
        assert params == res[name].params
        assert metric_name(family, **params) == name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pass@1", ("pass_at_k", {"k": 1})),
        ("pass@16", ("pass_at_k", {"k": 16})),
        ("pass^4", ("pass_hat_k", {"k": 4})),
        ("G-Pass@4_0.5", ("g_pass_at_k", {"k": 4, "tau": 0.5})),
        ("G-Pass@4_0", ("g_pass_at_k", {"k": 4, "tau": 0.0})),
        ("G-Pass@4_1", ("g_pass_at_k", {"k": 4, "tau": 1.0})),
        ("g-pass@8_0.75", ("g_pass_at_k", {"k": 8, "tau": 0.75})),
        ("G-Pass@8_1e-05", ("g_pass_at_k", {"k": 8, "tau": 1e-05})),
        ("mG-Pass@8", ("mg_pass_at_k", {"k": 8})),
        (" MG-PASS@8 ", ("mg_pass_at_k", {"k": 8})),
        ("maj@n", ("maj_at_n", {})),
        ("self-consistency", ("self_consistency", {})),
        ("self_consistency", ("self_consistency", {})),
        ("consecutive-pass^4", ("window_pass_hat_k", {"k": 4})),
    ],
)
def test_parse_metric_name(name, expected):
    assert parse_metric_name(name) == expected


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("pass@", r"unknown metric 'pass@'; valid forms: pass@K, pass\^K, G-Pass@K_TAU"),
        ("pass@k", r"unknown metric"),
        ("accuracy", r"unknown metric 'accuracy'; valid forms: .*maj@n, self_consistency"),
        ("consecutive-pass@4", r"unknown metric"),
        ("G-Pass@4", r"unknown metric"),
        ("maj@4", r"unknown metric"),
        ("pass@0", r"metric 'pass@0': k must be an integer >= 1; valid forms"),
        ("G-Pass@4_1.5", r"metric 'G-Pass@4_1.5': tau must be a number in \[0, 1\]"),
        ("G-Pass@4_nan", r"tau must be a number in \[0, 1\]"),
        ("G-Pass@4_1e", r"tau must be a number in \[0, 1\]"),
        (4, r"metric name must be a string"),
    ],
)
def test_parse_metric_name_rejects(name, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        parse_metric_name(name)
    assert isinstance(info.value, UsageError)


@pytest.mark.parametrize(
    ("args", "kwargs", "pattern"),
    [
        (("pass_at_k",), {}, r"pass_at_k needs k"),
        (("g_pass_at_k",), {"k": 4}, r"g_pass_at_k needs tau"),
        (("pass_at_k",), {"k": 4, "tau": 0.5}, r"pass_at_k takes no tau"),
        (("maj_at_n",), {"k": 4}, r"maj_at_n takes no k or tau"),
        (("pass@k",), {"k": 4}, r"family must be one of pass_at_k, pass_hat_k"),
        (("g_pass_at_k",), {"k": 4, "tau": 2}, r"tau must be"),
    ],
)
def test_metric_name_rejects(args, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        metric_name(*args, **kwargs)


def test_metric_name_forms():
    assert metric_name("pass_at_k", k=4) == "pass@4"
    assert metric_name("pass_hat_k", k=4) == "pass^4"
    assert metric_name("g_pass_at_k", k=4, tau=0.25) == "G-Pass@4_0.25"
    assert metric_name("g_pass_at_k", k=4, tau=1) == "G-Pass@4_1"
    assert metric_name("mg_pass_at_k", k=4) == "mG-Pass@4"
    assert metric_name("maj_at_n") == "maj@n"
    assert metric_name("self_consistency") == "self_consistency"
    assert metric_name("window_pass_hat_k", k=4) == "consecutive-pass^4"
    for family in METRIC_FAMILIES:
        params = {"k": 3, "tau": 0.5} if family == "g_pass_at_k" else {"k": 3}
        if family in ("maj_at_n", "self_consistency"):
            params = {}
        assert parse_metric_name(metric_name(family, **params)) == (family, params)


# ---------------------------------------------------------------------------------------
# docstring examples are part of the contract


@pytest.mark.parametrize(
    "module",
    ["_arrays", "_exact", "_names", "_suite", "_validate", "_vote", "_window"],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"rolleval.metrics.{module}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [t for name in mod.__all__ for t in finder.find(getattr(mod, name), name)]
    for test in tests:
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0
    assert results.attempted > 0
