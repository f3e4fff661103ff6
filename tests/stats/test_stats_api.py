"""The public surface of rolleval.stats: exports, signatures, docstrings, doctests."""

from __future__ import annotations

import dataclasses
import doctest
import inspect

import pytest

import rolleval.stats as stats_pkg

FUNCTIONS = [name for name in stats_pkg.__all__ if inspect.isfunction(getattr(stats_pkg, name))]
RESULTS = [name for name in stats_pkg.__all__ if inspect.isclass(getattr(stats_pkg, name))]

# Parameters that carry data and may be passed by position; everything else is
# keyword-only.
DATA_PARAMETERS = {
    "betting_bets": ["x"],
    "betting_capital": ["values", "null"],
    "betting_cs": ["values"],
    "bootstrap_ci": ["scores"],
    "grouped_bootstrap_ci": ["scores"],
    "grouped_bootstrap_columns": ["scores"],
    "sign_flip_test": ["candidate", "baseline"],
    "cluster_bootstrap_ci": ["scores", "clusters"],
    "cluster_sign_flip_test": ["candidate", "baseline", "clusters"],
    "regression_power": ["delta"],
    "min_attainable_pvalue": ["n_problems"],
    "clt_se": ["scores"],
    "clustered_se": ["scores", "clusters"],
    "paired_se": ["candidate", "baseline"],
    "variance_components": ["c", "n"],
    "paired_variance_components": ["c_baseline", "n_baseline", "c_candidate", "n_candidate"],
    "required_problems": ["delta"],
    "minimum_detectable_effect": ["n_problems"],
    "required_rollouts": ["delta", "n_problems"],
    "run_noise": ["c", "n"],
    "run_level_adjustment": ["effect", "ci_low", "ci_high", "pvalue", "se"],
}


def test_all_is_sorted_and_complete():
    assert stats_pkg.__all__ == sorted(stats_pkg.__all__)
    assert sorted(FUNCTIONS) == sorted(DATA_PARAMETERS)
    for name in stats_pkg.__all__:
        assert getattr(stats_pkg, name).__module__ == "rolleval.stats"


@pytest.mark.parametrize("name", sorted(DATA_PARAMETERS))
def test_only_data_is_positional(name):
    params = inspect.signature(getattr(stats_pkg, name)).parameters.values()
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == DATA_PARAMETERS[name]
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)


def test_shared_keywords_have_shared_defaults():
    seen: dict[str, set[object]] = {}
    for name in FUNCTIONS:
        for p in inspect.signature(getattr(stats_pkg, name)).parameters.values():
            if p.name in {
                "n_resamples",
                "confidence_level",
                "alternative",
                "rng",
                "alpha",
                "power",
            }:
                seen.setdefault(p.name, set()).add(p.default)
    assert seen == {
        "n_resamples": {10_000},
        "confidence_level": {0.95},
        "alternative": {"two-sided"},
        "rng": {None},
        "alpha": {0.05},
        "power": {0.8},
    }


@pytest.mark.parametrize("name", FUNCTIONS)
def test_docstrings_have_references_and_examples(name):
    doc = inspect.getdoc(getattr(stats_pkg, name))
    assert "References\n----------\n.. [1]" in doc
    assert "Examples\n--------\n>>> " in doc


@pytest.mark.parametrize("name", RESULTS)
def test_results_are_frozen_dataclasses(name):
    cls = getattr(stats_pkg, name)
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen


def test_doctests_pass():
    result = doctest.testmod(stats_pkg, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= len(FUNCTIONS)
    assert result.failed == 0


def test_paired_functions_take_the_sides_by_name_candidate_minus_baseline():
    """The sides are ``candidate`` and ``baseline`` by keyword too, and the statistic is
    ``mean(candidate - baseline)`` whichever order the keywords come in."""
    candidate, baseline = [1.0, 1.0, 0.5, 1.0], [0.0, 0.5, 0.5, 0.0]
    test = stats_pkg.sign_flip_test(baseline=baseline, candidate=candidate, alternative="greater")
    assert test.statistic == 0.625
    assert test.pvalue == 2 / 16  # 16 sign vectors; the identity and the tie at d_3 = 0
    clustered = stats_pkg.cluster_sign_flip_test(
        baseline=baseline, candidate=candidate, clusters=["x", "x", "y", "z"]
    )
    assert clustered.statistic == 0.625 and clustered.n == 3
    assert stats_pkg.paired_se(baseline=baseline, candidate=candidate) == (
        stats_pkg.clt_se([1.0, 0.5, 0.0, 1.0])
    )
