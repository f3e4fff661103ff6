"""``rolleval plan``: problems and rollouts for the ``regression`` verdict at a true drop.

From a pilot run (or a baseline/candidate pair) per task: the variance components of pass@1
(between-problem variance of true success rates, mean within-problem Bernoulli variance),
then the number of problems, and of rollouts per problem, at which ``rolleval compare``
returns ``regression`` with the requested power when the candidate truly dropped by
``effect`` -- a verdict that needs the drop to be significant *and* at least the threshold.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import UsageError
from ..stats import (
    minimum_detectable_effect,
    paired_variance_components,
    regression_power,
    required_problems,
    required_rollouts,
    variance_components,
)
from ._align import Alignment, align_frames
from ._frame import ProblemFrame, load_frames, resolve_tasks
from ._options import one_of
from ._runplan import RunLevelDesign, run_level_sizes
from ._simulated_power import SMALL_T, small_sample_problems, truth_model

__all__ = ["PlanOptions", "PlanResult", "TaskPlan", "plan_runs"]


@dataclass(frozen=True)
class PlanOptions:
    """What :func:`plan_runs` plans for: the true drop, the comparison that will be run, and
    the simulations. Frozen; the defaults are ``rolleval plan``'s.
    """

    effect: float = 0.04
    """The true drop ``delta`` to catch, in pass@1 units (> 0)."""
    threshold: float = 0.02
    """``threshold`` of the comparison that will be run (``rolleval compare --threshold``), in
    [0, 1)."""
    alpha: float = 0.05
    """Two-sided level of that comparison, in (0, 1)."""
    power: float = 0.8
    """The power wanted for the verdict, in (alpha/2, 1)."""
    sequential: bool = False
    """Also simulate a sequential run against the pilot (``rolleval run --until-decided``)."""
    max_problems: int | None = None
    """Budget of the simulated sequential run (None: the pilot's problems)."""
    round_problems: int = 10
    """Problems between two looks of the simulated sequential run."""
    n_sims: int = 1000
    """Simulations (of compare's rule at small sizes, and of the sequential run)."""
    rng: int = 0
    """Seed of the simulations."""
    n_resamples: int = 10_000
    """Resamples of the simulated comparisons (bootstrap and sign-flip test)."""
    runs_per_side: int = 1
    """Runs per side of the planned comparison: 1, or ``K >= 2`` replicate runs
    (``compare --baseline-replicate/--candidate-replicate``), whose run-level variance
    compare estimates (a t reference; :mod:`._runplan`)."""


@dataclass(frozen=True)
class TaskPlan:
    """The plan of one task: an entry of :attr:`PlanResult.tasks`. Frozen.

    Sizes are for the ``regression`` verdict of ``rolleval compare`` at the plan's true drop
    (see :func:`plan_runs`); effects are in pass@1 units (0-1).

    Attributes
    ----------
    problems : int
        ``T``: the pilot's problems the plan is based on (with a candidate: the matched
        problems; with one pilot: the problems with 2 or more judged rollouts).
    components : dict
        The variance components of pass@1 behind the plan: ``omega2`` (variance of the
        per-problem shift), ``sigma2_baseline``, ``sigma2_candidate`` (mean within-problem
        Bernoulli variance) and ``n_rollouts_baseline``, ``n_rollouts_candidate`` (rollouts per problem), ``n``,
        ``status`` and ``reason``; with one pilot also ``between``, ``within`` and
        ``observed`` (:func:`rolleval.stats.variance_components`).
    assumption : str
        How the candidate's variance was obtained (estimated from the pair, or assumed).
    status : {"ok", "unavailable"}
        ``"unavailable"``: no plan (too few problems, or no usable variance); see ``reason``.
    reason : str or None
        Why the task has no plan, or why no size is given (a drop not above the threshold).
    mde_current : float or None
        Minimum detectable effect at ``T`` problems, for significance at the plan's power.
    regression_power_current : float or None
        The chance of the regression verdict at the true drop with the current design (None:
        no variance).
    required_problems_significance : int or None
        Problems for significance alone at the current rollouts per problem.
    equivalence_problems : int or None
        Problems at which the minimum detectable effect reaches the threshold (what the
        verdict ``equivalent_within_threshold`` needs).
    required_problems : int or None
        Problems for the regression verdict at the current rollouts per problem (None: a
        drop not above the threshold, which no size makes likely).
    required_rollouts_at_current_problems : int or None
        Rollouts per problem for the regression verdict at ``T`` problems (None: not
        reachable by rollouts alone, or no size is given).
    required_problems_normal : int or None
        The normal approximation's problems for the regression verdict (``required_problems``
        is this, or at sizes up to 100 the size a simulation of compare's own rule needs).
    power_planned : dict or None
        The power at ``required_problems`` and how it was found (``power``, ``se``, ``sims``,
        ``method``).
    rollouts_reason : str or None
        Why rollouts per problem are not planned (one rollout per problem on a side: the
        between- and within-problem parts cannot be told apart).
    run_level : dict or None
        With a run-level variance (``run_noise``) or replicate runs (``runs_per_side >= 2``):
        ``v``, ``runs_per_side``, ``run_variance`` (of the effect: ``2 v / runs``),
        ``reference`` (``"normal"`` for one run per side and a known ``v``; ``"t"`` with
        replicates), ``df_at_required_problems`` (Satterthwaite), ``se_at_required_problems``
        and ``note`` (a task the run-noise file lacks). None: the problem-level plan alone.
    sequential : dict or None
        The simulated sequential run (``sequential=True``): ``sims``, ``budget``,
        ``round_problems``, ``mean_problems``, ``p90_problems``, the share of each verdict
        (``verdicts``) and ``implied_drop``.
    """

    problems: int
    components: dict[str, Any]
    assumption: str
    status: Literal["ok", "unavailable"]
    reason: str | None = None
    mde_current: float | None = None
    regression_power_current: float | None = None
    required_problems_significance: int | None = None
    equivalence_problems: int | None = None
    required_problems: int | None = None
    required_rollouts_at_current_problems: int | None = None
    sequential: dict[str, Any] | None = None
    required_problems_normal: int | None = None
    power_planned: dict[str, Any] | None = None
    rollouts_reason: str | None = None
    run_level: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the task's entry in ``rolleval plan --format json`` (the sizes
        only for a task with a plan)."""
        out: dict[str, Any] = {
            "problems": self.problems,
            "components": self.components,
            "assumption": self.assumption,
            "status": self.status,
        }
        if self.status == "ok":
            out["mde_current"] = self.mde_current
            out["regression_power_current"] = self.regression_power_current
            out["required_problems_significance"] = self.required_problems_significance
            out["equivalence_problems"] = self.equivalence_problems
            out["required_problems_normal"] = self.required_problems_normal
            out["required_problems"] = self.required_problems
            out["power_planned"] = self.power_planned
            out["required_rollouts_at_current_problems"] = (
                self.required_rollouts_at_current_problems
            )
        if self.reason is not None:
            out["reason"] = self.reason
        if self.rollouts_reason is not None:
            out["rollouts_reason"] = self.rollouts_reason
        if self.sequential is not None:
            out["sequential"] = self.sequential
        if self.run_level is not None:
            out["run_level"] = self.run_level
        return out


@dataclass(frozen=True)
class PlanResult:
    """Result of :func:`plan_runs`: problems and rollouts per task for the ``regression``
    verdict at a true drop. Frozen. ``to_dict()`` is what ``rolleval plan --format json``
    prints.

    Attributes
    ----------
    effect : float
        The true pass@1 drop ``delta`` to catch (0-1).
    threshold : float
        ``threshold`` of the comparison that will be run (0-1).
    alpha, power : float
        The comparison's two-sided level, and the power wanted for the verdict.
    assumption : str
        The approximation behind every size (normal, paired over problems).
    tasks : dict of str to TaskPlan
        Per planned task, in the pilot's order.
    note : str or None
        Set when ``effect <= threshold``: no size makes the verdict likely.
    missing_tasks : list of str
        Pilot tasks the candidate lacks (not planned).
    verdict : {"regression"}
        The verdict planned for.
    unit : {"problem"}
        The unit of analysis.
    """

    effect: float
    threshold: float
    alpha: float
    power: float
    assumption: str
    tasks: dict[str, TaskPlan]
    note: str | None = None
    missing_tasks: list[str] = field(default_factory=list)
    verdict: Literal["regression"] = "regression"
    unit: Literal["problem"] = "problem"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``note`` and ``missing_tasks`` only when set)."""
        out: dict[str, Any] = {
            "effect": self.effect,
            "threshold": self.threshold,
            "alpha": self.alpha,
            "power": self.power,
            "verdict": self.verdict,
            "unit": self.unit,
            "assumption": self.assumption,
            "tasks": {name: t.to_dict() for name, t in self.tasks.items()},
        }
        if self.note is not None:
            out["note"] = self.note
        if self.missing_tasks:
            out["missing_tasks"] = self.missing_tasks
        return out


