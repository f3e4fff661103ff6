"""The verdict words of a paired comparison and the decision rule that picks one.

A leaf module: :mod:`._paired` (one comparison) and :mod:`._holm` (Holm and the gate)
both import from here, and it imports neither, so the two never import each other.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Literal, get_args

from ..errors import EXIT_INCONCLUSIVE, EXIT_NEGATIVE, EXIT_OK
from ..stats import min_attainable_pvalue

__all__ = [
    "COMPARISON_VERDICTS",
    "GATE_VERDICTS",
    "ComparisonVerdict",
    "GateVerdict",
    "PolicyVerdict",
    "verdict_exit_code",
    "verdict_label",
]

ComparisonVerdict = Literal[
    "insufficient_evidence",
    "regression",
    "improvement",
    "inconclusive",
    "significant_below_threshold",
    "equivalent_within_threshold",
]
"""Outcome of one paired comparison (:func:`rolleval.compare.paired_compare`).

==============================  ====  ==================================================
value                           exit  meaning
==============================  ====  ==================================================
``insufficient_evidence``       3     fewer than 2 problems, a test that cannot reach
                                      alpha, or an "equivalent" interval the data cannot
                                      support (degenerate sample, MDE above the threshold)
``regression``                  1     significant drop at least the threshold
``improvement``                 0     significant gain at least the threshold
``inconclusive``                3     the interval reaches a drop beyond the threshold,
                                      or it is wider than the band without significance
``significant_below_threshold`` 0     a significant change smaller than the threshold
``equivalent_within_threshold`` 0     not significant, interval inside (-threshold, +threshold), and
                                      the sample can bound the difference
==============================  ====  ==================================================
"""

GateVerdict = Literal["regression", "inconclusive", "pass"]
"""Overall outcome of :func:`rolleval.compare.gate_decision` and of
:func:`rolleval.compare.compare_runs` (exit 1, 3, 0)."""

PolicyVerdict = Literal["pass", "blocked", "inconclusive", "run_failed"]
"""Overall outcome of ``rolleval gate`` (:func:`rolleval.compare.gate_run`) under its policy.

==================  ====  =========================================================
value               exit  meaning
==================  ====  =========================================================
``pass``            0     every gating comparison passes and every limit holds
``blocked``         1     a gating comparison is a regression after Holm, or an
                          absolute limit other than ``infra_error_rate`` is broken
``inconclusive``    3     a gating comparison is inconclusive or lacks evidence, or
                          a baseline task has no counterpart in the run
``run_failed``      4     the ``infra_error_rate`` limit is broken (an outage)
==================  ====  =========================================================
"""

#: Exit code of ``rolleval compare`` for each comparison verdict (read-only).
COMPARISON_VERDICTS: MappingProxyType[str, int] = MappingProxyType(
    {
        "insufficient_evidence": EXIT_INCONCLUSIVE,
        "regression": EXIT_NEGATIVE,
        "improvement": EXIT_OK,
        "inconclusive": EXIT_INCONCLUSIVE,
        "significant_below_threshold": EXIT_OK,
        "equivalent_within_threshold": EXIT_OK,
    }
)
#: Exit code of ``rolleval gate`` / the overall compare verdict for each gate verdict.
GATE_VERDICTS: MappingProxyType[str, int] = MappingProxyType(
    {"regression": EXIT_NEGATIVE, "inconclusive": EXIT_INCONCLUSIVE, "pass": EXIT_OK}
)
assert set(COMPARISON_VERDICTS) == set(get_args(ComparisonVerdict))
assert set(GATE_VERDICTS) == set(get_args(GateVerdict))


def verdict_exit_code(verdict: str) -> int:
    """Exit code of a comparison verdict (see :data:`COMPARISON_VERDICTS`)."""
    return COMPARISON_VERDICTS[verdict]


def verdict_label(verdict: str) -> str:
    """Human label: the word with spaces, e.g. ``"significant below threshold"``."""
    return verdict.replace("_", " ")


# Two numbers within this relative distance are equal when compared with the threshold
# or with 0: a mean that is exactly -0.02 in exact arithmetic may come out of floats as
# -0.019999999999999997, and must still count as "at least the threshold".
_RTOL = 1e-9


def _close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=_RTOL, abs_tol=0.0)


def _at_most(x: float, y: float) -> bool:
    """``x <= y``, with float noise (relative 1e-9) counted as equality."""
    return x <= y or _close(x, y)


def _below(x: float, y: float) -> bool:
    """``x < y`` strictly, with float noise (relative 1e-9) counted as equality."""
    return x < y and not _close(x, y)


def _excludes_zero(ci_low: float, ci_high: float, scale: float) -> bool:
    """The interval lies entirely above or below 0 by more than ``1e-9 * scale``."""
    tol = _RTOL * scale
    return ci_low > tol or ci_high < -tol


def _too_few(n_units: int, n_resamples: int, alpha: float, unit: str = "problem") -> str | None:
    """Why ``n_units`` units can never give ``p <= alpha``; None when they can."""
    if n_units < 2:
        return f"{n_units} matched {unit}(s): at least 2 are needed for a paired comparison"
    p_min = min_attainable_pvalue(n_units, n_resamples=n_resamples)
    if p_min > alpha:
        if n_units <= n_resamples.bit_length() - 1:  # exact test: 2**T <= n_resamples
            why = f"with {n_units} {unit}s the exact sign-flip test cannot go below {p_min:g}"
        else:
            why = f"n_resamples={n_resamples} cannot give a p-value below {p_min:g}"
        return f"{why} > alpha = {alpha:g}"
    return None


def _decide(
    *,
    effect: float,
    ci_low: float,
    ci_high: float,
    significant: bool,
    threshold: float,
    bound_low: float | None = None,
    bound_high: float | None = None,
    mde_ok: bool = True,
) -> ComparisonVerdict:
    """The verdict table of :func:`rolleval.compare.paired_compare` for ``T >= 2``.

    ``bound_low``/``bound_high`` (an exact bound, given for a near-degenerate sample) widen
    the interval wherever a bound on the difference is needed: a significant drop smaller
    than the threshold, and equivalence. Equivalence also needs ``mde_ok`` (the MDE at
    this size is at most the threshold); an interval inside the band that lacks either
    gives ``insufficient_evidence``.
    """
    lo = ci_low if bound_low is None else min(ci_low, bound_low)
    hi = ci_high if bound_high is None else max(ci_high, bound_high)
    if significant:
        if _at_most(effect, -threshold):
            return "regression"
        if _at_most(threshold, effect):
            return "improvement"
        if _at_most(lo, -threshold):
            return "inconclusive"
        return "significant_below_threshold"
    if _below(-threshold, ci_low) and _below(ci_high, threshold):
        if _below(-threshold, lo) and _below(hi, threshold) and mde_ok:
            return "equivalent_within_threshold"
        return "insufficient_evidence"
    return "inconclusive"
