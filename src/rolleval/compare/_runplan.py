"""``rolleval plan --run-noise FILE [--runs-per-side K]``: sizes with a run-level variance.

The comparison planned for is ``rolleval compare`` with the endpoint's run-level variance
``v`` of one run's mean (docs/contract.md, "Run-level noise"):

* ``K = 1`` run per side with ``--run-noise``: the effect's variance is
  ``V / T + 2 v`` and compare treats ``v`` as known (normal reference);
* ``K >= 2`` replicate runs per side (``--baseline-replicate``/``--candidate-replicate``):
  each side's rollouts pool over its ``K`` runs, so the problem part is
  ``(omega2 + sigma2_baseline/(K n_rollouts_baseline) + sigma2_candidate/(K n_rollouts_candidate)) / T``, the run
  part ``2 v / K``, and compare estimates ``v`` from each side's ``K`` runs: a Student t
  reference with Satterthwaite degrees of freedom
  (:func:`rolleval.stats._run_noise.satterthwaite_df`, ``run_variance_se`` from the expected
  variance of a run mean ``S^2 = v + sigma2/(n T)``, :func:`._replicates.run_variance_se`).

Power is :func:`rolleval.stats.regression_power` with that ``df``; sizes are the smallest
integers whose power reaches the target (doubling, then bisection).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..stats import regression_power
from ..stats._run_noise import satterthwaite_df
from ._replicates import run_variance_se

if TYPE_CHECKING:
    from ._plan import PlanOptions

__all__ = ["RunLevelDesign", "run_level_sizes"]

#: The largest size searched (problems, or rollouts per problem).
_CAP = 10_000_000
#: The most runs per side searched when the run-level variance alone blocks the verdict.
_MAX_RUNS = 1000


@dataclass(frozen=True)
class RunLevelDesign:
    """The planned comparison's run-level part: ``v`` and the runs per side.

    Attributes
    ----------
    v : float
        Run-level variance of one run's mean (a run-noise file's ``run_variance``; 0 when
        only ``runs_per_side`` is given).
    runs_per_side : int
        ``K``: 1 (``compare --run-noise``, ``v`` known) or more (replicate runs, ``v``
        estimated from each side's runs).
    """

    v: float
    runs_per_side: int = 1

    def se_df(self, problems: int, kw: dict[str, float]) -> tuple[float, float, float]:
        """``(se_total, df, run_variance)`` of the effect at ``problems`` problems with the
        variance components ``kw`` (rollouts per problem ``n_rollouts_baseline``, ``n_rollouts_candidate``
        per run)."""
        runs = self.runs_per_side
        sb, sc = kw["sigma2_baseline"], kw["sigma2_candidate"]
        nb, nc = kw["n_rollouts_baseline"], kw["n_rollouts_candidate"]
        se2 = (kw["omega2"] + sb / (runs * nb) + sc / (runs * nc)) / problems
        rv = 2.0 * self.v / runs
        if runs == 1:
            return math.sqrt(se2 + rv), math.inf, rv
        parts = [(1.0 / runs, self.v + s / (n * problems), runs) for s, n in ((sb, nb), (sc, nc))]
        df = satterthwaite_df(math.sqrt(se2), rv, run_variance_se(parts), problems)
        return math.sqrt(se2 + rv), df, rv

    def power(
        self, problems: int, kw: dict[str, float], target: PlanOptions, threshold: float
    ) -> float:
        """Power of the regression verdict (``threshold = 0``: of significance alone)."""
        se, df, _ = self.se_df(problems, kw)
        return regression_power(
            target.effect, se=se, threshold=threshold, alpha=target.alpha, df=df
        )

    def mde(self, problems: int, kw: dict[str, float], target: PlanOptions) -> float:
        """``(q_{1-alpha/2} + q_{power}) * se_total``, ``q`` the t quantiles at the design's
        ``df`` (normal for ``df = inf``)."""
        from scipy.stats import norm
        from scipy.stats import t as t_dist

        se, df, _ = self.se_df(problems, kw)
        ref = norm if math.isinf(df) else t_dist(df)
        return float(ref.isf(target.alpha / 2.0) + ref.ppf(target.power)) * se


def _smallest(ok: Callable[[int], bool], low: int = 2) -> int | None:
    """The smallest integer ``n >= low`` with ``ok(n)`` (``ok`` rising in ``n``), by doubling
    then bisection; None when not even ``_CAP`` passes."""
    if ok(low):
        return low
    high = low
    while not ok(high):
        if high >= _CAP:
            return None
        low, high = high, min(2 * high, _CAP)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high


def _runs_needed(design: RunLevelDesign, kw: dict[str, float], target: PlanOptions) -> int | None:
    """The fewest replicate runs per side at which some number of problems reaches the
    power (None: not within :data:`_MAX_RUNS`)."""
    for runs in range(max(2, design.runs_per_side + 1), _MAX_RUNS + 1):
        wider = replace(design, runs_per_side=runs)
        if wider.power(_CAP, kw, target, target.threshold) >= target.power:
            return runs
    return None


def run_level_sizes(
    problems: int, kw: dict[str, float], design: RunLevelDesign, target: PlanOptions, rollouts: bool
) -> dict[str, Any]:
    """A task's planning figures with the run-level part (the :class:`TaskPlan` fields):
    the current design's MDE and power, the problems for significance, equivalence and the
    regression verdict, and (``rollouts``) the rollouts per problem at ``problems``."""
    goal = target.power

    def reach(threshold: float) -> Callable[[int], bool]:
        return lambda t: design.power(t, kw, target, threshold) >= goal

    def equivalent(t: int) -> bool:
        return design.mde(t, kw, target) <= target.threshold

    def by_rollouts(r: int) -> bool:
        at = {**kw, "n_rollouts_baseline": float(r), "n_rollouts_candidate": float(r)}
        return design.power(problems, at, target, target.threshold) >= goal

    required = _smallest(reach(target.threshold))
    se, df, rv = design.se_df(required or problems, kw)
    out: dict[str, Any] = {
        "mde_current": design.mde(problems, kw, target),
        "regression_power_current": design.power(problems, kw, target, target.threshold),
        "required_problems_significance": _smallest(reach(0.0)),
        "equivalence_problems": _smallest(equivalent),
        "required_problems": required,
        "required_problems_normal": _normal_size(design, kw, target),
        "required_rollouts_at_current_problems": _smallest(by_rollouts, 1) if rollouts else None,
        "power_planned": None
        if required is None
        else {
            "power": design.power(required, kw, target, target.threshold),
            "se": None,
            "sims": None,
            "method": _method(design, df),
        },
        "run_level": {
            "v": design.v,
            "runs_per_side": design.runs_per_side,
            "run_variance": rv,
            "formula": "v_baseline/runs + v_candidate/runs",
            "reference": "normal" if math.isinf(df) else "t",
            "df_at_required_problems": None if math.isinf(df) else df,
            "se_at_required_problems": se,
        },
    }
    if required is None:
        out["reason"] = _unreachable(design, kw, target)
    return out


def _normal_size(design: RunLevelDesign, kw: dict[str, float], target: PlanOptions) -> int | None:
    """The same design's size with a normal reference (``df = inf``): what the t reference
    adds, for comparison."""

    def ok(t: int) -> bool:
        se, _, _ = design.se_df(t, kw)
        p = regression_power(target.effect, se=se, threshold=target.threshold, alpha=target.alpha)
        return p >= target.power

    return _smallest(ok)


def _method(design: RunLevelDesign, df: float) -> str:
    if math.isinf(df):
        return (
            "normal approximation with the run-level variance 2 v added (one run per side, v "
            "known from the run-noise file); compare's rule is not simulated"
        )
    return (
        f"Student t reference with Satterthwaite df ({df:.3g} at this size; "
        f"{design.runs_per_side} replicate runs per side, v estimated from each side's runs), "
        "noncentral t power; compare's rule is not simulated"
    )


def _unreachable(design: RunLevelDesign, kw: dict[str, float], target: PlanOptions) -> str:
    """Why no number of problems reaches the power, and the runs per side that would."""
    have = design.runs_per_side
    needed = _runs_needed(design, kw, target)
    more = (
        f"at least {needed} replicate runs per side (--runs-per-side {needed}) reach it"
        if needed is not None
        else f"not even {_MAX_RUNS} runs per side reach it"
    )
    return (
        f"the run-level variance of the effect (2 v / {have} = {2 * design.v / have:.3g}) alone "
        f"keeps the power for the regression verdict below {target.power:g} with {have} run"
        f"{'s' if have > 1 else ''} per side, whatever the number of problems; {more}"
    )