def _planned(
    normal: int, variance: float, frames: Any, target: PlanOptions
) -> tuple[int, dict[str, Any]]:
    """``(required_problems, power_planned)``: the normal size and its normal power, or, at
    most :data:`SMALL_T` problems, the size at which compare's own rule reaches the power in
    simulation (:func:`small_sample_problems`)."""
    eff, threshold, alpha = target.effect, target.threshold, target.alpha
    se = math.sqrt(variance / normal)
    normal_power = {
        "power": regression_power(eff, se=se, threshold=threshold, alpha=alpha) if se > 0 else None,
        "se": None,
        "sims": None,
        "method": "normal approximation",
    }
    if normal > SMALL_T or frames is None:
        # (frames None: one rollout per problem, where the simulation's truth model, which
        # needs the within-problem part, cannot be built: the normal size)
        return normal, normal_power
    if isinstance(frames, tuple):
        base, cand, al = frames
        truth_args: tuple[Any, ...] = (
            base.c[al.pos_baseline],
            base.n[al.pos_baseline],
            eff,
            cand.c[al.pos_candidate],
            cand.n[al.pos_candidate],
        )
    else:
        keep = frames.n >= 2
        truth_args = (frames.c[keep], frames.n[keep], eff)
    try:
        truth = truth_model(*truth_args)
    except UsageError as exc:
        return normal, {**normal_power, "note": f"no simulation: {exc}"}
    sim = small_sample_problems(
        truth,
        normal,
        power=target.power,
        threshold=threshold,
        alpha=alpha,
        n_resamples=target.n_resamples,
        n_sims=target.n_sims,
        rng=target.rng,
    )
    return sim.problems, {
        "power": sim.power,
        "se": sim.se,
        "sims": sim.sims,
        "method": (
            f"simulation of compare's rule (sign-flip test and bootstrap, B = "
            f"{target.n_resamples}) on runs drawn from the pilot: the normal approximation "
            f"is optimistic at {SMALL_T} problems or fewer"
        ),
    }


