"""The options objects of compare (issue 23, item 3): one frozen object or the keywords.

:class:`rolleval.compare.CompareOptions` carries the statistical settings of a comparison
through ``paired_compare``, ``compare_frames`` and ``compare_runs``;
:class:`rolleval.compare.PlanOptions` those of ``plan_runs``. Each function takes the object
or its keywords, not both (as ``write_synthetic_run`` takes ``SyntheticOptions``), and the
object gives the very result the keywords give.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import synthetic_pair
from rolleval.compare import (
    CompareOptions,
    PairedInput,
    compare_frames,
    compare_runs,
    gate_run,
    load_frames,
    paired_compare,
)
from rolleval.errors import UsageError
from rolleval.stats import grouped_bootstrap_ci, sign_flip_test


def _input(seed: int = 0, t: int = 60) -> PairedInput:
    rng = np.random.default_rng(seed)
    k = 8
    p = rng.beta(2, 2, t)
    cb = rng.binomial(k, p)
    cc = rng.binomial(k, np.clip(p - 0.05, 0, 1))
    n = np.full(t, k)
    return PairedInput(cb / k, cc / k, c_baseline=cb, n_baseline=n, c_candidate=cc, n_candidate=n)


def test_compare_options_are_frozen_and_default_to_the_cli() -> None:
    opts = CompareOptions()
    assert dataclasses.is_dataclass(opts) and type(opts).__dataclass_params__.frozen  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.alpha = 0.1  # type: ignore[misc]
    assert (opts.threshold, opts.alpha, opts.confidence_level) == (None, 0.05, None)
    assert (opts.n_resamples, opts.rng, opts.power) == (10_000, 0, 0.8)


def test_paired_compare_gives_the_same_result_from_options_as_from_keywords() -> None:
    inp = _input()
    settings = {
        "threshold": 0.03,
        "alpha": 0.1,
        "confidence_level": 0.8,
        "n_resamples": 500,
        "rng": 7,
        "power": 0.9,
    }
    by_keywords = paired_compare(inp, **settings)
    by_options = paired_compare(inp, options=CompareOptions(**settings))
    assert by_options == by_keywords
    assert (by_options.threshold, by_options.alpha, by_options.confidence_level) == (0.03, 0.1, 0.8)
    assert (by_options.n_resamples, by_options.seed, by_options.power) == (500, 7, 0.9)


def test_paired_compare_refuses_options_and_keywords_together() -> None:
    with pytest.raises(
        UsageError, match=r"paired_compare: pass CompareOptions or keywords, not both .*alpha"
    ):
        paired_compare(_input(), options=CompareOptions(threshold=0.02), alpha=0.1)
    with pytest.raises(UsageError, match=r"`options` must be a CompareOptions; got \{"):
        paired_compare(_input(), options={"alpha": 0.1})  # type: ignore[arg-type]


def test_paired_compare_needs_a_number_as_threshold_it_knows_no_metric() -> None:
    """``CompareOptions().threshold`` is None (the metric's default); paired_compare has no
    metric, so it refuses, as it refuses ``threshold=None``."""
    with pytest.raises(UsageError, match="`threshold` must be a finite number >= 0"):
        paired_compare(_input(), options=CompareOptions())
    with pytest.raises(UsageError, match="`threshold` must be a finite number >= 0"):
        paired_compare(_input(), threshold=None)  # type: ignore[arg-type]


def test_a_generator_is_drawn_from_by_the_test_then_by_the_bootstrap() -> None:
    """The order the docstrings state (they said the bootstrap came first)."""
    inp = _input(3, t=40)
    res = paired_compare(inp, rng=np.random.default_rng(11), n_resamples=300)
    gen = np.random.default_rng(11)
    test = sign_flip_test(inp.candidate, inp.baseline, n_resamples=300, rng=gen)
    boot = grouped_bootstrap_ci(
        inp.candidate - inp.baseline, n_resamples=300, confidence_level=0.95, rng=gen
    )
    assert res.seed is None and not test.exact
    assert res.pvalue == test.pvalue
    assert (res.ci_low, res.ci_high) == (boot.low, boot.high)


# ------------------------------------------------------------------ run level

RUN_SETTINGS = {
    "threshold": 0.03,
    "alpha": 0.1,
    "confidence_level": 0.9,
    "n_resamples": 300,
    "rng": 3,
    "power": 0.9,
}


def test_compare_runs_gives_the_same_result_from_options_as_from_keywords(tmp_path) -> None:
    base, cand = synthetic_pair(tmp_path, shift=-0.05, n_problems=60, p_infra_error=0.05)
    by_keywords = compare_runs(base, cand, metric="maj@n", **RUN_SETTINGS)
    by_options = compare_runs(base, cand, metric="maj@n", options=CompareOptions(**RUN_SETTINGS))
    assert by_options.to_dict() == by_keywords.to_dict()
    (task,) = by_options.tasks
    assert (task.comparison.threshold, task.comparison.alpha, task.comparison.seed) == (
        0.03,
        0.1,
        3,
    )
    with pytest.raises(UsageError, match="compare_runs: pass CompareOptions or keywords, not both"):
        compare_runs(base, cand, options=CompareOptions(), n_resamples=300)


def test_compare_frames_takes_options_and_a_threshold_of_none_is_the_metrics_default(
    tmp_path,
) -> None:
    base, cand = synthetic_pair(tmp_path, n_problems=40)
    (fb,), (fc,) = load_frames(base).values(), load_frames(cand).values()
    tc = compare_frames(fb, fc, options=CompareOptions(n_resamples=200))
    assert tc.comparison.threshold == 0.02 and tc.comparison.n_resamples == 200
    assert tc.comparison == compare_frames(fb, fc, n_resamples=200).comparison
    with pytest.raises(UsageError, match="pass --threshold"):
        compare_frames(fb, fc, metric="output_tokens", options=CompareOptions(n_resamples=200))
    with pytest.raises(UsageError, match="compare_frames: pass CompareOptions or keywords"):
        compare_frames(fb, fc, options=CompareOptions(), rng=1)


def test_gate_threads_the_policy_s_threshold_and_alpha_and_the_keywords_to_every_comparison(
    tmp_path,
) -> None:
    base, cand = synthetic_pair(tmp_path, n_problems=40)
    policy = {
        "alpha": 0.1,
        "metrics": {"pass@1": {"threshold": 0.03}, "maj@n": {"threshold": 0.04}},
        "health": {"unextracted_rate": {"max_increase": 0.05}},
    }
    res = gate_run(
        cand, base, policy=policy, n_resamples=200, rng=5, power=0.9, confidence_level=0.8
    )
    got = {
        (tc.metric, c.threshold, c.alpha, c.n_resamples, c.seed, c.power, c.confidence_level)
        for tc in res.comparisons
        for c in [tc.comparison]
    }
    assert got == {
        ("pass@1", 0.03, 0.1, 200, 5, 0.9, 0.8),
        ("maj@n", 0.04, 0.1, 200, 5, 0.9, 0.8),
        ("unextracted_rate", 0.05, 0.1, 200, 5, 0.9, 0.8),
    }


def test_plan_runs_gives_the_same_plan_from_options_as_from_keywords(tmp_path) -> None:
    from rolleval.compare import PlanOptions, plan_runs

    base, cand = synthetic_pair(tmp_path, n_problems=30, shift=-0.1)
    settings = {
        "effect": 0.3,
        "threshold": 0.05,
        "alpha": 0.1,
        "power": 0.7,
        "sequential": True,
        "max_problems": 30,
        "round_problems": 15,
        "n_sims": 20,
        "rng": 4,
        "n_resamples": 100,
    }
    by_keywords = plan_runs(base, cand, **settings)
    by_options = plan_runs(base, cand, options=PlanOptions(**settings))
    assert by_options.to_dict() == by_keywords.to_dict()
    (task,) = by_options.tasks.values()
    assert task.sequential is not None and task.sequential["sims"] == 20
    assert task.power_planned is not None and task.power_planned["sims"] == 20
    assert (by_options.effect, by_options.threshold, by_options.alpha) == (0.3, 0.05, 0.1)
    with pytest.raises(UsageError, match="plan_runs: pass PlanOptions or keywords, not both"):
        plan_runs(base, options=PlanOptions(), effect=0.1)
    with pytest.raises(UsageError, match="`effect` must be a drop > 0"):
        plan_runs(base, options=PlanOptions(effect=-0.1))
