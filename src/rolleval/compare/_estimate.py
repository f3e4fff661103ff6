"""The estimate of :func:`paired_compare`: effect, sign-flip test, SE and bootstrap interval.

Steps 2 to 6 of :func:`paired_compare`'s procedure, with the run-level widening of the
interval and p-value (:func:`rolleval.stats._run_noise.run_level_adjustment`) when the input
carries a run-level variance.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np

from ..stats import (
    cluster_bootstrap_ci,
    cluster_sign_flip_test,
    clustered_se,
    grouped_bootstrap_ci,
    paired_se,
    sign_flip_test,
)
from ..stats._run_noise import run_level_adjustment, satterthwaite_df
from ._input import Sample, Settings
from ._rule import _excludes_zero

__all__ = ["Estimate", "describe_method", "estimate", "no_estimate"]

CiStatus = Literal["ok", "degenerate", "unavailable"]


class Estimate(NamedTuple):
    """What the sample says about the effect (all None/False when no problem is matched)."""

    effect: float | None
    ci_low: float | None
    ci_high: float | None
    ci_status: CiStatus
    excludes: bool
    """The interval lies entirely above or entirely below 0."""
    pvalue: float | None
    pvalue_exact: bool
    se: float | None
    """SE of the effect, widened by the run-level variance where there is one."""
    se_problems: float | None
    """SE of the effect from the problems alone (what the MDE starts from)."""
    inflation: float
    run_level_df: float | None
    run_variance: float
    """The run-level variance of the effect accounted for (0 with no matched problem)."""
    method: str
    significant: bool


def describe_method(sample: Sample, settings: Settings) -> str:
    """The one-line description of the procedure (before the run-level and MDE parts)."""
    n_resamples, direction = settings.n_resamples, sample.direction
    exact = sample.n_units <= n_resamples.bit_length() - 1  # 2**units <= n_resamples
    test_kind = "exact" if exact else f"randomized, B={n_resamples}"
    if sample.clusters is not None:
        return (
            f"paired over problems in {sample.n_clusters} declared clusters, d = {direction:+d} * "
            f"(candidate - baseline); cluster bootstrap CI (percentile, B={n_resamples}); "
            f"two-sided sign-flip test per cluster ({test_kind})"
        )
    return (
        f"paired over problems, d = {direction:+d} * (candidate - baseline); percentile "
        f"bootstrap CI (grouped, B={n_resamples}); two-sided sign-flip test ({test_kind})"
    )


def no_estimate(method: str) -> Estimate:
    """The estimate of a sample with no matched problem."""
    return Estimate(
        effect=None,
        ci_low=None,
        ci_high=None,
        ci_status="unavailable",
        excludes=False,
        pvalue=None,
        pvalue_exact=False,
        se=None,
        se_problems=None,
        inflation=1.0,
        run_level_df=None,
        run_variance=0.0,
        method=method,
        significant=False,
    )


def _test(sample: Sample, settings: Settings) -> tuple[float, bool, float | None]:
    """``(pvalue, exact, se)``: the two-sided sign-flip test (per cluster with clusters) and
    the SE of the effect (CR1 clustered with clusters)."""
    n_resamples, rng = settings.n_resamples, settings.rng
    if sample.clusters is not None:
        test = cluster_sign_flip_test(
            sample.candidate,
            sample.baseline,
            sample.clusters,
            n_resamples=n_resamples,
            alternative="two-sided",
            rng=rng,
        )
        n_clusters = sample.n_clusters
        se = clustered_se(sample.d, sample.clusters) if n_clusters and n_clusters >= 2 else None
    else:
        test = sign_flip_test(
            sample.candidate,
            sample.baseline,
            n_resamples=n_resamples,
            alternative="two-sided",
            rng=rng,
        )
        se = paired_se(sample.candidate, sample.baseline)
    return test.pvalue, test.exact, se


def _interval(sample: Sample, settings: Settings) -> tuple[float | None, float | None, CiStatus]:
    """``(ci_low, ci_high, ci_status)``: the percentile bootstrap interval of the effect
    (over clusters with clusters); none with fewer than 2 problems."""
    if sample.size < 2:
        return None, None, "unavailable"
    if sample.clusters is not None:
        boot = cluster_bootstrap_ci(
            sample.d,
            sample.clusters,
            n_resamples=settings.n_resamples,
            confidence_level=settings.confidence_level,
            rng=settings.rng,
        )
    else:
        boot = grouped_bootstrap_ci(
            sample.d,
            n_resamples=settings.n_resamples,
            confidence_level=settings.confidence_level,
            rng=settings.rng,
        )
    if boot.low is None or boot.high is None:  # no interval (e.g. fewer than 2 clusters)
        return boot.low, boot.high, "unavailable"
    return boot.low, boot.high, "degenerate" if boot.status == "degenerate" else "ok"


def _satterthwaite(se: float, sample: Sample) -> float:
    """Degrees of freedom of ``se_total^2 = se^2 + run_variance``
    (:func:`rolleval.stats._run_noise.satterthwaite_df` over the sample's units)."""
    return satterthwaite_df(se, sample.run_variance, sample.run_variance_se, sample.n_units)


def estimate(sample: Sample, settings: Settings, method: str) -> Estimate:
    """Effect, test, SE and interval of a sample of at least one problem; widened by the
    run-level variance of the effect when the sample carries one (``method`` says so)."""
    d = sample.d
    effect = math.fsum(d) / sample.size
    pvalue, exact, se = _test(sample, settings)
    ci_low, ci_high, ci_status = _interval(sample, settings)
    scale = float(np.max(np.abs(d)))
    excludes = ci_low is not None and ci_high is not None and _excludes_zero(ci_low, ci_high, scale)
    se_problems, inflation, run_df = se, 1.0, None
    run_level = sample.run_variance > 0 or sample.run_variance_se > 0
    if run_level and ci_low is not None and ci_high is not None and se is not None:
        df = _satterthwaite(se, sample)
        ci_low, ci_high, pvalue, se, inflation = run_level_adjustment(
            effect,
            ci_low,
            ci_high,
            pvalue,
            se,
            run_variance=sample.run_variance,
            confidence_level=settings.confidence_level,
            df=df,
        )
        run_df = None if math.isinf(df) else df
        excludes = _excludes_zero(ci_low, ci_high, scale)
        method += (
            f"; interval and p-value widened by a run-level variance of the effect of "
            f"{sample.run_variance:.4g} (design effect {inflation:.4g} on the SE"
            + ("" if run_df is None else f"; Student t, {run_df:.3g} Satterthwaite df")
            + ")"
        )
    return Estimate(
        effect=effect,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_status=ci_status,
        excludes=excludes,
        pvalue=pvalue,
        pvalue_exact=exact and not run_level,
        se=se,
        se_problems=se_problems,
        inflation=inflation,
        run_level_df=run_df,
        run_variance=sample.run_variance,
        method=method,
        significant=bool(excludes and pvalue <= settings.alpha),
    )
