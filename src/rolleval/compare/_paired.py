"""The statistical core of ``rolleval compare``: one metric, baseline vs candidate, paired."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from ..errors import UsageError
from ..stats import (
    grouped_bootstrap_ci,
    min_attainable_pvalue,
    minimum_detectable_effect,
    paired_se,
    paired_variance_components,
    required_problems,
    required_rollouts,
    sign_flip_test,
)
from ..stats._validate import (
    as_counts,
    check_n_resamples,
    check_open_unit,
    check_rng,
    describe,
    is_int,
    is_real,
)
from ._verdict import Verdict, _decide, _excludes_zero, _too_few

__all__ = ["Comparison", "PairedInput", "paired_compare"]

# |value - c/n| above this (absolute) means the counts do not describe the values.
_COUNT_ATOL = 1e-9
_STD_NORMAL = NormalDist()


@dataclass(frozen=True)
class PairedInput:
    """One metric of two runs on the same problems, aligned for :func:`paired_compare`.

    Position ``i`` of every array is the same problem, in the canonical order (sorted
    problem id). NaN marks a problem that is not eligible on that side (for example a
    pass@k with fewer than k gradable rollouts, or no gradable rollout at all);
    :func:`paired_compare` drops every problem that is NaN on either side and counts it.

    Attributes
    ----------
    baseline, candidate : numpy.ndarray
        Per-problem value of the metric (e.g. pass@1 = c/n of the gradable rollouts).
    direction : {+1, -1}, default +1
        +1 when higher is better (accuracy); -1 when lower is better (unextracted rate,
        truncation rate, output tokens).
    c_baseline, n_baseline, c_candidate, n_candidate : numpy.ndarray or None
        Optional counts for binomial (pass@1-like) metrics: the value is ``c / n`` with
        ``c`` events among ``n`` rollouts. All four or none. With them the power planning
        splits the variance into between- and within-problem parts (Miller 2024) and can
        answer "how many rollouts". ``n = 0`` requires a NaN value.
    """

    baseline: np.ndarray
    candidate: np.ndarray
    direction: int = +1
    c_baseline: np.ndarray | None = None
    n_baseline: np.ndarray | None = None
    c_candidate: np.ndarray | None = None
    n_candidate: np.ndarray | None = None


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`paired_compare` (one metric).

    Attributes
    ----------
    verdict : Verdict
        See the table in :func:`paired_compare`.
    exit_code : int
        ``verdict.exit_code``: 0 ok, 1 regression, 3 inconclusive/insufficient.
    effect : float or None
        ``mean(d)``, ``d = direction * (candidate - baseline)``; negative = candidate
        worse, whatever the metric's direction. None when no problem is matched.
    ci_low, ci_high : float or None
        Percentile bootstrap interval of ``effect``; None when ``n_problems < 2``.
    confidence_level : float
        Of the interval.
    pvalue : float or None
        Two-sided sign-flip p-value; None when no problem is matched.
    pvalue_exact : bool
        True when all ``2**T`` sign vectors were enumerated (False when no test ran).
    se : float or None
        Paired standard error ``sqrt(Var(d) / T)``; None when ``n_problems < 2``.
    n_problems : int
        ``T``: problems eligible on both sides (the unit of analysis).
    n_dropped : int
        Problems dropped because a side was NaN (not eligible).
    threshold, alpha, power : float
        As requested (``threshold`` is tau, in the metric's units).
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
    """

    verdict: Verdict
    exit_code: int
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    confidence_level: float
    pvalue: float | None
    pvalue_exact: bool
    se: float | None
    n_problems: int
    n_dropped: int
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

    @property
    def label(self) -> str:
        """Human label of the verdict, e.g. ``"significant below threshold"``."""
        return self.verdict.label

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (verdict as its string value, floats unrounded)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["verdict"] = self.verdict.value
        out["label"] = self.verdict.label
        return out


# ------------------------------------------------------------------ validation


class _Counts(NamedTuple):
    c_baseline: np.ndarray
    n_baseline: np.ndarray
    c_candidate: np.ndarray
    n_candidate: np.ndarray


