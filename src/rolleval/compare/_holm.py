"""Holm's step-down adjustment and the multi-metric gate over paired comparisons.

The verdict words and the decision rule live in :mod:`._rule`; this module imports
:mod:`._paired` (never the reverse), so there is no import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from ..errors import UsageError
from ..stats._validate import check_open_unit, describe
from ._paired import Comparison
from ._rule import (
    GATE_VERDICTS,
    ComparisonVerdict,
    GateVerdict,
    _close,
    _decide,
    _too_few,
    verdict_exit_code,
)

__all__ = ["GateDecision", "GateMetric", "gate_decision", "holm"]


# ------------------------------------------------------------------------ Holm


def _validate_holm(pvalues: object) -> np.ndarray:
    try:
        p = np.asarray(pvalues, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"`pvalues` must be a 1-D array of numbers in [0, 1]; {exc}") from exc
    if p.ndim != 1:
        raise UsageError(f"`pvalues` must be 1-D; got shape {p.shape}")
    bad = np.flatnonzero(~((p >= 0.0) & (p <= 1.0)))  # also catches NaN
    if bad.size:
        i = int(bad[0])
        raise UsageError(f"`pvalues` must lie in [0, 1]; got {p[i]} at index {i}")
    return p


def holm(pvalues: object) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, strong control of the family-wise error).

    For ``m`` p-values sorted increasingly, ``p_(1) <= ... <= p_(m)`` [1]_::

        adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))

    and each adjusted value is returned at the position of its p-value. Rejecting every
    hypothesis with ``adj <= alpha`` is exactly Holm's procedure at level ``alpha``:
    reject ``H_(1), H_(2), ...`` while ``p_(j) <= alpha / (m - j + 1)`` and stop at the
    first failure. The adjusted values are monotone in the sorted order, never below the
    raw p-value and capped at 1. Ties keep their input order (a stable sort), which does
    not change any value.

    This is *not* ``scipy.stats.false_discovery_control`` (Benjamini-Hochberg, which
    controls the false discovery rate, a weaker guarantee).

    Parameters
    ----------
    pvalues : array_like, 1-D
        p-values in ``[0, 1]`` (NaN is an error). Empty input gives an empty array.

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, same shape and order as ``pvalues``.

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test procedure",
       *Scandinavian Journal of Statistics* 6(2):65-70, 1979.

    Examples
    --------
    >>> from rolleval.compare import holm
    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = _validate_holm(pvalues)
    m = p.size
    if m == 0:
        empty: np.ndarray = p.copy()
        return empty
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


# ------------------------------------------------------------------------ gate


@dataclass(frozen=True)
class GateMetric:
    """One gating metric after the Holm adjustment (an entry of :attr:`GateDecision.metrics`).

    Attributes
    ----------
    name : str
        The key given to :func:`gate_decision`.
    verdict : ComparisonVerdict
        The verdict with significance recomputed from ``adjusted_pvalue``.
    exit_code : int
        Its exit code.
    unadjusted_verdict : ComparisonVerdict
        The verdict of the comparison alone.
    pvalue : float or None
        The comparison's two-sided p-value (None when no test was run).
    adjusted_pvalue : float or None
        Holm-adjusted over the gating metrics (None when no test was run).
    significant : bool
        The interval excludes 0 and ``adjusted_pvalue <= alpha``.
    effect, ci_low, ci_high : float or None
        Copied from the comparison (the interval is not multiplicity-adjusted).
    """

    name: str
    verdict: ComparisonVerdict
    exit_code: int
    unadjusted_verdict: ComparisonVerdict
    pvalue: float | None
    adjusted_pvalue: float | None
    significant: bool
    effect: float | None
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (verdicts as their string values, floats unrounded)."""
        return {
            "name": self.name,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "unadjusted_verdict": self.unadjusted_verdict,
            "pvalue": self.pvalue,
            "adjusted_pvalue": self.adjusted_pvalue,
            "significant": self.significant,
            "effect": self.effect,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


@dataclass(frozen=True)
class GateDecision:
    """Result of :func:`gate_decision`: several gating metrics decided together. Frozen.

    Attributes
    ----------
    verdict : {"regression", "inconclusive", "pass"}
        ``"regression"`` when any gating metric's adjusted verdict is a regression,
        else ``"inconclusive"`` when any is inconclusive or has insufficient evidence,
        else ``"pass"``.
    exit_code : int
        1, 3 or 0 respectively.
    alpha : float
        The family-wise significance level.
    method : {"holm"}
        The multiplicity adjustment across the gating metrics.
    metrics : Mapping[str, GateMetric]
        Per metric, in the order given (read-only).
    """

    verdict: GateVerdict
    exit_code: int
    alpha: float
    method: Literal["holm"]
    metrics: Mapping[str, GateMetric]

    @property
    def verdicts(self) -> dict[str, ComparisonVerdict]:
        """Adjusted verdict per metric name."""
        return {name: m.verdict for name, m in self.metrics.items()}

    @property
    def adjusted_pvalues(self) -> dict[str, float | None]:
        """Holm-adjusted p-value per metric name (None when no test was run)."""
        return {name: m.adjusted_pvalue for name, m in self.metrics.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "alpha": self.alpha,
            "method": self.method,
            "adjusted_pvalues": self.adjusted_pvalues,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
        }


def _validate_gate_decision(
    comparisons: object, alpha: object
) -> tuple[list[tuple[object, Comparison]], float]:
    alpha_ = check_open_unit(alpha, "alpha")
    if not isinstance(comparisons, Mapping):
        raise UsageError(
            "`comparisons` must be a mapping of metric name to Comparison; "
            f"got {describe(comparisons)}"
        )
    if len(comparisons) == 0:
        raise UsageError("`comparisons` must hold at least one gating metric; got none")
    items = list(comparisons.items())
    for name, comparison in items:
        if not isinstance(comparison, Comparison):
            raise UsageError(
                f"`comparisons[{name!r}]` must be a Comparison (from paired_compare); "
                f"got {describe(comparison)}"
            )
        if not _close(comparison.alpha, alpha_):
            raise UsageError(
                f"`alpha` = {alpha_:g} differs from the alpha {comparison.alpha:g} that "
                f"`comparisons[{name!r}]` was computed with; compare with one alpha"
            )
    return items, alpha_


def gate_decision(comparisons: Mapping[str, Comparison], *, alpha: float = 0.05) -> GateDecision:
    """Gate a candidate on several metrics at once, with Holm's family-wise correction.

    Each gating metric was compared with :func:`rolleval.compare.paired_compare`. Testing
    ``m`` metrics at level ``alpha`` each would let a no-change candidate fail one of them
    far more often than ``alpha``; the gate therefore:

    1. Holm-adjusts the ``m`` two-sided p-values (:func:`holm`) [1]_. A metric without a
       p-value (no matched problem) enters the family as ``p = 1`` (conservative: ``m``
       counts every gating metric) and keeps ``adjusted_pvalue=None``.
    2. Recomputes each metric's significance as "interval excludes 0 and adjusted
       ``p <= alpha``" and re-applies the verdict table of ``paired_compare``. The
       evidence check (at least 2 problems and an attainable ``p <= alpha``) is also
       repeated, so an insufficient metric stays insufficient. Adjustment can only
       remove significance, so it can turn a regression into an inconclusive result but
       never create one. The intervals are those of the comparisons and are not
       multiplicity-adjusted.
    3. Overall: exit 1 (``"regression"``) if any metric's adjusted verdict is a regression,
       else exit 3 (``"inconclusive"``) if any is inconclusive or has insufficient
       evidence, else exit 0 (``"pass"``: every metric equivalent, improved or changed by
       less than its threshold).

    Parameters
    ----------
    comparisons : Mapping[str, Comparison]
        Gating metric name -> its comparison; at least one.
    alpha : float, default 0.05
        Family-wise level; must equal the ``alpha`` every comparison was computed with.

    Returns
    -------
    GateDecision

    Raises
    ------
    rolleval.errors.UsageError
        On an empty mapping, a value that is not a Comparison, or a mismatched ``alpha``.

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test procedure",
       *Scandinavian Journal of Statistics* 6(2):65-70, 1979.

    Examples
    --------
    >>> import numpy as np
    >>> from rolleval.compare import PairedInput, gate_decision, paired_compare
    >>> base = np.tile([0.75, 0.25, 1.0, 0.5], 50)
    >>> same = paired_compare(PairedInput(base, base.copy()), n_resamples=2000)
    >>> worse = paired_compare(PairedInput(base, base - 0.125), n_resamples=2000)
    >>> gate = gate_decision({"pass@1": worse, "unextracted": same})
    >>> gate.verdict, gate.exit_code, gate.metrics["pass@1"].verdict
    ('regression', 1, 'regression')
    """
    items, alpha_ = _validate_gate_decision(comparisons, alpha)
    raw = [c.pvalue for _, c in items]
    adjusted = holm([1.0 if p is None else p for p in raw])
    metrics: dict[str, GateMetric] = {}
    for (name, c), p, p_adj in zip(items, raw, adjusted):
        p_adj_ = None if p is None else float(p_adj)
        significant = bool(
            p_adj_ is not None
            and c.ci_low is not None
            and c.ci_high is not None
            and c.ci_excludes_zero
            and p_adj_ <= alpha_
        )
        n_units = c.n_clusters if c.unit == "cluster" and c.n_clusters is not None else c.n_problems
        if (
            _too_few(n_units, c.n_resamples, alpha_) is not None
            or c.effect is None
            or c.ci_low is None
            or c.ci_high is None
        ):
            verdict: ComparisonVerdict = "insufficient_evidence"
        else:
            verdict = _decide(
                effect=c.effect,
                ci_low=c.ci_low,
                ci_high=c.ci_high,
                significant=significant,
                threshold=c.threshold,
                bound_low=c.bound_low,
                bound_high=c.bound_high,
                mde_ok=c.mde is not None and (c.mde <= c.threshold or _close(c.mde, c.threshold)),
            )
        metrics[str(name)] = GateMetric(
            name=str(name),
            verdict=verdict,
            exit_code=verdict_exit_code(verdict),
            unadjusted_verdict=c.verdict,
            pvalue=p,
            adjusted_pvalue=p_adj_,
            significant=significant,
            effect=c.effect,
            ci_low=c.ci_low,
            ci_high=c.ci_high,
        )
    verdicts = {m.verdict for m in metrics.values()}
    overall: GateVerdict
    if "regression" in verdicts:
        overall = "regression"
    elif verdicts & {"inconclusive", "insufficient_evidence"}:
        overall = "inconclusive"
    else:
        overall = "pass"
    code = GATE_VERDICTS[overall]
    return GateDecision(
        verdict=overall,
        exit_code=code,
        alpha=alpha_,
        method="holm",
        metrics=MappingProxyType(metrics),
    )
