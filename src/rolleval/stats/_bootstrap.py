"""Percentile bootstrap of the mean over problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np

from ._chunks import rows_per_chunk
from ._validate import as_scores, check_n_resamples, check_open_unit, check_rng

__all__ = ["BootstrapResult", "bootstrap_ci"]

Status = Literal["ok", "degenerate", "unavailable"]

# Resamples are drawn in chunks of about this many bytes of int64 indices, so memory
# stays O(chunk) instead of O(n_resamples * T). Tests shrink it to force many chunks.
_CHUNK_BYTES = 2**20


@dataclass(frozen=True)
class BootstrapResult:
    """Result of :func:`bootstrap_ci`.

    Attributes
    ----------
    statistic : float or None
        The mean score over the ``n`` problems (None when ``n == 0``).
    low, high : float or None
        The percentile confidence interval (None when unavailable).
    standard_error : float or None
        Standard deviation (``ddof=1``) of the bootstrap distribution; None when
        ``n < 2`` (no uncertainty estimable).
    confidence_level : float
        As requested.
    n_resamples : int
        As requested (no resamples are drawn when ``n < 2``).
    method : str
        Always ``"percentile"``.
    n : int
        Number of problems (the unit of analysis).
    seed : int or None
        The integer seed given as ``rng``; None when ``rng`` was None or a Generator
        (the draw cannot be replayed from this record alone).
    status : {"ok", "degenerate", "unavailable"}
        ``"unavailable"``: no problems. ``"degenerate"``: one problem, or all scores
        equal, so the interval has zero width. ``"ok"`` otherwise.
    reason : str or None
        Why the status is not ``"ok"``.
    bootstrap_distribution : numpy.ndarray or None
        The ``n_resamples`` resample means, for users who want another convention.
        Left out of ``repr`` and ``==``.
    """

    statistic: float | None
    low: float | None
    high: float | None
    standard_error: float | None
    confidence_level: float
    n_resamples: int
    method: str
    n: int
    seed: int | None
    status: Status
    reason: str | None
    bootstrap_distribution: np.ndarray | None = field(default=None, repr=False, compare=False)


class _BootstrapArgs(NamedTuple):
    scores: np.ndarray
    n_resamples: int
    confidence_level: float
    generator: np.random.Generator
    seed: int | None


def _validate_bootstrap_ci(
    scores: object, n_resamples: object, confidence_level: object, rng: object
) -> _BootstrapArgs:
    scores_ = as_scores(scores, "scores")
    n_resamples_ = check_n_resamples(n_resamples)
    confidence_level_ = check_open_unit(confidence_level, "confidence_level")
    generator, seed = check_rng(rng)
    return _BootstrapArgs(scores_, n_resamples_, confidence_level_, generator, seed)


def _resample_means(
    scores: np.ndarray, n_resamples: int, generator: np.random.Generator, chunk_bytes: int
) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples, drawn in chunks of rows.

    Row r uses the indices of row r of ``generator.integers(0, T, (n_resamples, T))``,
    and each row is averaged with ``numpy.mean`` over the last axis, as
    ``scipy.stats.bootstrap`` does, so the result is identical bit for bit.
    """
    n = scores.size
    rows = min(rows_per_chunk(n, chunk_bytes), n_resamples)
    means = np.empty(n_resamples)
    resample = np.empty((rows, n))
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        indices = generator.integers(0, n, size=(stop - start, n))
        block = resample[: stop - start]
        np.take(scores, indices, out=block)
        means[start:stop] = np.mean(block, axis=-1)
    return means


def _quantile_type7(sorted_values: np.ndarray, p: float) -> float:
    """Hyndman-Fan type 7 ("linear") quantile of sorted values.

    Evaluated as ``h = p*B + (1 - p)``, ``j = floor(h)``, ``g = h - j``,
    ``(1 - g)*x[j] + g*x[j+1]`` (1-based, clipped to the data): the float operations
    of ``scipy.stats.quantile(method='linear')``, which ``numpy.percentile`` does
    not repeat bit for bit.
    """
    count = sorted_values.size
    h = p * count + (1.0 - p)
    j = np.floor(h) - 1.0
    g = 0.0 if j < 0 else h % 1.0
    lo = int(min(max(j, 0.0), count - 1))
    hi = int(min(max(j + 1.0, 0.0), count - 1))
    return float((1.0 - g) * sorted_values[lo] + g * sorted_values[hi])


