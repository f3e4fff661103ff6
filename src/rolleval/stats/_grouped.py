"""Percentile bootstrap of a mean drawn through the distinct values (fast for suite metrics)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["GroupedBootstrapResult", "grouped_bootstrap_ci"]

# Above this many distinct values, resampling problem indices is cheaper than multinomial counts.
_MAX_DISTINCT = 256
_CHUNK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class GroupedBootstrapResult:
    """Result of :func:`grouped_bootstrap_ci` (fields as in :class:`BootstrapResult`)."""

    statistic: float | None
    low: float | None
    high: float | None
    standard_error: float | None
    confidence_level: float
    n_resamples: int
    n: int
    seed: int | None
    status: str
    reason: str | None
    method: str = "percentile"
    draw: str = "multinomial"
    bootstrap_distribution: np.ndarray | None = field(default=None, repr=False, compare=False)


def grouped_bootstrap_ci(
    scores: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    rng: int | np.random.Generator | None = None,
) -> GroupedBootstrapResult:
    r"""Percentile bootstrap interval of the mean of per-problem ``scores`` (NaN = ineligible, dropped).

    Procedure:

    1. Drop NaN entries; ``T`` problems remain. ``T = 0``: status ``unavailable``;
       ``T = 1``: status ``degenerate`` (no uncertainty estimable), interval = the value.
    2. Group the ``T`` scores into their ``V`` distinct values ``v_j`` with frequencies ``f_j``.
    3. Each resample draws counts ``(m_1..m_V) ~ Multinomial(T, f/T)`` and takes
       ``sum_j m_j v_j / T``. This is exactly the distribution of the mean of ``T`` problems
       drawn with replacement (the counts of a uniform index resample, collected by value),
       at a cost of ``O(V)`` rather than ``O(T)`` per resample. Suite metrics take few
       distinct values (pass@k over ``n`` rollouts takes at most ``n + 1``), so intervals over
       100,000 problems cost milliseconds. When ``V > 256`` the indices are drawn directly, as
       in :func:`bootstrap_ci`.
    4. Interval: ``numpy.percentile`` (linear) of the resampled means at
       ``100 * alpha / 2`` and ``100 * (1 - alpha / 2)``, ``alpha = 1 - confidence_level``.

    The resampled means are distributed as in :func:`bootstrap_ci`, but the random draws differ,
    so the two agree within Monte-Carlo error, not bit for bit.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, ch. 13.

    Examples
    --------
    >>> import numpy as np
    >>> res = grouped_bootstrap_ci(np.array([0.0, 0.5, 1.0, 1.0]), n_resamples=2000, rng=0)
    >>> res.status, 0.0 <= res.low <= res.statistic <= res.high <= 1.0
    ('ok', True)
    """
    x = np.asarray(scores, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    T = len(x)
    seed = rng if isinstance(rng, int) else None
    common = {
        "confidence_level": confidence_level,
        "n_resamples": n_resamples,
        "n": T,
        "seed": seed,
    }
    if T == 0:
        return GroupedBootstrapResult(
            None, None, None, None, status="unavailable", reason="no eligible problem", **common
        )
    mean = float(x.mean())
    if T == 1:
        return GroupedBootstrapResult(
            mean,
            mean,
            mean,
            0.0,
            status="degenerate",
            reason="no uncertainty estimable (one problem)",
            **common,
        )
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    values, counts = np.unique(x, return_counts=True)
    means = np.empty(n_resamples)
    if len(values) <= _MAX_DISTINCT:
        pvals = counts / T
        rows = max(1, _CHUNK_ELEMENTS // len(values))
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            m = gen.multinomial(T, pvals, size=stop - start)
            means[start:stop] = (m @ values) / T
        draw = "multinomial"
    else:
        rows = max(2, (_CHUNK_ELEMENTS // T) & ~1)
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            idx = gen.integers(0, T, size=(stop - start, T))
            means[start:stop] = x[idx].mean(axis=-1)
        draw = "indices"
    alpha = 1.0 - confidence_level
    low, high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return GroupedBootstrapResult(
        mean,
        float(low),
        float(high),
        float(means.std(ddof=1)) if n_resamples > 1 else 0.0,
        status="ok",
        reason=None,
        draw=draw,
        bootstrap_distribution=means,
        **common,
    )