class _CompareArgs(NamedTuple):
    baseline: np.ndarray  # kept problems only, raw (not direction-adjusted)
    candidate: np.ndarray
    direction: int
    counts: _Counts | None  # kept problems only
    n_dropped: int
    threshold: float
    alpha: float
    confidence_level: float
    n_resamples: int
    rng: int | np.random.Generator
    seed: int | None
    power: float


def _values(x: object, name: str) -> np.ndarray:
    try:
        array = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"`{name}` must be a 1-D array of numbers (one per problem); {exc}"
        ) from exc
    if array.dtype.kind not in "biuf":
        raise UsageError(
            f"`{name}` must be a 1-D array of numbers (one per problem); got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise UsageError(f"`{name}` must be 1-D (one value per problem); got shape {array.shape}")
    array = np.array(array, dtype=np.float64)
    inf = np.flatnonzero(np.isinf(array))
    if inf.size:
        raise UsageError(
            f"`{name}` must be finite or NaN (not eligible); got {array[inf[0]]} at index {inf[0]}"
        )
    return array


def _count_array(x: object, name: str, size: int) -> np.ndarray:
    array = as_counts(x, name, minimum=0)
    if array.ndim != 1 or array.size != size:
        raise UsageError(
            f"`{name}` must be 1-D with one count per problem ({size}); got shape {array.shape}"
        )
    return array


def _check_counts(value: np.ndarray, c: np.ndarray, n: np.ndarray, side: str) -> None:
    over = np.flatnonzero(c > n)
    if over.size:
        i = int(over[0])
        raise UsageError(
            f"`inp.c_{side}` must not exceed `inp.n_{side}`; got {c[i]} > {n[i]} at index {i}"
        )
    empty = np.flatnonzero((n == 0) & np.isfinite(value))
    if empty.size:
        i = int(empty[0])
        raise UsageError(
            f"`inp.{side}` must be NaN where `inp.n_{side}` is 0 (no rollout: not eligible); "
            f"got {value[i]} at index {i}"
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = c / n
    off = np.flatnonzero(np.isfinite(value) & ~(np.abs(value - rate) <= _COUNT_ATOL))
    if off.size:
        i = int(off[0])
        raise UsageError(
            f"`inp.{side}` must equal `inp.c_{side}` / `inp.n_{side}` where given (the counts "
            f"describe the same binomial metric); got {value[i]} vs {c[i]}/{n[i]} at index {i}"
        )


def _validate_paired_compare(
    inp: object,
    threshold: object,
    alpha: object,
    confidence_level: object,
    n_resamples: object,
    rng: object,
    power: object,
) -> _CompareArgs:
    if not isinstance(inp, PairedInput):
        raise UsageError(f"`inp` must be a PairedInput; got {describe(inp)}")
    baseline = _values(inp.baseline, "inp.baseline")
    candidate = _values(inp.candidate, "inp.candidate")
    if baseline.size != candidate.size:
        raise UsageError(
            "`inp.baseline` and `inp.candidate` must have the same length (aligned problems); "
            f"got {baseline.size} and {candidate.size}"
        )
    direction = inp.direction
    if not is_int(direction) or direction not in (1, -1):
        raise UsageError(
            "`inp.direction` must be +1 (higher is better) or -1 (lower is better); "
            f"got {describe(direction)}"
        )
    given = [
        getattr(inp, f) is not None
        for f in ("c_baseline", "n_baseline", "c_candidate", "n_candidate")
    ]
    counts = None
    if any(given):
        if not all(given):
            raise UsageError(
                "`inp.c_baseline`, `inp.n_baseline`, `inp.c_candidate` and `inp.n_candidate` "
                "must be given all together or not at all"
            )
        size = baseline.size
        counts = _Counts(
            _count_array(inp.c_baseline, "inp.c_baseline", size),
            _count_array(inp.n_baseline, "inp.n_baseline", size),
            _count_array(inp.c_candidate, "inp.c_candidate", size),
            _count_array(inp.n_candidate, "inp.n_candidate", size),
        )
        _check_counts(baseline, counts.c_baseline, counts.n_baseline, "baseline")
        _check_counts(candidate, counts.c_candidate, counts.n_candidate, "candidate")
    if not is_real(threshold) or not math.isfinite(threshold) or threshold < 0:
        raise UsageError(
            f"`threshold` must be a finite number >= 0 (in the metric's units); "
            f"got {describe(threshold)}"
        )
    alpha_ = check_open_unit(alpha, "alpha")
    if confidence_level is None:
        confidence_level_ = 1.0 - alpha_
    else:
        confidence_level_ = check_open_unit(confidence_level, "confidence_level")
    n_resamples_ = check_n_resamples(n_resamples)
    power_ = check_open_unit(power, "power")
    if power_ <= alpha_ / 2:
        raise UsageError(f"`power` must be greater than `alpha`/2 = {alpha_ / 2:g}; got {power_}")
    generator, seed = check_rng(rng)
    keep = np.isfinite(baseline) & np.isfinite(candidate)
    if counts is not None:
        counts = _Counts(*(a[keep] for a in counts))
    return _CompareArgs(
        baseline=baseline[keep],
        candidate=candidate[keep],
        direction=int(direction),
        counts=counts,
        n_dropped=int(keep.size - np.count_nonzero(keep)),
        threshold=float(threshold),
        alpha=alpha_,
        confidence_level=confidence_level_,
        n_resamples=n_resamples_,
        rng=seed if seed is not None else generator,
        seed=seed,
        power=power_,
    )


# ----------------------------------------------------------------------- power


def _min_problems(n_resamples: int, alpha: float) -> int | None:
    """Smallest ``T`` at which the two-sided sign-flip test can reach ``p <= alpha``."""
    t = 2
    while t <= n_resamples.bit_length() - 1:  # 2**t <= n_resamples: exact test
        if min_attainable_pvalue(t, n_resamples=n_resamples) <= alpha:
            return t
        t += 1
    return t if min_attainable_pvalue(t, n_resamples=n_resamples) <= alpha else None


class _Power(NamedTuple):
    mde: float | None
    needed_problems: int | None
    needed_rollouts: int | None
    note: str
    path: str


def _power(args: _CompareArgs, d: np.ndarray, se: float | None, verdict: Verdict) -> _Power:
    t, tau, alpha, power = d.size, args.threshold, args.alpha, args.power
    notes: list[str] = []
    kw: dict[str, float] | None = None
    if args.counts is not None and t >= 2:
        c = args.counts
        pvc = paired_variance_components(c.c_candidate, c.n_candidate, c.c_baseline, c.n_baseline)
        if pvc.status == "ok":
            kw = pvc.power_kwargs()
        else:
            notes.append(f"variance components unavailable ({pvc.reason}); MDE from the paired SE")
    if kw is not None:
        mde = minimum_detectable_effect(t, **kw, alpha=alpha, power=power)
        path = "binomial variance components (Miller 2024)"
        notes.append(
            f"MDE = z * sqrt((omega2 + sigma2_b/k_b + sigma2_c/k_c) / T) with omega2 = "
            f"{kw['omega2']:.4g}, sigma2 = {kw['sigma2_b']:.4g} (baseline, k = {kw['k_b']:g}) "
            f"and {kw['sigma2_a']:.4g} (candidate, k = {kw['k_a']:g})"
        )
    elif se is not None:
        z = _STD_NORMAL.inv_cdf(1.0 - alpha / 2.0) + _STD_NORMAL.inv_cdf(power)
        mde = z * se
        path = "paired SE"
        notes.append("MDE = (z_{alpha/2} + z_beta) * paired SE")
    else:
        return _Power(None, None, None, "MDE not estimable with fewer than 2 problems", "none")
    if mde == 0.0:
        notes.append("every paired difference is equal: the observed variance is 0")

    if verdict not in (Verdict.INCONCLUSIVE, Verdict.INSUFFICIENT_EVIDENCE):
        return _Power(mde, None, None, "; ".join(notes), path)
    if tau == 0.0:
        notes.append("threshold 0: no finite sample has power against a drop of size 0")
        return _Power(mde, None, None, "; ".join(notes), path)

    if kw is None:
        var_d = 0.0 if se is None else se * se * t
        kw_problems = {"omega2": var_d, "sigma2_a": 0.0, "k_a": 1.0, "sigma2_b": 0.0, "k_b": 1.0}
    else:
        kw_problems = kw
    needed_problems = required_problems(tau, **kw_problems, alpha=alpha, power=power)
    t_min = _min_problems(args.n_resamples, alpha)
    if t_min is None:
        notes.append(
            f"n_resamples={args.n_resamples} cannot give p <= alpha at any T; raise n_resamples"
        )
        needed_problems_: int | None = None
    else:
        needed_problems_ = max(needed_problems, t_min)
        notes.append(
            f"needed_problems = {needed_problems_}: problems (at the current rollouts) for "
            f"MDE = threshold = {tau:g}, i.e. power {power:g} against a drop of the threshold"
        )
        if needed_problems_ <= t:
            notes.append(
                "the current T already reaches that power: the effect lies near the threshold, "
                "and more problems narrow the interval around it"
            )

    needed_rollouts: int | None = None
    if kw is None:
        notes.append("needed_rollouts needs per-problem counts (c/n) of a binomial metric")
    elif t_min is None or t < t_min:
        notes.append(f"needed_rollouts: no number of rollouts helps at T = {t} problems")
    else:
        needed_rollouts = required_rollouts(
            tau,
            t,
            omega2=kw["omega2"],
            sigma2_a=kw["sigma2_a"],
            sigma2_b=kw["sigma2_b"],
            alpha=alpha,
            power=power,
        )
        if needed_rollouts is None:
            notes.append(
                f"needed_rollouts: unreachable at T = {t}: the between-problem variance of the "
                f"difference (omega2 = {kw['omega2']:.4g}) alone keeps the MDE above the "
                "threshold; add problems"
            )
        else:
            notes.append(
                f"needed_rollouts = {needed_rollouts} per problem on both sides at T = {t} "
                "for MDE = threshold"
            )
    return _Power(mde, needed_problems_, needed_rollouts, "; ".join(notes), path)


# ----------------------------------------------------------------- the compare


def _explain(
    verdict: Verdict,
    significant: bool,
    excludes_zero: bool,
    effect: float,
    lo: float,
    hi: float,
    p: float,
    tau: float,
) -> str:
    ci = f"CI [{lo:.4g}, {hi:.4g}]"
    if verdict is Verdict.REGRESSION:
        return (
            f"candidate worse by {-effect:.4g} ({ci}, p = {p:.3g}): at least the threshold {tau:g}"
        )
    if verdict is Verdict.IMPROVEMENT:
        return (
            f"candidate better by {effect:.4g} ({ci}, p = {p:.3g}): at least the threshold {tau:g}"
        )
    if verdict is Verdict.SIGNIFICANT_BELOW_THRESHOLD:
        return f"significant change {effect:+.4g} ({ci}, p = {p:.3g}) smaller than the threshold {tau:g}"
    if verdict is Verdict.EQUIVALENT_WITHIN_THRESHOLD:
        return f"no significant change (p = {p:.3g}); {ci} lies inside (-{tau:g}, +{tau:g})"
    if significant:
        return (
            f"significant drop {effect:+.4g} (p = {p:.3g}) smaller than the threshold {tau:g}, "
            f"but {ci} reaches a drop of the threshold"
        )
    why = f"p = {p:.3g} > alpha" if excludes_zero else f"{ci} contains 0"
    return (
        f"no significant change ({why}) and {ci} reaches beyond +-{tau:g}: "
        "neither a regression nor equivalence is shown"
    )


def paired_compare(
    inp: PairedInput,
    *,
    threshold: float = 0.02,
    alpha: float = 0.05,
    confidence_level: float | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
) -> Comparison:
    r"""Decide whether a candidate got worse than its baseline on one metric, paired by problem.

    The unit of analysis is the problem: each side contributes one value per problem
    (e.g. pass@1 = c/n over its gradable rollouts), and the same problem on both sides
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
    4. p-value: two-sided paired sign-flip test [3]_
       (:func:`rolleval.stats.sign_flip_test` on ``direction * candidate`` and
       ``direction * baseline``), exact when ``2**T <= n_resamples``.
    5. ``se = sqrt(Var(d) / T)`` (:func:`rolleval.stats.paired_se`).
    6. ``significant`` := the interval excludes 0 **and** ``p <= alpha``. When the two
       disagree the result is treated as not significant.
    7. Verdict, with ``tau = threshold`` (in the metric's units):

       ============================================================  ============================  ====
       evidence                                                      verdict                       exit
       ============================================================  ============================  ====
       ``T < 2``, or ``min_attainable_pvalue(T) > alpha``            insufficient_evidence         3
       significant, ``effect <= -tau``                               regression                    1
       significant, ``effect >= +tau``                               improvement                   0
       significant, ``ci_low <= -tau < effect``                      inconclusive                  3
       significant, otherwise                                        significant_below_threshold   0
       not significant, ``-tau < ci_low`` and ``ci_high < tau``      equivalent_within_threshold   0
       not significant, otherwise                                    inconclusive                  3
       ============================================================  ============================  ====

       Non-significance is never called equivalence unless the whole interval lies
       inside the open band ``(-tau, +tau)``; with ``tau = 0`` no result is
       equivalent. Comparisons with ``tau`` and with 0 count values within a relative
       ``1e-9`` as equal, so a mean that is exactly ``-tau`` in exact arithmetic is a
       regression despite float noise.
    8. Power [1]_: minimum detectable effect at ``power``, two-sided ``alpha``, at this
       ``T``, from the observed variance. With counts (``inp.c_*``, ``inp.n_*``) it uses
       the variance components ``omega2 = Var(x_c - x_b)``, ``sigma2_*`` and ``k_*``
       (:func:`rolleval.stats.paired_variance_components`)::

           MDE = (z_{alpha/2} + z_beta) * sqrt((omega2 + sigma2_b/k_b + sigma2_c/k_c) / T)

       otherwise ``MDE = (z_{alpha/2} + z_beta) * se`` (the same quantity without the
       split). When the verdict is inconclusive or insufficient evidence:

       - ``needed_problems``: problems (at the current rollouts per problem) for which the
         MDE equals ``tau`` -- power ``power`` against a true drop of exactly ``tau``
         (:func:`rolleval.stats.required_problems`), and at least the smallest ``T`` at
         which the sign-flip test can reach ``alpha``. It is a planning figure at the
         observed variance: a true effect between ``-tau`` and 0 needs more problems to
         be resolved, and a true effect of 0 then gives an interval inside the band about
         60% of the time at the defaults.
       - ``needed_rollouts``: rollouts per problem (the same on both sides) at the
         current ``T`` for MDE = ``tau`` (:func:`rolleval.stats.required_rollouts`); only
         with counts, and None when the between-problem variance ``omega2`` alone keeps
         the MDE above ``tau`` (more rollouts cannot help: add problems).
         ``power_note`` says why a figure is None.

    Parameters
    ----------
    inp : PairedInput
        Aligned per-problem values (and optionally counts) of baseline and candidate.
    threshold : float, default 0.02
        ``tau >= 0``, the smallest change that matters, in the metric's units.
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
        as ``seed``; a Generator is drawn from by the bootstrap, then by the test; None
        takes fresh OS entropy (not reproducible).
    power : float, default 0.8
        Power of the planning figures, in (alpha/2, 1).

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
    The bootstrap interval has zero width when every ``d_i`` is equal (e.g. identical
    scores on both sides): at small ``T`` such an "equivalent" verdict rests on the
    data alone, with no spread to estimate; ``mde`` (0 without counts, positive with
    counts) and ``power_note`` show it.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to Language
       Model Evaluations", arXiv:2411.00640, 2024.
    .. [2] B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman &
       Hall/CRC, 1993, ch. 13.
    .. [3] P. Good, *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.,
       Springer, 2005, ch. 3 (paired one-sample permutation test).

    Examples
    --------
    >>> import numpy as np
    >>> from rolleval.compare import PairedInput, paired_compare
    >>> base = np.tile([0.75, 0.25, 1.0, 0.5], 50)          # 200 problems, pass@1
    >>> cand = base - np.tile([0.125, 0.0, 0.0, 0.125], 50)  # half of them drop 1/8
    >>> res = paired_compare(PairedInput(base, cand), n_resamples=2000)
    >>> res.verdict.value, res.exit_code, res.effect, res.n_problems
    ('regression', 1, -0.0625, 200)
    >>> res.ci_high < -0.02 and res.pvalue < 0.05
    True
    >>> paired_compare(PairedInput(base[:4], cand[:4])).verdict.label
    'insufficient evidence'
    """
    args = _validate_paired_compare(
        inp, threshold, alpha, confidence_level, n_resamples, rng, power
    )
    t, direction = args.baseline.size, args.direction
    a, b = direction * args.candidate, direction * args.baseline
    d = a - b
    exact = t <= args.n_resamples.bit_length() - 1  # 2**t <= n_resamples
    test_kind = "exact" if exact else f"randomized, B={args.n_resamples}"
    common = {
        "confidence_level": args.confidence_level,
        "n_problems": t,
        "n_dropped": args.n_dropped,
        "threshold": args.threshold,
        "alpha": args.alpha,
        "power": args.power,
        "direction": direction,
        "n_resamples": args.n_resamples,
        "seed": args.seed,
    }
    method = (
        f"paired over problems, d = {direction:+d} * (candidate - baseline); percentile "
        f"bootstrap CI (grouped, B={args.n_resamples}); two-sided sign-flip test ({test_kind})"
    )
    too_few = _too_few(t, args.n_resamples, args.alpha)
    if t == 0:
        return Comparison(
            verdict=Verdict.INSUFFICIENT_EVIDENCE,
            exit_code=Verdict.INSUFFICIENT_EVIDENCE.exit_code,
            effect=None,
            ci_low=None,
            ci_high=None,
            pvalue=None,
            pvalue_exact=False,
            se=None,
            mde=None,
            needed_problems=None,
            needed_rollouts=None,
            power_note="no matched problem: nothing to plan from",
            method=method,
            significant=False,
            ci_excludes_zero=False,
            reason=f"no problem eligible on both sides ({args.n_dropped} dropped)",
            **common,
        )
    effect = math.fsum(d) / t
    test = sign_flip_test(a, b, n_resamples=args.n_resamples, alternative="two-sided", rng=args.rng)
    se = paired_se(a, b)
    if t >= 2:
        boot = grouped_bootstrap_ci(
            d, n_resamples=args.n_resamples, confidence_level=args.confidence_level, rng=args.rng
        )
        ci_low, ci_high = boot.low, boot.high
        excludes = _excludes_zero(ci_low, ci_high, float(np.max(np.abs(d))))
    else:
        ci_low = ci_high = None
        excludes = False
    significant = bool(excludes and test.pvalue <= args.alpha)
    if too_few is not None:
        verdict = Verdict.INSUFFICIENT_EVIDENCE
        reason = too_few
    else:
        verdict = _decide(
            effect=effect,
            ci_low=ci_low,
            ci_high=ci_high,
            significant=significant,
            threshold=args.threshold,
        )
        reason = _explain(
            verdict, significant, excludes, effect, ci_low, ci_high, test.pvalue, args.threshold
        )
    plan = _power(args, d, se, verdict)
    return Comparison(
        verdict=verdict,
        exit_code=verdict.exit_code,
        effect=effect,
        ci_low=ci_low,
        ci_high=ci_high,
        pvalue=test.pvalue,
        pvalue_exact=test.exact,
        se=se,
        mde=plan.mde,
        needed_problems=plan.needed_problems,
        needed_rollouts=plan.needed_rollouts,
        power_note=plan.note,
        method=f"{method}; MDE from {plan.path}",
        significant=significant,
        ci_excludes_zero=excludes,
        reason=reason,
        **common,
    )
