"""The statistical core of ``rolleval compare``: one metric, baseline vs candidate, paired."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import numpy as np

from ..errors import UsageError
from ..stats import (
    cluster_bootstrap_ci,
    cluster_sign_flip_test,
    clustered_se,
    grouped_bootstrap_ci,
    min_attainable_pvalue,
    minimum_detectable_effect,
    paired_se,
    paired_variance_components,
    required_problems,
    required_rollouts,
    sign_flip_test,
)
from ..stats._cluster import cluster_index
from ..stats._runlevel import run_level_adjustment
from ..stats._validate import (
    as_counts,
    check_n_resamples,
    check_open_unit,
    check_rng,
    describe,
    is_int,
    is_real,
)
from ._rule import (
    ComparisonVerdict,
    _at_most,
    _decide,
    _excludes_zero,
    _too_few,
    verdict_exit_code,
    verdict_label,
)

__all__ = ["Comparison", "PairedInput", "paired_compare"]

# |value - c/n| above this (absolute) means the counts do not describe the values.
_COUNT_ATOL = 1e-9
_STD_NORMAL = NormalDist()
# Below this many problems whose paired difference is not 0, the bootstrap distribution of
# the mean sits on a handful of lattice points and its percentiles cannot be trusted to bound
# the difference (the usual "n p >= 10" rule for normal approximations of a binomial count);
# an exact binomial bound on the share of problems that moved is used as well.
_MIN_MOVERS = 10


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
    value_range : (float, float) or None, default None
        The values the metric can take, e.g. ``(0.0, 1.0)`` for a rate. With it a
        near-degenerate sample (fewer than 10 problems moved) gets an exact bound on the
        difference (share of problems that moved times ``high - low``); without it such a
        sample can never support equivalence.
    clusters : sequence or None, default None
        One cluster label per problem (e.g. the MMLU subject), ``None`` entries being
        singletons. When the problems fall into fewer clusters than problems, the
        interval resamples clusters and the test flips signs per cluster.
    run_variance : float, default 0.0
        Variance that run-level shocks add to the effect (``mean(d)``), beyond what the
        problems of one run show: ``v_baseline / k_baseline + v_candidate / k_candidate``
        for run-level variances ``v`` of one run's mean and ``k`` replicate runs per side
        (:func:`rolleval.stats.run_noise` measures ``v`` from A/A replicates). 0 = the
        problems of a run are independent (the assumption of the problem-level test).
    run_variance_se : float, default 0.0
        Standard error of ``run_variance`` as an estimate (from few replicate runs); the
        widened interval and p-value then refer to Student t with Satterthwaite degrees of
        freedom (see :func:`paired_compare`). 0 = ``run_variance`` is treated as known.
    """

    baseline: np.ndarray
    candidate: np.ndarray
    direction: int = +1
    c_baseline: np.ndarray | None = None
    n_baseline: np.ndarray | None = None
    c_candidate: np.ndarray | None = None
    n_candidate: np.ndarray | None = None
    value_range: tuple[float, float] | None = None
    clusters: Sequence[Any] | None = None
    run_variance: float = 0.0
    run_variance_se: float = 0.0


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
    value_span: float  # high - low of value_range; inf when unknown
    clusters: np.ndarray | None  # cluster position of each kept problem, or None
    n_clusters: int | None
    run_variance: float  # added to Var(effect) by run-level shocks (0 = none)
    run_variance_se: float  # its standard error as an estimate (0 = known)


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


def _input_counts(inp: PairedInput, baseline: np.ndarray, candidate: np.ndarray) -> _Counts | None:
    """The four count arrays of ``inp``, checked against the values (all or none given)."""
    given = [
        getattr(inp, f) is not None
        for f in ("c_baseline", "n_baseline", "c_candidate", "n_candidate")
    ]
    if not any(given):
        return None
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
    return counts


def _value_span(vr: object) -> float:
    """``high - low`` of ``inp.value_range`` (``inf`` when it is None)."""
    if vr is None:
        return math.inf
    if (
        not isinstance(vr, (tuple, list))
        or len(vr) != 2
        or not all(is_real(v) and math.isfinite(v) for v in vr)
        or not vr[0] < vr[1]
    ):
        raise UsageError(
            f"`inp.value_range` must be None or (low, high) with low < high; got {vr!r}"
        )
    return float(vr[1]) - float(vr[0])


