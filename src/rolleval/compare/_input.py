"""The input of :func:`paired_compare` and its checks: what is compared, and on what terms.

:func:`validate` checks a :class:`PairedInput` and the :class:`CompareOptions` (a
``UsageError`` names the field and the fix), drops the problems that are not eligible on
both sides, and returns the :class:`Sample` and the :class:`Settings` the rest of the
comparison works from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from ..errors import UsageError
from ..stats._cluster import cluster_index
from ..stats._validate import (
    as_counts,
    check_n_resamples,
    check_open_unit,
    check_rng,
    describe,
    is_int,
    is_real,
)
from ._options import CompareOptions

__all__ = ["PairedInput", "Sample", "Settings", "validate"]

# |value - c/n| above this (absolute) means the counts do not describe the values.
_COUNT_ATOL = 1e-9


@dataclass(frozen=True)
class PairedInput:
    """One metric of two runs on the same problems, aligned for :func:`paired_compare`.

    Position ``i`` of every array is the same problem, in the canonical order (sorted
    problem id). NaN marks a problem that is not eligible on that side (for example a
    pass@k with fewer than k judged rollouts, or no judged rollout at all);
    :func:`paired_compare` drops every problem that is NaN on either side and counts it.

    Attributes
    ----------
    baseline, candidate : numpy.ndarray
        Per-problem value of the metric (e.g. pass@1 = c/n of the judged rollouts).
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
        problems of one run show: ``v_baseline / n_runs_baseline + v_candidate / n_runs_candidate``
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


class _Counts(NamedTuple):
    c_baseline: np.ndarray
    n_baseline: np.ndarray
    c_candidate: np.ndarray
    n_candidate: np.ndarray


class Sample(NamedTuple):
    """The problems eligible on both sides, direction-normalised, and what is known of them."""

    baseline: np.ndarray
    """``direction * value`` of the baseline, kept problems only (higher is better)."""
    candidate: np.ndarray
    """``direction * value`` of the candidate, kept problems only."""
    d: np.ndarray
    """The paired differences ``candidate - baseline`` (of the direction-normalised values):
    negative = the candidate is worse."""
    direction: int
    counts: _Counts | None
    """The binomial counts of the kept problems (None: not given)."""
    n_dropped: int
    """Problems dropped because a side was NaN (not eligible)."""
    value_span: float
    """``high - low`` of ``value_range``; ``inf`` when unknown."""
    clusters: np.ndarray | None
    """Cluster position of each kept problem (None: no cluster holds 2 or more)."""
    n_clusters: int | None
    run_variance: float
    """Added to ``Var(effect)`` by run-level shocks (0: none)."""
    run_variance_se: float
    """Its standard error as an estimate (0: known)."""

    @property
    def size(self) -> int:
        """``T``: the problems compared."""
        return int(self.baseline.size)

    @property
    def unit(self) -> Literal["problem", "cluster"]:
        """What the interval resamples and the test flips."""
        return "cluster" if self.clusters is not None else "problem"

    @property
    def n_units(self) -> int:
        """``C`` clusters, else ``T`` problems."""
        return self.n_clusters if self.n_clusters is not None else self.size


class Settings(NamedTuple):
    """:class:`CompareOptions` checked and resolved (the interval's level, the seed)."""

    threshold: float
    alpha: float
    confidence_level: float
    n_resamples: int
    rng: int | np.random.Generator
    """The int seed, or the Generator drawn from."""
    seed: int | None
    """The int seed given (None for a Generator or None)."""
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


def _arrays(inp: PairedInput) -> tuple[np.ndarray, np.ndarray, int]:
    """``(baseline, candidate, direction)`` of ``inp``: equal-length 1-D float arrays."""
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
    return baseline, candidate, int(direction)


def _settings(options: CompareOptions) -> Settings:
    threshold = options.threshold
    if not is_real(threshold) or not math.isfinite(threshold) or threshold < 0:
        raise UsageError(
            f"`threshold` must be a finite number >= 0 (in the metric's units); "
            f"got {describe(threshold)}"
        )
    alpha = check_open_unit(options.alpha, "alpha")
    if options.confidence_level is None:
        confidence_level = 1.0 - alpha
    else:
        confidence_level = check_open_unit(options.confidence_level, "confidence_level")
    n_resamples = check_n_resamples(options.n_resamples)
    power = check_open_unit(options.power, "power")
    if power <= alpha / 2:
        raise UsageError(f"`power` must be greater than `alpha`/2 = {alpha / 2:g}; got {power}")
    generator, seed = check_rng(options.rng)
    return Settings(
        threshold=float(threshold),
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=seed if seed is not None else generator,
        seed=seed,
        power=power,
    )


def _kept_clusters(
    labels: Sequence[Any] | None, keep: np.ndarray
) -> tuple[np.ndarray | None, int | None]:
    """``(cluster position of each kept problem, C)``, or ``(None, None)`` when no cluster
    of the kept problems holds 2 or more."""
    if labels is None:
        return None, None
    index, _ = cluster_index(labels, keep.size, "inp.clusters")
    kept = index[keep]
    _, kept = np.unique(kept, return_inverse=True)
    n_clusters = int(kept.max()) + 1 if kept.size else 0
    if n_clusters < kept.size:  # some cluster holds 2 or more problems
        return kept.reshape(-1), n_clusters
    return None, None


def validate(inp: object, options: CompareOptions) -> tuple[Sample, Settings]:
    """Check ``inp`` and ``options`` (``UsageError`` naming the field) and keep the problems
    eligible on both sides."""
    if not isinstance(inp, PairedInput):
        raise UsageError(f"`inp` must be a PairedInput; got {describe(inp)}")
    baseline, candidate, direction = _arrays(inp)
    counts = _input_counts(inp, baseline, candidate)
    settings = _settings(options)
    value_span = _value_span(inp.value_range)
    rv, rv_se = _run_variance_terms(inp)
    keep = np.isfinite(baseline) & np.isfinite(candidate)
    if counts is not None:
        counts = _Counts(*(a[keep] for a in counts))
    clusters, n_clusters = _kept_clusters(inp.clusters, keep)
    baseline, candidate = direction * baseline[keep], direction * candidate[keep]
    sample = Sample(
        baseline=baseline,
        candidate=candidate,
        d=candidate - baseline,
        direction=direction,
        counts=counts,
        n_dropped=int(keep.size - np.count_nonzero(keep)),
        value_span=value_span,
        clusters=clusters,
        n_clusters=n_clusters,
        run_variance=rv,
        run_variance_se=rv_se,
    )
    return sample, settings