def _check(options: PlanOptions) -> None:
    effect, threshold, alpha, power = (
        options.effect,
        options.threshold,
        options.alpha,
        options.power,
    )
    for name, value in (("effect", effect), ("alpha", alpha), ("power", power)):
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise UsageError(f"`{name}` must be a number; got {value!r}")
    if effect <= 0:
        raise UsageError(f"`effect` must be a drop > 0 in pass@1 units; got {effect}")
    if not isinstance(threshold, (int, float)) or not 0 <= threshold < 1:
        raise UsageError(f"`threshold` must lie in [0, 1); got {threshold!r}")
    k = options.runs_per_side
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"`runs_per_side` must be an integer >= 1; got {k!r}")
    if not 0 < alpha < 1 or not alpha / 2 < power < 1:
        raise UsageError(
            f"`alpha` must lie in (0, 1) and `power` in (alpha/2, 1); got {alpha}, {power}"
        )


def _paired_components(
    pilot_frame: ProblemFrame, candidate_frame: ProblemFrame
) -> tuple[dict[str, Any], int, str, Alignment]:
    """The paired variance components of a baseline/candidate pair, or, when a problem has
    one rollout on a side, the total variance of the per-problem differences alone."""
    al = align_frames(pilot_frame, candidate_frame, unmatched="exclude")
    c_b, n_b = pilot_frame.c[al.pos_baseline], pilot_frame.n[al.pos_baseline]
    c_c, n_c = candidate_frame.c[al.pos_candidate], candidate_frame.n[al.pos_candidate]
    T = len(al.ids)
    comp = paired_variance_components(c_b, n_b, c_c, n_c)
    components: dict[str, Any] = {
        "omega2": comp.omega2,
        "sigma2_baseline": comp.sigma2_baseline,
        "n_rollouts_baseline": comp.n_rollouts_baseline,
        "sigma2_candidate": comp.sigma2_candidate,
        "n_rollouts_candidate": comp.n_rollouts_candidate,
        "n": comp.n,
        "status": comp.status,
        "reason": comp.reason,
    }
    assumption = "omega2 estimated from the baseline/candidate pair"
    if comp.status == "ok" or T < 2:
        return components, T, assumption, al
    d = c_b / n_b - c_c / n_c
    total = float(np.var(d, ddof=1))
    if total == 0:
        components["reason"] = (
            f"every one of the {T} problems has the same difference between the runs: no "
            "spread to plan from"
        )
        return components, T, assumption, al
    components.update(
        total_variance=total,
        status="total_only",
        reason=(
            "a problem has one rollout on a side: the between- and within-problem parts "
            "cannot be told apart, so rollouts per problem cannot be planned; problems can, "
            "at the current rollouts per problem, from the variance of the per-problem "
            "differences"
        ),
    )
    assumption = (
        "the variance of the per-problem differences of the pair at the current rollouts "
        "per problem (omega2 and the within-problem parts together)"
    )
    return components, T, assumption, al