def _run_variance_terms(inp: PairedInput) -> tuple[float, float]:
    """``(run_variance, run_variance_se)`` of ``inp``, each a finite number >= 0."""
    rv = inp.run_variance
    if not is_real(rv) or not math.isfinite(rv) or rv < 0:
        raise UsageError(f"`inp.run_variance` must be a finite number >= 0; got {describe(rv)}")
    rv_se = inp.run_variance_se
    if not is_real(rv_se) or not math.isfinite(rv_se) or rv_se < 0:
        raise UsageError(
            f"`inp.run_variance_se` must be a finite number >= 0; got {describe(rv_se)}"
        )
    return float(rv), float(rv_se)


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
    counts = _input_counts(inp, baseline, candidate)
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
    value_span = _value_span(inp.value_range)
    rv, rv_se = _run_variance_terms(inp)
    keep = np.isfinite(baseline) & np.isfinite(candidate)
    if counts is not None:
        counts = _Counts(*(a[keep] for a in counts))
    clusters: np.ndarray | None = None
    n_clusters: int | None = None
    if inp.clusters is not None:
        index, _ = cluster_index(inp.clusters, baseline.size, "inp.clusters")
        kept = index[keep]
        _, kept = np.unique(kept, return_inverse=True)
        n_clusters = int(kept.max()) + 1 if kept.size else 0
        if n_clusters < kept.size:  # some cluster holds 2 or more problems
            clusters = kept.reshape(-1)
        else:
            n_clusters = None
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
        value_span=value_span,
        clusters=clusters,
        n_clusters=n_clusters,
        run_variance=float(rv),
        run_variance_se=float(rv_se),
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


def _beta_ppf(level: float, a: float, b: float) -> float:
    """The Beta(a, b) quantile at ``level``: scipy imported here, where a near-degenerate
    sample needs it, so that importing the compare path (every CLI start) stays fast."""
    from scipy.stats import beta

    return float(beta.ppf(level, a, b))


def _share_upper(moved: int, total: int, level: float) -> float:
    """Exact (Clopper-Pearson) one-sided upper bound at ``level`` on a binomial share."""
    if moved >= total:
        return 1.0
    return _beta_ppf(level, moved + 1, total - moved)


class _Bound(NamedTuple):
    low: float
    high: float
    needed_problems: int | None  # T at which the bound fits in the band, same share moved


def _exact_bound(d: np.ndarray, args: _CompareArgs) -> _Bound | None:
    """Exact bound on ``mean(d)`` for a near-degenerate sample; None when not needed.

    Near-degenerate: fewer than ``_MIN_MOVERS`` problems have ``d != 0``, or all ``d`` are
    equal. With ``m-`` problems moving down and ``m+`` up among ``T``, each by at most
    ``D = high - low`` of ``value_range``, and the one-sided Clopper-Pearson bounds
    ``u(m, T)`` at ``1 - alpha_ci / 2``: ``mean(d) >= -u(m-, T) D`` and ``<= u(m+, T) D``.
    """
    t = d.size
    moved_down = int(np.count_nonzero(d < 0))
    moved_up = int(np.count_nonzero(d > 0))
    all_equal = bool(np.all(d == d[0]))
    if moved_down + moved_up >= _MIN_MOVERS and not all_equal:
        return None
    span = args.value_span
    moved = moved_down + moved_up
    if (all_equal and d[0] != 0.0) or not math.isfinite(span):
        # no finite bound; with the same share of movers, ceil(10 T / m) problems would
        # hold enough movers for the bootstrap
        needed: int | None = (
            None if moved == 0 or moved == t else math.ceil(_MIN_MOVERS * t / moved)
        )
        return _Bound(-math.inf, math.inf, needed)
    level = 1.0 - (1.0 - args.confidence_level) / 2.0
    low = -_share_upper(moved_down, t, level) * span
    high = _share_upper(moved_up, t, level) * span
    tau = args.threshold
    # With the same share of problems moved, the sample stops being near-degenerate at
    # ceil(10 T / m) problems (the bootstrap takes over), or the bound fits in the band.
    needed = math.ceil(_MIN_MOVERS * t / moved) if moved else None
    if 0.0 < tau < span:
        share = max(moved_down, moved_up) / t

        def fits(n: int) -> bool:
            # the Clopper-Pearson bound with the mover count share * n taken as a real
            # number, so that it decreases smoothly with n (a floor would make it jump)
            m = share * n
            return _beta_ppf(level, m + 1.0, n - m) * span < tau

        if fits(t):
            return _Bound(low, high, t)  # the bound already fits: it asks for no more problems
        lo_t, hi_t = t, 2 * t
        cap = needed if needed is not None else 10**8
        while not fits(hi_t) and hi_t < cap:
            lo_t, hi_t = hi_t, 2 * hi_t
        if fits(hi_t):
            while hi_t - lo_t > 1:
                mid = (lo_t + hi_t) // 2
                lo_t, hi_t = (lo_t, mid) if fits(mid) else (mid, hi_t)
            needed = hi_t if needed is None else min(needed, hi_t)
    return _Bound(low, high, needed)


