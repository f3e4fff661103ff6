"""The reasons of :func:`paired_compare`: the one-line explanation of a verdict.

:func:`unbounded_reason` says why the sample cannot support equivalence or exclude a drop
of the threshold (a near-degenerate sample without a finite or narrow enough exact bound, a
minimum detectable effect above the threshold); :func:`_explain` writes the line.
"""

from __future__ import annotations

import math

import numpy as np

from ._bound import Bound
from ._estimate import Estimate
from ._input import Settings

__all__ = ["reason", "unbounded_reason"]


def reason(
    verdict: str,
    est: Estimate,
    settings: Settings,
    d: np.ndarray,
    bound: Bound | None,
    mde: float | None,
) -> str:
    """The one-line reason of a verdict reached from an interval (not ``too few``)."""
    assert est.effect is not None and est.pvalue is not None
    assert est.ci_low is not None and est.ci_high is not None
    return _explain(
        verdict,
        est.significant,
        est.excludes,
        est.effect,
        est.ci_low,
        est.ci_high,
        est.pvalue,
        settings.threshold,
        unbounded_reason(verdict, est, settings, d, bound, mde),
        alpha=settings.alpha,
    )


def unbounded_reason(
    verdict: str,
    est: Estimate,
    settings: Settings,
    d: np.ndarray,
    bound: Bound | None,
    mde: float | None,
) -> str | None:
    """Why the sample does not bound the effect inside the band, where the verdict rests on
    it (an inconclusive significant drop whose interval excludes a drop of the threshold, or
    insufficient evidence); None otherwise."""
    why: str | None = None
    t, threshold = d.size, settings.threshold
    n_moved = int(np.count_nonzero(d))
    if bound is not None:
        if math.isinf(bound.low) or math.isinf(bound.high):
            why = (
                f"the sample is degenerate (every one of the {t} paired differences is "
                f"{d[0]:+.4g}) and has no finite exact bound"
                if bool(np.all(d == d[0]))
                else f"only {n_moved} of {t} problems moved and the metric's "
                "range is unknown, so no exact bound exists"
            )
        elif not (bound.low > -threshold and bound.high < threshold):
            why = (
                f"only {n_moved} of {t} problems moved: the exact bound "
                f"[{bound.low:.4g}, {bound.high:.4g}] on the effect (share of problems "
                "that moved, Clopper-Pearson, times the metric's range) reaches the threshold"
            )
    assert est.ci_low is not None
    if verdict == "inconclusive" and not (est.significant and est.ci_low > -threshold):
        why = None
    if verdict == "insufficient_evidence" and why is None and mde is not None:
        why = (
            f"the minimum detectable effect at this size, {mde:.4g} at power "
            f"{settings.power:g}, exceeds the threshold"
        )
    return why


def _explain(
    verdict: str,
    significant: bool,
    excludes_zero: bool,
    effect: float,
    lo: float,
    hi: float,
    p: float,
    threshold: float,
    why_unbounded: str | None,
    alpha: float = 0.05,
) -> str:
    ci = f"CI [{lo:.4g}, {hi:.4g}]"
    # contract row 3: a change is significant only when the interval excludes 0 AND the
    # sign-flip test reaches alpha; say which one did not when they disagree
    disagree = (
        f"the interval excludes 0 but the sign-flip test does not reach alpha "
        f"(p = {p:.3g} > {alpha:g}); both must agree"
    )
    if verdict == "regression":
        return f"candidate worse by {-effect:.4g} ({ci}, p = {p:.3g}): at least the threshold {threshold:g}"
    if verdict == "improvement":
        return f"candidate better by {effect:.4g} ({ci}, p = {p:.3g}): at least the threshold {threshold:g}"
    if verdict == "significant_below_threshold":
        return f"significant change {effect:+.4g} ({ci}, p = {p:.3g}) smaller than the threshold {threshold:g}"
    if verdict == "equivalent_within_threshold":
        why = disagree if excludes_zero else f"p = {p:.3g}"
        return f"no significant change ({why}); {ci} lies inside (-{threshold:g}, +{threshold:g})"
    if verdict == "insufficient_evidence":
        return f"{ci} lies inside (-{threshold:g}, +{threshold:g}) but {why_unbounded}: equivalence is not shown"
    if significant:
        why = (
            f"{ci} reaches a drop of the threshold"
            if why_unbounded is None
            else f"{why_unbounded}, so a drop of the threshold is not excluded"
        )
        return (
            f"significant drop {effect:+.4g} (p = {p:.3g}) smaller than the threshold {threshold:g}, "
            f"but {why}"
        )
    why = disagree if excludes_zero else f"{ci} contains 0"
    return (
        f"no significant change ({why}) and {ci} reaches beyond +-{threshold:g}: "
        "neither a regression nor equivalence is shown"
    )