def _total_kwargs(components: dict[str, Any]) -> dict[str, float]:
    """Planner arguments carrying the total variance alone (``V = total``)."""
    return {
        "omega2": float(components["total_variance"]),
        "sigma2_baseline": 0.0,
        "n_rollouts_baseline": 1.0,
        "sigma2_candidate": 0.0,
        "n_rollouts_candidate": 1.0,
    }


def _components(
    pilot_frame: ProblemFrame, cand_frame: ProblemFrame | None
) -> tuple[int, dict[str, Any], str, bool, Alignment | None]:
    """``(T, components, assumption, ok, alignment)``: the variance components of pass@1 a
    task's plan rests on, from the pilot/candidate pair (:func:`_paired_components`) or from
    the pilot alone."""
    if cand_frame is not None:
        components, T, assumption, al = _paired_components(pilot_frame, cand_frame)
        return T, components, assumption, components["status"] in ("ok", "total_only"), al
    keep = pilot_frame.n >= 2
    vc = variance_components(pilot_frame.c[keep], pilot_frame.n[keep])
    T = int(keep.sum())
    ok = vc.status == "ok" and vc.within is not None
    components = {
        "between": vc.between,
        "within": vc.within,
        "observed": vc.observed,
        "omega2": 0.0 if ok else None,
        "sigma2_baseline": vc.within,
        "n_rollouts_baseline": vc.n_rollouts,
        "sigma2_candidate": vc.within,
        "n_rollouts_candidate": vc.n_rollouts,
        "n": vc.n,
        "status": vc.status,
        "reason": vc.reason,
    }
    if not ok and T < 2 and pilot_frame.n.size >= 2:
        components["reason"] = (
            f"{vc.reason}; with one rollout per problem give --candidate: the "
            "paired variance is then estimated from the two runs"
        )
    assumption = (
        "one pilot run: the candidate is assumed to shift every problem equally "
        "(omega2 = 0) with the pilot's within-problem variance, so sizes are lower bounds"
    )
    return T, components, assumption, ok, None


def _planner_kwargs(components: dict[str, Any]) -> tuple[dict[str, float], float]:
    """The planner's variance arguments from a task's components (the total variance alone
    at one rollout per problem), and the variance of one problem's difference they give."""
    if components["status"] == "total_only":
        kw = _total_kwargs(components)
    else:
        kw = {
            "omega2": float(components["omega2"]),
            "sigma2_baseline": float(components["sigma2_baseline"]),
            "n_rollouts_baseline": float(components["n_rollouts_baseline"]),
            "sigma2_candidate": float(components["sigma2_candidate"]),
            "n_rollouts_candidate": float(components["n_rollouts_candidate"]),
        }
    variance = (
        kw["omega2"]
        + kw["sigma2_baseline"] / kw["n_rollouts_baseline"]
        + kw["sigma2_candidate"] / kw["n_rollouts_candidate"]
    )
    return kw, variance