def bootstrap_ci(
    scores: object,
    *,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    rng: int | np.random.Generator | None = None,
) -> BootstrapResult:
    """Percentile bootstrap confidence interval of the mean score over problems.

    The unit of analysis is the problem: ``scores`` holds one score per problem
    (for example its pass@1 ``c/n`` over ``n`` rollouts), never one per rollout.

    The procedure [1]_:

    1. Draw ``n_resamples`` resamples of the ``T`` problems with replacement:
       ``idx = rng.integers(0, T, size=(n_resamples, T))`` (drawn in chunks of
       rows, which gives the same indices as one draw).
    2. Average each resample: ``numpy.mean(scores[idx], axis=-1)``.
    3. With ``alpha = (1 - confidence_level) / 2``, take the linear (type 7 [2]_)
       quantiles at ``alpha`` and ``1 - alpha`` of those means.

    This draws exactly the indices ``scipy.stats.bootstrap(method='percentile')``
    draws from the same generator, and repeats its float operations, so the two
    agree bit for bit [3]_, while memory stays a few MB instead of
    ``16 * n_resamples * T`` bytes.

    Parameters
    ----------
    scores : array_like, 1-D
        One finite score per problem. The order matters for reproducibility
        only: pass problems in the canonical order (sorted by problem id).
    n_resamples : int, default 10000
        Number of bootstrap resamples, >= 1.
    confidence_level : float, default 0.95
        Strictly between 0 and 1.
    rng : None, int or numpy.random.Generator, default None
        An int is a seed for ``numpy.random.default_rng`` (and is recorded in
        the result); a Generator is drawn from in place; None takes fresh
        entropy from the OS. The global numpy random state is never used.

    Returns
    -------
    BootstrapResult
        ``statistic``, ``low``, ``high``, ``standard_error`` and the provenance
        (``confidence_level``, ``n_resamples``, ``n``, ``seed``).

    Raises
    ------
    rolleval.errors.UsageError
        If ``scores`` is not 1-D, holds NaN or infinity, or another argument is
        out of range.

    Notes
    -----
    Availability: ``T == 0`` gives ``status="unavailable"`` with every value
    None; ``T == 1`` gives ``status="degenerate"``, ``low == high == statistic``
    and ``standard_error=None`` (no uncertainty estimable). When ``T >= 2`` but
    all scores are equal the interval is computed and has zero width;
    ``status`` is ``"degenerate"`` then as well.

    The percentile interval is first-order accurate and tends to be too narrow
    for small ``T`` [1]_; the problem-level sign-flip test
    (:func:`sign_flip_test`) is the test of record for comparisons.

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*,
       Chapman & Hall/CRC, 1993, ch. 13.
    .. [2] R. J. Hyndman and Y. Fan, "Sample quantiles in statistical
       packages", *The American Statistician* 50(4):361-365, 1996.
    .. [3] SciPy, ``scipy.stats.bootstrap``,
       https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.bootstrap.html

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from rolleval.stats import bootstrap_ci
    >>> scores = np.array([1.0, 0.75, 0.5, 1.0, 0.0, 0.25, 1.0, 0.5])
    >>> res = bootstrap_ci(scores, n_resamples=2000, rng=7)
    >>> res.statistic, res.n, res.status
    (0.625, 8, 'ok')
    >>> ref = stats.bootstrap((scores,), np.mean, method="percentile",
    ...                       n_resamples=2000, rng=np.random.default_rng(7))
    >>> (res.low, res.high) == tuple(ref.confidence_interval)
    True
    >>> bootstrap_ci([0.5], rng=7).reason
    'no uncertainty estimable (one problem)'
    """
    args = _validate_bootstrap_ci(scores, n_resamples, confidence_level, rng)
    scores_, n = args.scores, args.scores.size
    common: dict[str, Any] = {
        "confidence_level": args.confidence_level,
        "n_resamples": args.n_resamples,
        "method": "percentile",
        "n": n,
        "seed": args.seed,
    }
    if n == 0:
        return BootstrapResult(
            statistic=None,
            low=None,
            high=None,
            standard_error=None,
            status="unavailable",
            reason="no problems to resample",
            **common,
        )
    statistic = float(np.mean(scores_))
    if n == 1:
        return BootstrapResult(
            statistic=statistic,
            low=statistic,
            high=statistic,
            standard_error=None,
            status="degenerate",
            reason="no uncertainty estimable (one problem)",
            **common,
        )
    means = _resample_means(scores_, args.n_resamples, args.generator, _CHUNK_BYTES)
    alpha = (1.0 - args.confidence_level) / 2.0
    sorted_means = np.sort(means)
    low, high = _quantile_type7(sorted_means, alpha), _quantile_type7(sorted_means, 1.0 - alpha)
    standard_error = float(np.std(means, ddof=1)) if args.n_resamples > 1 else None
    constant = bool(np.all(scores_ == scores_[0]))
    return BootstrapResult(
        statistic=statistic,
        low=low,
        high=high,
        standard_error=standard_error,
        status="degenerate" if constant else "ok",
        reason=f"all {n} scores are equal; the interval has zero width" if constant else None,
        bootstrap_distribution=means,
        **common,
    )
