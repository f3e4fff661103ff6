"""The statistical core of ``rolleval compare``: one metric, baseline vs candidate, paired.

:func:`paired_compare` runs its procedure in jobs, one module each: the input checked
(:mod:`._input`), the estimate and interval (:mod:`._estimate`), the exact bound of a
near-degenerate sample (:mod:`._bound`), the verdict (:func:`._rule._decide`) and its reason
(:mod:`._reasons`), the power and planning figures (:mod:`._power`); it builds the
:class:`Comparison` from their results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np

from ._bound import Bound, exact_bound
from ._estimate import Estimate, describe_method, estimate, no_estimate
from ._input import PairedInput, Sample, Settings, validate
from ._options import CompareOptions, one_of
from ._power import Plan, minimum_detectable, planning_figures
from ._reasons import _explain as _explain  # re-exported: older imports read it here
from ._reasons import reason
from ._rule import (
    ComparisonVerdict,
    _at_most,
    _decide,
    _too_few,
    verdict_exit_code,
    verdict_label,
)

__all__ = ["Comparison", "PairedInput", "paired_compare"]

#: :func:`paired_compare`'s keyword defaults (its threshold is 0.02: it knows no metric).
_DEFAULTS = CompareOptions(threshold=0.02)


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`paired_compare` (one metric).

    Attributes
    ----------
    verdict : ComparisonVerdict
        One of the words of :data:`rolleval.compare.COMPARISON_VERDICTS`; see the table
        in :func:`paired_compare`.
    exit_code : int
        Exit code of the verdict: 0 ok, 1 regression, 3 inconclusive/insufficient.
    effect : float or None
        ``mean(d)``, ``d = direction * (candidate - baseline)``; negative = candidate
        worse, whatever the metric's direction. None when no problem is matched.
    ci_low, ci_high : float or None
        Percentile bootstrap interval of ``effect`` (over clusters when ``unit`` is
        ``"cluster"``); None when ``n_problems < 2``.
    ci_status : {"ok", "degenerate", "unavailable"}
        ``"degenerate"`` when every paired difference (every cluster mean) is equal or
        there is one unit: the interval then has zero width and bounds nothing.
    confidence_level : float
        Of the interval.
    pvalue : float or None
        Two-sided sign-flip p-value; None when no problem is matched.
    pvalue_exact : bool
        True when all ``2**T`` (``2**C``) sign vectors were enumerated.
    se : float or None
        Standard error of ``effect``: ``sqrt(Var(d) / T)``, or the CR1 clustered SE when
        ``unit`` is ``"cluster"``; None when not estimable.
    n_problems : int
        ``T``: problems eligible on both sides.
    n_dropped : int
        Problems dropped because a side was NaN (not eligible).
    n_moved : int
        Problems whose paired difference is not 0.
    bound_low, bound_high : float or None
        Exact bound on the effect used for a near-degenerate sample (fewer than 10
        problems moved, or all differences equal); None when the sample is not
        near-degenerate. Infinite when no bound exists (no ``value_range``, or every
        problem moved by the same amount).
    unit : {"problem", "cluster"}
        What the interval resamples and the test flips.
    n_clusters : int or None
        ``C`` when ``unit`` is ``"cluster"``.
    threshold, alpha, power : float
        As requested (in the metric's units).
    direction : int
        +1 or -1.
    n_resamples : int
        As requested (bootstrap resamples; bound and count of the sign-flip test).
    seed : int or None
        The int seed given as ``rng`` (None for a Generator or None).
    mde : float or None
        Minimum detectable effect at ``power``, two-sided ``alpha``, at this ``T``.
    needed_problems, needed_rollouts : int or None
        Planning figures, filled when the verdict is inconclusive or insufficient
        evidence; see :func:`paired_compare`.
    power_note : str
        How ``mde`` was computed and why a planning figure is missing.
    method : str
        One-line description of the procedure.
    significant : bool
        ``ci_excludes_zero and pvalue <= alpha``.
    ci_excludes_zero : bool
        The interval lies entirely above or entirely below 0.
    reason : str
        One-line explanation of the verdict.
    run_variance : float
        The run-level variance of the effect the interval and p-value include
        (``inp.run_variance``; 0 = the problem-level test alone).
    inflation : float
        ``se / se_problems``: how much the run-level variance widened the SE (1 without).
    run_level_df : float or None
        Satterthwaite degrees of freedom of the widened SE when the run-level variance is
        an estimate (``inp.run_variance_se > 0``); None: normal reference.
    """

    verdict: ComparisonVerdict
    exit_code: int
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    ci_status: Literal["ok", "degenerate", "unavailable"]
    confidence_level: float
    pvalue: float | None
    pvalue_exact: bool
    se: float | None
    n_problems: int
    n_dropped: int
    n_moved: int
    bound_low: float | None
    bound_high: float | None
    unit: Literal["problem", "cluster"]
    n_clusters: int | None
    threshold: float
    alpha: float
    power: float
    direction: int
    n_resamples: int
    seed: int | None
    mde: float | None
    needed_problems: int | None
    needed_rollouts: int | None
    power_note: str
    method: str
    significant: bool
    ci_excludes_zero: bool
    reason: str
    run_variance: float = 0.0
    inflation: float = 1.0
    run_level_df: float | None = None

    @property
    def label(self) -> str:
        """Human label of the verdict, e.g. ``"significant below threshold"``."""
        return verdict_label(self.verdict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (floats unrounded; an infinite bound as None)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("bound_low", "bound_high"):
            if out[key] is not None and not math.isfinite(out[key]):
                out[key] = None
                out.setdefault("bound_note", "no finite bound: see reason")
        out["label"] = self.label
        return out


def paired_compare(
    inp: PairedInput,
    *,
    options: CompareOptions | None = None,
    threshold: float = 0.02,
    alpha: float = 0.05,
    confidence_level: float | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
) -> Comparison:
    r"""Decide whether a candidate got worse than its baseline on one metric, paired by problem.

    The unit of analysis is the problem: each side contributes one value per problem
    (e.g. pass@1 = c/n over its judged rollouts), and the same problem on both sides
    forms a pair.

    Procedure:

    1. Drop every problem that is NaN on either side (NaN = not eligible on that side)
       and count them (``n_dropped``); ``T`` problems remain.
    2. Direction-normalised differences ``d_i = direction * (candidate_i - baseline_i)``
       and ``effect = mean(d)``: negative means the candidate is worse, for
       higher-is-better (``direction=+1``) and lower-is-better (``-1``) metrics alike.
    3. Interval: percentile bootstrap of ``mean(d)`` over problems [2]_ at
       ``confidence_level`` (default ``1 - alpha``), drawn with
       :func:`rolleval.stats.grouped_bootstrap_ci` (multinomial counts over the few distinct
       values of ``d``: the same distribution as resampling problems, much faster).
       With declared clusters (``inp.clusters``, fewer clusters than problems) the
       clusters are resampled instead (:func:`rolleval.stats.cluster_bootstrap_ci`).
       ``ci_status`` is ``"degenerate"`` when every ``d_i`` (every cluster mean) is equal.
    4. p-value: two-sided paired sign-flip test [3]_
       (:func:`rolleval.stats.sign_flip_test` on ``direction * candidate`` and
       ``direction * baseline``), exact when ``2**T <= n_resamples``; with clusters one
       sign per cluster (:func:`rolleval.stats.cluster_sign_flip_test`).
    5. ``se = sqrt(Var(d) / T)`` (:func:`rolleval.stats.paired_se`), or the CR1
       clustered SE (:func:`rolleval.stats.clustered_se`) with clusters.
    6. ``significant`` := the interval excludes 0 **and** ``p <= alpha``. When the two
       disagree the result is treated as not significant.
    7. Exact bound of a near-degenerate sample. When fewer than 10 problems moved
       (``d_i != 0``), or all ``d_i`` are equal, the bootstrap's percentiles sit on a
       handful of lattice points and cannot bound the difference (a zero-width ``[d, d]``
       says nothing about unseen problems). The bound is then
       ``[-u(m_-) D, +u(m_+) D]`` with ``m_-``/``m_+`` the problems that moved down/up,
       ``u(m)`` the exact one-sided Clopper-Pearson upper bound [4]_ on a binomial share
       at ``1 - (1 - confidence_level)/2`` and ``D = high - low`` of ``inp.value_range``
       (no finite bound without it, nor when every ``d_i`` is the same non-zero value).
    8. ``mde_ok`` := the MDE (step 10) at this ``T`` is at most ``threshold``.
    9. Verdict, with ``threshold`` in the metric's units, ``[lo, hi]`` the
       interval widened by the exact bound of step 7 where there is one:

       =======================================================================  ===========================  ====
       evidence                                                                 verdict                      exit
       =======================================================================  ===========================  ====
       ``T < 2``, or ``min_attainable_pvalue(T or C) > alpha``                  insufficient_evidence        3
       significant, ``effect <= -threshold``                                    regression                   1
       significant, ``effect >= +threshold``                                    improvement                  0
       significant, ``lo <= -threshold < effect``                               inconclusive                 3
       significant, otherwise                                                   significant_below_threshold  0
       not significant, interval inside ``(-threshold, threshold)``, and so is  equivalent_within_threshold  0
       ``[lo, hi]``, and ``mde_ok``
       not significant, interval inside ``(-threshold, threshold)``, otherwise  insufficient_evidence        3
       not significant, otherwise                                               inconclusive                 3
       =======================================================================  ===========================  ====

       Non-significance is never called equivalence unless the whole interval lies
       inside the open band ``(-threshold, +threshold)``, the sample can bound the difference, and
       the design could have detected a change of ``threshold``; with ``threshold = 0`` no result is
       equivalent. Comparisons with ``threshold`` and with 0 count values within a relative
       ``1e-9`` as equal, so a mean that is exactly ``-threshold`` in exact arithmetic is a
       regression despite float noise.
    10. Power [1]_: minimum detectable effect at ``power``, two-sided ``alpha``, at this
       ``T``, from the observed variance. With counts (``inp.c_*``, ``inp.n_*``) it uses
       the variance components ``omega2 = Var(x_baseline - x_candidate)``, ``sigma2_*``
       and ``k_*`` (:func:`rolleval.stats.paired_variance_components`)::

           MDE = (z_{alpha/2} + z_beta) * sqrt((omega2 + sigma2_baseline/n_rollouts_baseline
                                               + sigma2_candidate/n_rollouts_candidate) / T)

       otherwise ``MDE = (z_{alpha/2} + z_beta) * se`` (the same quantity without the
       split). When the verdict is inconclusive or insufficient evidence:

       - ``needed_problems``: problems (at the current rollouts per problem) for which the
         MDE equals ``threshold`` -- power ``power`` against a true drop of exactly ``threshold``
         (:func:`rolleval.stats.required_problems`), and at least the smallest ``T`` at
         which the sign-flip test can reach ``alpha``. It is a planning figure at the
         observed variance: a true effect between ``-threshold`` and 0 needs more problems to
         be resolved, and a true effect of 0 then gives an interval inside the band about
         60% of the time at the defaults.
       - ``needed_rollouts``: rollouts per problem (the same on both sides) at the
         current ``T`` for MDE = ``threshold`` (:func:`rolleval.stats.required_rollouts`); only
         with counts, and None when the between-problem variance ``omega2`` alone keeps
         the MDE above ``threshold`` (more rollouts cannot help: add problems).
         ``power_note`` says why a figure is None.
       - For a near-degenerate sample ``needed_problems`` is also at least the ``T`` at
         which the exact bound, at the same share of problems moved, fits in the band.

    Parameters
    ----------
    inp : PairedInput
        Aligned per-problem values (and optionally counts) of baseline and candidate.
    options : CompareOptions, optional
        The settings below as one object (its ``threshold`` must be a number here), instead
        of the keywords: not both.
    threshold : float, default 0.02
        ``threshold >= 0``, the smallest change that matters, in the metric's units.
    alpha : float, default 0.05
        Two-sided significance level, in (0, 1).
    confidence_level : float or None, default None
        Of the bootstrap interval; None means ``1 - alpha``.
    n_resamples : int, default 10000
        Bootstrap resamples, and the number of random sign vectors of the test (exact
        enumeration when ``2**T <= n_resamples``).
    rng : None, int or numpy.random.Generator, default 0
        An int seed is given to both the bootstrap and the test (each starts its own
        ``numpy.random.default_rng(seed)``, so either can be replayed alone) and recorded
        as ``seed``; a Generator is drawn from by the test, then by the bootstrap; None
        takes fresh OS entropy (not reproducible).
    power : float, default 0.8
        Power of the MDE (and so of the equivalence condition ``mde_ok``) and of the
        planning figures, in (alpha/2, 1).

    Returns
    -------
    Comparison

    Raises
    ------
    rolleval.errors.UsageError
        If ``inp`` is not a PairedInput, arrays are not 1-D, differ in length or hold
        infinity, ``direction`` is not +1/-1, counts are partial, inconsistent with the
        values or ``c > n``, or ``threshold < 0``, ``alpha``, ``confidence_level``,
        ``power``, ``n_resamples`` or ``rng`` are out of range. The message names the
        parameter.

    Notes
    -----
    A zero-width bootstrap interval never shows equivalence on its own: a run compared with
    itself, or greedy runs that agree, would be called equivalent from 6 problems up by
    the interval alone. Such samples get ``insufficient_evidence`` with the number of
    problems the exact bound needs (about 183 with no problem moved at ``threshold =
    0.02`` on a 0-1 metric).

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to Language
       Model Evaluations", arXiv:2411.00640, 2024.
    .. [2] B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman &
       Hall/CRC, 1993, ch. 13.
    .. [3] P. Good, *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.,
       Springer, 2005, ch. 3 (paired one-sample permutation test).
    .. [4] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits
       illustrated in the case of the binomial", *Biometrika* 26(4):404-413, 1934.

    Examples
    --------
    >>> import numpy as np
    >>> from rolleval.compare import PairedInput, paired_compare
    >>> base = np.tile([0.75, 0.25, 1.0, 0.5], 50)          # 200 problems, pass@1
    >>> cand = base - np.tile([0.125, 0.0, 0.0, 0.125], 50)  # half of them drop 1/8
    >>> res = paired_compare(PairedInput(base, cand), n_resamples=2000)
    >>> res.verdict, res.exit_code, res.effect, res.n_problems
    ('regression', 1, -0.0625, 200)
    >>> res.ci_high < -0.02 and res.pvalue < 0.05
    True
    >>> paired_compare(PairedInput(base[:4], cand[:4])).label
    'insufficient evidence'
    """
    keywords = CompareOptions(
        threshold=threshold,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=rng,
        power=power,
    )
    sample, settings = validate(inp, one_of(options, keywords, _DEFAULTS, "paired_compare"))
    method = describe_method(sample, settings)
    if sample.size == 0:
        why = f"no problem eligible on both sides ({sample.n_dropped} dropped)"
        plan = Plan(None, None, None, "no matched problem: nothing to plan from", None)
        est = no_estimate(method)
        return _comparison(sample, settings, est, None, ("insufficient_evidence", why), plan)
    est = estimate(sample, settings, method)
    bound = exact_bound(sample.d, sample.value_span, settings) if sample.size >= 2 else None
    mde = minimum_detectable(sample, settings, est.se_problems)
    verdict = _verdict(sample, settings, est, bound, mde.value)
    plan = planning_figures(sample, settings, mde, verdict[0], bound)
    return _comparison(sample, settings, est, bound, verdict, plan)


def _verdict(
    sample: Sample, settings: Settings, est: Estimate, bound: Bound | None, mde: float | None
) -> tuple[ComparisonVerdict, str]:
    """The verdict (step 9 of :func:`paired_compare`) and its one-line reason."""
    too_few = _too_few(sample.n_units, settings.n_resamples, settings.alpha, sample.unit)
    if too_few is not None:
        return "insufficient_evidence", too_few
    assert est.effect is not None and est.ci_low is not None and est.ci_high is not None
    verdict = _decide(
        effect=est.effect,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        significant=est.significant,
        threshold=settings.threshold,
        bound_low=None if bound is None else bound.low,
        bound_high=None if bound is None else bound.high,
        mde_ok=mde is not None and _at_most(mde, settings.threshold),
    )
    return verdict, reason(verdict, est, settings, sample.d, bound, mde)


def _comparison(
    sample: Sample,
    settings: Settings,
    est: Estimate,
    bound: Bound | None,
    verdict: tuple[ComparisonVerdict, str],
    plan: Plan,
) -> Comparison:
    """The :class:`Comparison` of the jobs' results."""
    return Comparison(
        verdict=verdict[0],
        exit_code=verdict_exit_code(verdict[0]),
        effect=est.effect,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        ci_status=est.ci_status,
        confidence_level=settings.confidence_level,
        pvalue=est.pvalue,
        pvalue_exact=est.pvalue_exact,
        se=est.se,
        n_problems=sample.size,
        n_dropped=sample.n_dropped,
        n_moved=int(np.count_nonzero(sample.d)),
        bound_low=None if bound is None else bound.low,
        bound_high=None if bound is None else bound.high,
        unit=sample.unit,
        n_clusters=sample.n_clusters,
        threshold=settings.threshold,
        alpha=settings.alpha,
        power=settings.power,
        direction=sample.direction,
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        mde=plan.mde,
        needed_problems=plan.needed_problems,
        needed_rollouts=plan.needed_rollouts,
        power_note=plan.note,
        method=est.method if plan.path is None else f"{est.method}; MDE from {plan.path}",
        significant=est.significant,
        ci_excludes_zero=est.excludes,
        reason=verdict[1],
        run_variance=est.run_variance,
        inflation=est.inflation,
        run_level_df=est.run_level_df,
    )