def plan_runs(
    pilot: str | os.PathLike[str],
    candidate: str | os.PathLike[str] | None = None,
    *,
    options: PlanOptions | None = None,
    effect: float = 0.04,
    threshold: float = 0.02,
    alpha: float = 0.05,
    power: float = 0.8,
    tasks: list[str] | None = None,
    sequential: bool = False,
    max_problems: int | None = None,
    round_problems: int = 10,
    n_sims: int = 1000,
    rng: int = 0,
    n_resamples: int = 10_000,
    runs_per_side: int = 1,
    run_noise: str | os.PathLike[str] | Mapping[str, float] | None = None,
) -> PlanResult:
    r"""Sizes at which ``rolleval compare`` gives ``regression`` for a true drop of ``effect``.

    The verdict ``regression`` needs a significant drop (interval and sign-flip test at
    ``alpha``) whose estimate is at least ``threshold``. With the estimate
    ``N(-delta, s^2)`` (normal approximation, paired over problems) its probability is
    (:func:`rolleval.stats.regression_power`)

    .. math:: P = \Phi\left(\frac{\delta - \max(\theta, z_{\alpha/2}\,s)}{s}\right),

    so ``power`` needs ``s <= min(delta / (z_{alpha/2} + z_beta), (delta - threshold) / z_beta)``.
    ``s^2 = (omega2 + sigma2_baseline/n_rollouts_baseline + sigma2_candidate/n_rollouts_candidate) / T``
    (Miller 2024) gives the problems ``T`` (:func:`rolleval.stats.required_problems` with
    ``threshold``) and, at the pilot's ``T``, the rollouts per problem
    (:func:`rolleval.stats.required_rollouts`).

    A drop of at most the threshold (``delta <= threshold``) is flagged at most about half the
    time (exactly ``threshold``: 1/2) whatever the size; the plan then says so and gives no size.

    Small sizes. The normal approximation is optimistic at few problems: the verdict's
    sign-flip test on lattice-valued pass@1 is more conservative than a normal (or t) test.
    When the normal size is at most :data:`~._simulated_power.SMALL_T` (100) problems, the plan
    simulates the verdict itself (:func:`rolleval.compare.paired_compare` with
    ``n_resamples``) on ``n_sims`` pairs of runs drawn from the pilot
    (:func:`._simulated_power.truth_model`: shrunk pilot rates, the candidate shifted to the drop)
    and grows the size until the simulated power reaches ``power``
    (:func:`._simulated_power.small_sample_problems`); ``power_planned`` says which method gave
    the figure, with its Monte Carlo SE.

    With one pilot run the candidate is assumed to shift every problem equally
    (``omega2 = 0``) and to have the pilot's within-problem variance: the sizes are lower
    bounds. With a candidate run, ``omega2`` is estimated from the pair. When a problem has
    one rollout on a side (``n = 1``), the parts cannot be told apart, but their sum at the
    current rollouts can: the sample variance (``ddof=1``) of the per-problem differences
    ``d_i = c_baseline/n_baseline - c_candidate/n_candidate`` is unbiased for ``V``
    (problems drawn independently, rollouts independent given the problem), so problems
    are planned at the current rollouts per problem from it, and rollouts per problem are
    not planned (``required_rollouts_at_current_problems`` None, ``rollouts_reason``).

    Parameters
    ----------
    pilot : path
        Run directory or baseline file (the baseline side).
    candidate : path, optional
        A candidate run, to estimate the paired variance.
    options : PlanOptions, optional
        The settings below (``effect`` to ``n_resamples``, not ``tasks``) as one object,
        instead of the keywords: not both.
    effect : float, default 0.04
        The true drop ``delta`` to catch, in pass@1 units (> 0).
    threshold : float, default 0.02
        ``threshold`` of the comparison that will be run (``rolleval compare --threshold``).
    alpha, power : float
        Two-sided level of the comparison, and the power wanted for the verdict.
    tasks : list of str, optional
        Tasks to plan (default: every task of the pilot).
    sequential : bool, default False
        Also simulate a sequential run against the pilot as BASE (``rolleval run
        --until-decided``): mean and 90th-percentile problems to a verdict at the true drop,
        the share of each verdict (:func:`rolleval.compare._sequential.simulate_sequential`;
        ``n_sims`` runs, seeded by ``rng``; budget ``max_problems``, default the pilot's
        problems; a look every ``round_problems``; each task at ``alpha`` / tasks).

    Returns
    -------
    PlanResult
        The arguments and, per task, a :class:`TaskPlan`: the components (``omega2``,
        ``sigma2_baseline``, ``n_rollouts_baseline``, ``sigma2_candidate``, ``n_rollouts_candidate``),
        ``required_problems``, ``required_rollouts_at_current_problems``, ``mde_current``
        (significance at ``power``), ``regression_power_current``, ``equivalence_problems``
        (the problems at which the minimum detectable effect reaches the threshold, which
        the verdict ``equivalent`` needs) and ``status``; ``missing_tasks``: pilot tasks the
        candidate lacks (not planned).

    Raises
    ------
    rolleval.errors.UsageError
        On out-of-range arguments, or a task missing from the pilot or the candidate.
    """
    keywords = PlanOptions(
        effect=effect,
        threshold=threshold,
        alpha=alpha,
        power=power,
        sequential=sequential,
        max_problems=max_problems,
        round_problems=round_problems,
        n_sims=n_sims,
        rng=rng,
        n_resamples=n_resamples,
        runs_per_side=runs_per_side,
    )
    options = one_of(options, keywords, PlanOptions(), "plan_runs")
    _check(options)
    from ._runs import _noise_by_task

    noise = _noise_by_task(run_noise)
    by_pilot = load_frames(pilot)
    by_candidate = load_frames(candidate) if candidate is not None else None
    note = _below_note(options)
    missing: list[str] = []
    if by_candidate is not None and not tasks:
        # a pilot task the candidate lacks is named, not planned (there is no pair)
        missing = [t for t in by_pilot if t not in by_candidate]
    names = resolve_tasks(
        by_pilot, by_candidate, tasks, sources=(pilot, candidate), sides=("pilot", "candidate")
    )
    plans = {
        name: _task_plan(
            by_pilot[name],
            by_candidate[name] if by_candidate is not None else None,
            options,
            len(names),
            note,
            _design(name, noise, options.runs_per_side),
        )
        for name in names
    }
    return PlanResult(
        effect=options.effect,
        threshold=options.threshold,
        alpha=options.alpha,
        power=options.power,
        assumption=_ASSUMPTION,
        tasks=plans,
        note=note,
        missing_tasks=missing,
    )