class _Power(NamedTuple):
    mde: float | None
    needed_problems: int | None
    needed_rollouts: int | None
    note: str
    path: str


def _power(
    args: _CompareArgs,
    d: np.ndarray,
    se: float | None,
    verdict: str,
    bound: _Bound | None,
) -> _Power:
    t, tau, alpha, power = d.size, args.threshold, args.alpha, args.power
    notes: list[str] = []
    kw: dict[str, float] | None = None
    clustered = args.clusters is not None
    if args.counts is not None and t >= 2 and not clustered:
        c = args.counts
        pvc = paired_variance_components(c.c_baseline, c.n_baseline, c.c_candidate, c.n_candidate)
        if pvc.status == "ok":
            kw = pvc.power_kwargs()
        else:
            notes.append(f"variance components unavailable ({pvc.reason}); MDE from the paired SE")
    z = _STD_NORMAL.inv_cdf(1.0 - alpha / 2.0) + _STD_NORMAL.inv_cdf(power)
    if kw is not None:
        mde = minimum_detectable_effect(t, **kw, alpha=alpha, power=power)
        path = "binomial variance components (Miller 2024)"
        notes.append(
            f"MDE = z * sqrt((omega2 + sigma2_baseline/k_baseline + "
            f"sigma2_candidate/k_candidate) / T) with omega2 = {kw['omega2']:.4g}, "
            f"sigma2_baseline = {kw['sigma2_baseline']:.4g} (k = {kw['k_baseline']:g}), "
            f"sigma2_candidate = {kw['sigma2_candidate']:.4g} (k = {kw['k_candidate']:g})"
        )
    elif se is not None:
        mde = z * se
        path = "clustered SE (CR1)" if clustered else "paired SE"
        notes.append(f"MDE = (z_{{alpha/2}} + z_beta) * {path}")
    else:
        return _Power(None, None, None, "MDE not estimable with fewer than 2 problems", "none")
    if mde == 0.0:
        notes.append("every paired difference is equal: the observed variance is 0")
    v = args.run_variance
    if v > 0:
        mde = math.sqrt(mde * mde + z * z * v)
        notes.append(
            f"the MDE includes the run-level variance of the effect: sqrt(MDE_problems^2 + "
            f"z^2 * {v:.4g})"
        )

    if verdict not in ("inconclusive", "insufficient_evidence"):
        return _Power(mde, None, None, "; ".join(notes), path)
    if tau == 0.0:
        notes.append("threshold 0: no finite sample has power against a drop of size 0")
        return _Power(mde, None, None, "; ".join(notes), path)
    tau_plan = tau
    if v > 0:
        room = tau * tau - z * z * v
        if room <= 0:
            notes.append(
                "the run-level variance alone keeps the MDE above the threshold: no number of "
                "problems or rollouts per run reaches it with these runs per side; compare "
                "(more) replicate runs per side or reduce the endpoint's run-level noise"
            )
            return _Power(mde, None, None, "; ".join(notes), path)
        tau_plan = math.sqrt(room)

    if kw is None:
        var_d = 0.0 if se is None else se * se * t
        kw_problems = {
            "omega2": var_d,
            "sigma2_baseline": 0.0,
            "k_baseline": 1.0,
            "sigma2_candidate": 0.0,
            "k_candidate": 1.0,
        }
    else:
        kw_problems = kw
    needed_problems = required_problems(tau_plan, **kw_problems, alpha=alpha, power=power)
    if bound is not None:
        if bound.needed_problems is None:
            notes.append(
                "near-degenerate sample: its exact bound cannot be planned from it (no "
                "problem moved, or every problem moved by the same amount)"
            )
        else:
            needed_problems = max(needed_problems, bound.needed_problems)
    t_min = _min_problems(args.n_resamples, alpha)
    if t_min is None:
        notes.append(
            f"n_resamples={args.n_resamples} cannot give p <= alpha at any T; raise n_resamples"
        )
        needed_problems_: int | None = None
    elif needed_problems is None:
        needed_problems_ = None
    else:
        needed_problems_ = max(needed_problems, t_min)
        unit = "clusters' worth of problems" if clustered else "problems"
        notes.append(
            f"needed_problems = {needed_problems_}: {unit} (at the current rollouts) for "
            f"MDE = threshold = {tau:g}, i.e. power {power:g} against a drop of the threshold"
            + (", and an exact bound inside the band" if bound is not None else "")
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
    elif bound is not None:
        notes.append("needed_rollouts: a near-degenerate sample needs more problems")
    else:
        needed_rollouts = required_rollouts(
            tau_plan,
            t,
            omega2=kw["omega2"],
            sigma2_baseline=kw["sigma2_baseline"],
            sigma2_candidate=kw["sigma2_candidate"],
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
    verdict: str,
    significant: bool,
    excludes_zero: bool,
    effect: float,
    lo: float,
    hi: float,
    p: float,
    tau: float,
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
        return (
            f"candidate worse by {-effect:.4g} ({ci}, p = {p:.3g}): at least the threshold {tau:g}"
        )
    if verdict == "improvement":
        return (
            f"candidate better by {effect:.4g} ({ci}, p = {p:.3g}): at least the threshold {tau:g}"
        )
    if verdict == "significant_below_threshold":
        return f"significant change {effect:+.4g} ({ci}, p = {p:.3g}) smaller than the threshold {tau:g}"
    if verdict == "equivalent_within_threshold":
        why = disagree if excludes_zero else f"p = {p:.3g}"
        return f"no significant change ({why}); {ci} lies inside (-{tau:g}, +{tau:g})"
    if verdict == "insufficient_evidence":
        return (
            f"{ci} lies inside (-{tau:g}, +{tau:g}) but {why_unbounded}: equivalence is not shown"
        )
    if significant:
        why = (
            f"{ci} reaches a drop of the threshold"
            if why_unbounded is None
            else f"{why_unbounded}, so a drop of the threshold is not excluded"
        )
        return (
            f"significant drop {effect:+.4g} (p = {p:.3g}) smaller than the threshold {tau:g}, "
            f"but {why}"
        )
    why = disagree if excludes_zero else f"{ci} contains 0"
    return (
        f"no significant change ({why}) and {ci} reaches beyond +-{tau:g}: "
        "neither a regression nor equivalence is shown"
    )


def _satterthwaite(se: float, args: _CompareArgs, n_units: int) -> float:
    """Degrees of freedom of ``se_total^2 = se^2 + run_variance`` (Satterthwaite 1946):
    ``se_total^4 / (se^4 / (units - 1) + run_variance_se^2 / 2)``; inf when the run-level
    variance is known (``run_variance_se = 0``)."""
    total2 = se * se + args.run_variance
    if args.run_variance_se == 0 or total2 == 0:
        return math.inf
    problem_part = se**4 / (n_units - 1) if n_units >= 2 else 0.0
    return total2 * total2 / (problem_part + args.run_variance_se**2 / 2.0)


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
    8. ``mde_ok`` := the MDE (step 10) at this ``T`` is at most ``tau``.
    9. Verdict, with ``tau = threshold`` (in the metric's units), ``[lo, hi]`` the
       interval widened by the exact bound of step 7 where there is one:

       ============================================================  ============================  ====
       evidence                                                      verdict                       exit
       ============================================================  ============================  ====
       ``T < 2``, or ``min_attainable_pvalue(T or C) > alpha``       insufficient_evidence         3
       significant, ``effect <= -tau``                               regression                    1
       significant, ``effect >= +tau``                               improvement                   0
       significant, ``lo <= -tau < effect``                          inconclusive                  3
       significant, otherwise                                        significant_below_threshold   0
       not significant, interval inside ``(-tau, tau)``, and so is   equivalent_within_threshold   0
       ``[lo, hi]``, and ``mde_ok``
       not significant, interval inside ``(-tau, tau)``, otherwise   insufficient_evidence         3
       not significant, otherwise                                    inconclusive                  3
       ============================================================  ============================  ====

       Non-significance is never called equivalence unless the whole interval lies
       inside the open band ``(-tau, +tau)``, the sample can bound the difference, and
       the design could have detected a change of ``tau``; with ``tau = 0`` no result is
       equivalent. Comparisons with ``tau`` and with 0 count values within a relative
       ``1e-9`` as equal, so a mean that is exactly ``-tau`` in exact arithmetic is a
       regression despite float noise.
    10. Power [1]_: minimum detectable effect at ``power``, two-sided ``alpha``, at this
       ``T``, from the observed variance. With counts (``inp.c_*``, ``inp.n_*``) it uses
       the variance components ``omega2 = Var(x_baseline - x_candidate)``, ``sigma2_*``
       and ``k_*`` (:func:`rolleval.stats.paired_variance_components`)::

           MDE = (z_{alpha/2} + z_beta) * sqrt((omega2 + sigma2_baseline/k_baseline
                                               + sigma2_candidate/k_candidate) / T)

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
       - For a near-degenerate sample ``needed_problems`` is also at least the ``T`` at
         which the exact bound, at the same share of problems moved, fits in the band.

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
    args = _validate_paired_compare(
        inp, threshold, alpha, confidence_level, n_resamples, rng, power
    )
    t, direction = args.baseline.size, args.direction
    a, b = direction * args.candidate, direction * args.baseline
    d = a - b
    clustered = args.clusters is not None
    n_units = args.n_clusters if clustered else t
    assert n_units is not None
    exact = n_units <= args.n_resamples.bit_length() - 1  # 2**units <= n_resamples
    test_kind = "exact" if exact else f"randomized, B={args.n_resamples}"
    common: dict[str, Any] = {
        "confidence_level": args.confidence_level,
        "n_problems": t,
        "n_dropped": args.n_dropped,
        "n_moved": int(np.count_nonzero(d)),
        "unit": "cluster" if clustered else "problem",
        "n_clusters": args.n_clusters,
        "threshold": args.threshold,
        "alpha": args.alpha,
        "power": args.power,
        "direction": direction,
        "n_resamples": args.n_resamples,
        "seed": args.seed,
    }
    if clustered:
        method = (
            f"paired over problems in {args.n_clusters} declared clusters, d = {direction:+d} * "
            f"(candidate - baseline); cluster bootstrap CI (percentile, B={args.n_resamples}); "
            f"two-sided sign-flip test per cluster ({test_kind})"
        )
    else:
        method = (
            f"paired over problems, d = {direction:+d} * (candidate - baseline); percentile "
            f"bootstrap CI (grouped, B={args.n_resamples}); two-sided sign-flip test ({test_kind})"
        )
    too_few = _too_few(n_units, args.n_resamples, args.alpha, "cluster" if clustered else "problem")
    if t == 0:
        return Comparison(
            verdict="insufficient_evidence",
            exit_code=verdict_exit_code("insufficient_evidence"),
            effect=None,
            ci_low=None,
            ci_high=None,
            ci_status="unavailable",
            bound_low=None,
            bound_high=None,
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
    if clustered:
        labels = args.clusters
        test = cluster_sign_flip_test(
            a, b, labels, n_resamples=args.n_resamples, alternative="two-sided", rng=args.rng
        )
        se = clustered_se(d, labels) if args.n_clusters and args.n_clusters >= 2 else None
    else:
        test = sign_flip_test(
            a, b, n_resamples=args.n_resamples, alternative="two-sided", rng=args.rng
        )
        se = paired_se(a, b)
    ci_status: Literal["ok", "degenerate", "unavailable"] = "unavailable"
    if t >= 2:
        if clustered:
            boot = cluster_bootstrap_ci(
                d,
                args.clusters,
                n_resamples=args.n_resamples,
                confidence_level=args.confidence_level,
                rng=args.rng,
            )
        else:
            boot = grouped_bootstrap_ci(
                d,
                n_resamples=args.n_resamples,
                confidence_level=args.confidence_level,
                rng=args.rng,
            )
        ci_low, ci_high = boot.low, boot.high
        if ci_low is None or ci_high is None:  # no interval (e.g. fewer than 2 clusters)
            excludes = False
        else:
            ci_status = "degenerate" if boot.status == "degenerate" else "ok"
            excludes = _excludes_zero(ci_low, ci_high, float(np.max(np.abs(d))))
    else:
        ci_low = ci_high = None
        excludes = False
    se_problems, pvalue, inflation, run_df = se, test.pvalue, 1.0, None
    run_level = args.run_variance > 0 or args.run_variance_se > 0
    if run_level and ci_low is not None and ci_high is not None and se is not None:
        df = _satterthwaite(se, args, n_units)
        adj = run_level_adjustment(
            effect,
            ci_low,
            ci_high,
            pvalue,
            se,
            run_variance=args.run_variance,
            confidence_level=args.confidence_level,
            df=df,
        )
        ci_low, ci_high, pvalue, se, inflation = adj
        run_df = None if math.isinf(df) else df
        excludes = _excludes_zero(ci_low, ci_high, float(np.max(np.abs(d))))
        method += (
            f"; interval and p-value widened by a run-level variance of the effect of "
            f"{args.run_variance:.4g} (design effect {inflation:.4g} on the SE"
            + ("" if run_df is None else f"; Student t, {run_df:.3g} Satterthwaite df")
            + ")"
        )
    significant = bool(excludes and pvalue <= args.alpha)
    bound = _exact_bound(d, args) if t >= 2 else None
    # first pass: the verdict without the MDE condition, to know whether power matters
    mde_probe = _power(args, d, se_problems, "equivalent_within_threshold", None).mde
    mde_ok = mde_probe is not None and _at_most(mde_probe, args.threshold)
    why_unbounded: str | None = None
    if too_few is not None:
        verdict: ComparisonVerdict = "insufficient_evidence"
        reason = too_few
    else:
        assert ci_low is not None and ci_high is not None
        verdict = _decide(
            effect=effect,
            ci_low=ci_low,
            ci_high=ci_high,
            significant=significant,
            threshold=args.threshold,
            bound_low=None if bound is None else bound.low,
            bound_high=None if bound is None else bound.high,
            mde_ok=mde_ok,
        )
        if bound is not None:
            if math.isinf(bound.low) or math.isinf(bound.high):
                why_unbounded = (
                    f"the sample is degenerate (every one of the {t} paired differences is "
                    f"{d[0]:+.4g}) and has no finite exact bound"
                    if bool(np.all(d == d[0]))
                    else f"only {common['n_moved']} of {t} problems moved and the metric's "
                    "range is unknown, so no exact bound exists"
                )
            elif not (bound.low > -args.threshold and bound.high < args.threshold):
                why_unbounded = (
                    f"only {common['n_moved']} of {t} problems moved: the exact bound "
                    f"[{bound.low:.4g}, {bound.high:.4g}] on the effect (share of problems "
                    "that moved, Clopper-Pearson, times the metric's range) reaches the threshold"
                )
        if verdict == "inconclusive" and not (significant and ci_low > -args.threshold):
            why_unbounded = None
        if verdict == "insufficient_evidence" and why_unbounded is None and mde_probe is not None:
            why_unbounded = (
                f"the minimum detectable effect at this size, {mde_probe:.4g} at power "
                f"{args.power:g}, exceeds the threshold"
            )
        reason = _explain(
            verdict,
            significant,
            excludes,
            effect,
            ci_low,
            ci_high,
            pvalue,
            args.threshold,
            why_unbounded,
            alpha=args.alpha,
        )
    plan = _power(args, d, se_problems, verdict, bound)
    return Comparison(
        verdict=verdict,
        exit_code=verdict_exit_code(verdict),
        effect=effect,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_status=ci_status,
        bound_low=None if bound is None else bound.low,
        bound_high=None if bound is None else bound.high,
        pvalue=pvalue,
        pvalue_exact=test.exact and not run_level,
        se=se,
        mde=plan.mde,
        needed_problems=plan.needed_problems,
        needed_rollouts=plan.needed_rollouts,
        power_note=plan.note,
        method=f"{method}; MDE from {plan.path}",
        significant=significant,
        ci_excludes_zero=excludes,
        reason=reason,
        run_variance=args.run_variance,
        inflation=inflation,
        run_level_df=run_df,
        **common,
    )