_ASSUMPTION = (
    "normal approximation of the paired effect; the regression verdict needs a "
    "significant drop of at least the threshold"
)


def _below_note(options: PlanOptions) -> str | None:
    """The plan's note when the drop is not above the threshold (no size makes the
    regression verdict likely); None otherwise."""
    if options.effect > options.threshold:
        return None
    return (
        f"a true drop of {options.effect:g} is not above the threshold {options.threshold:g}: "
        "compare flags such a drop as a regression at most about half the time (a drop of "
        "exactly the threshold: half the time), whatever the number of problems; plan for a "
        "larger effect or compare with a smaller --threshold"
    )


def _design(
    task: str, noise: Mapping[str, float] | None, runs_per_side: int
) -> tuple[RunLevelDesign | None, str | None]:
    """The task's run-level design (None: the problem-level plan alone) and a note when the
    run-noise file lacks the task."""
    if noise is None and runs_per_side == 1:
        return None, None
    v = None if noise is None else noise.get(task)
    note = None
    if noise is not None and v is None:
        note = "the run-noise file has no run-level variance for this task: v = 0 assumed"
    if v is None and runs_per_side == 1:
        return None, note
    return RunLevelDesign(v or 0.0, runs_per_side), note


def _task_plan(
    pilot_frame: ProblemFrame,
    cand_frame: ProblemFrame | None,
    options: PlanOptions,
    n_tasks: int,
    note: str | None,
    design: tuple[RunLevelDesign | None, str | None] = (None, None),
) -> TaskPlan:
    """The plan of one task: its variance components, then the sizes (and the simulated
    sequential run)."""
    T, components, assumption, ok, al = _components(pilot_frame, cand_frame)
    if not ok or T < 2:
        reason = (
            components.get("reason") or "need at least 2 problems with 2 or more judged rollouts"
        )
        return TaskPlan(T, components, assumption, "unavailable", reason=reason)
    kw, _ = _planner_kwargs(components)
    # one rollout per problem on a side: the total variance alone, the normal size, and no
    # rollouts per problem (the between- and within-problem parts cannot be told apart)
    total_only = components["status"] == "total_only"
    frames = (
        None
        if total_only
        else (pilot_frame if cand_frame is None else (pilot_frame, cand_frame, al))
    )
    if design[0] is not None:
        figures = _run_level_figures(T, kw, design, options, note, rollouts=frames is not None)
    else:
        figures = {**_current(T, kw, options), **_sizes(T, kw, frames, options, note)}
        if design[1] is not None:
            figures["run_level"] = {"note": design[1]}
    return TaskPlan(
        T,
        components,
        assumption,
        "ok",
        **figures,
        sequential=_sequential(pilot_frame, options, n_tasks) if options.sequential else None,
        rollouts_reason=components["reason"] if total_only else None,
    )


def _run_level_figures(
    T: int,
    kw: dict[str, float],
    design: tuple[RunLevelDesign | None, str | None],
    options: PlanOptions,
    note: str | None,
    *,
    rollouts: bool,
) -> dict[str, Any]:
    """The figures with a run-level variance (:func:`._runplan.run_level_sizes`); no size
    for a drop not above the threshold (``note``)."""
    assert design[0] is not None
    figures = run_level_sizes(T, kw, design[0], options, rollouts)
    if design[1] is not None:
        figures["run_level"]["note"] = design[1]
    if note is not None:
        figures.update(
            required_problems=None,
            required_problems_normal=None,
            power_planned=None,
            required_rollouts_at_current_problems=None,
            reason=note,
        )
    return figures


def _variance(kw: dict[str, float]) -> float:
    """``omega2 + sigma2_baseline/n_rollouts_baseline + sigma2_candidate/n_rollouts_candidate``: ``T`` times
    the variance of the paired effect."""
    return (
        kw["omega2"]
        + kw["sigma2_baseline"] / kw["n_rollouts_baseline"]
        + kw["sigma2_candidate"] / kw["n_rollouts_candidate"]
    )


def _current(T: int, kw: dict[str, float], options: PlanOptions) -> dict[str, Any]:
    """What the current design gives: its MDE, its power for the regression verdict, and the
    problems significance alone and equivalence need."""
    effect, threshold, alpha, power = (
        options.effect,
        options.threshold,
        options.alpha,
        options.power,
    )
    se_now = math.sqrt(_variance(kw) / T)
    return {
        "mde_current": minimum_detectable_effect(T, alpha=alpha, power=power, **kw),
        "regression_power_current": (
            regression_power(effect, se=se_now, threshold=threshold, alpha=alpha)
            if se_now > 0
            else None
        ),
        "required_problems_significance": required_problems(effect, alpha=alpha, power=power, **kw),
        # "equivalent" needs, besides an interval inside the band, a minimum detectable
        # effect of at most the threshold: the problems at which MDE = threshold
        "equivalence_problems": required_problems(threshold, alpha=alpha, power=power, **kw),
    }


def _sizes(
    T: int, kw: dict[str, float], frames: Any, options: PlanOptions, note: str | None
) -> dict[str, Any]:
    """The problems (normal, then simulated at small sizes) and the rollouts per problem for
    the regression verdict; none, with ``note`` as the reason, for a drop not above the
    threshold. ``frames`` None (one rollout per problem): the normal size, no rollouts."""
    if note is not None:
        return {
            "required_problems": None,
            "required_problems_normal": None,
            "power_planned": None,
            "required_rollouts_at_current_problems": None,
            "reason": note,
        }
    effect, threshold, alpha, power = (
        options.effect,
        options.threshold,
        options.alpha,
        options.power,
    )
    normal = required_problems(effect, alpha=alpha, power=power, threshold=threshold, **kw)
    problems, power_planned = _planned(normal, _variance(kw), frames, options)
    return {
        "required_problems_normal": normal,
        "required_problems": problems,
        "power_planned": power_planned,
        "required_rollouts_at_current_problems": None
        if frames is None
        else required_rollouts(
            effect,
            T,
            omega2=kw["omega2"],
            sigma2_baseline=kw["sigma2_baseline"],
            sigma2_candidate=kw["sigma2_candidate"],
            alpha=alpha,
            power=power,
            threshold=threshold,
        ),
    }


def _sequential(pilot_frame: ProblemFrame, options: PlanOptions, n_tasks: int) -> dict[str, Any]:
    """The simulated sequential run against the pilot (each task at ``alpha`` / tasks)."""
    from ._sequential import simulate_sequential, task_alpha

    return simulate_sequential(
        pilot_frame.c,
        pilot_frame.n,
        effect=options.effect,
        threshold=options.threshold,
        alpha=task_alpha(options.alpha, n_tasks),
        budget=options.max_problems,
        round_problems=options.round_problems,
        n_sims=options.n_sims,
        rng=options.rng,
    )
