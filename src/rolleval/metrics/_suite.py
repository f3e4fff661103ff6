"""Suite-level values: unweighted means over eligible problems, with counts."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import UsageError
from ._arrays import (
    _evaluate,
    _g_pass_at_k_pairs,
    _mg_pass_at_k_pairs,
    _pass_at_k_pairs,
    _pass_hat_k_pairs,
    _scatter,
    _unique_pairs,
    _validate_arrays,
)
from ._names import metric_name
from ._validate import _as_int, _as_tau, _threshold

__all__ = [
    "DEFAULT_TAUS",
    "MetricValue",
    "SuiteMetrics",
    "default_ks",
    "suite_metrics",
    "summarize",
]

#: The thresholds G-Pass@k is reported at (as in the GPassK paper, lighteval, OpenCompass).
DEFAULT_TAUS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class MetricValue:
    """A suite-level metric: the unweighted mean of per-problem values over eligible
    problems, with the counts behind it.

    Attributes
    ----------
    name : str
        Metric key, e.g. ``"pass@4"`` (see :func:`parse_metric_name`).
    value : float or None
        ``numerator / denominator``; ``None`` when unavailable (never 0).
    numerator : float or None
        Sum of the per-problem values of eligible problems; ``None`` when unavailable.
    denominator : int
        Number of eligible problems (per-problem value not ``NaN``).
    n_total : int
        Number of problems in the suite.
    status : {"ok", "unavailable"}
        ``"unavailable"`` when no problem is eligible.
    reason : str or None
        Why the metric is unavailable; ``None`` when ``status == "ok"``.
    params : dict
        Parameters of the metric, e.g. ``{"k": 4, "tau": 0.5}``.
    """

    name: str
    value: float | None
    numerator: float | None
    denominator: int
    n_total: int
    status: Literal["ok", "unavailable"]
    reason: str | None
    params: dict[str, Any] = field(default_factory=dict)


def summarize(
    name: str,
    per_problem_values: ArrayLike,
    *,
    params: Mapping[str, Any] | None = None,
    reason_if_empty: str | None = None,
) -> MetricValue:
    """Suite value of a metric from its per-problem values.

    .. math::

        \\bar s = \\frac{1}{|E|} \\sum_{i \\in E} s_i,
        \\qquad E = \\{i : s_i \\text{ is not NaN}\\}

    Parameters
    ----------
    name : str
        Metric key stored in the result.
    per_problem_values : array_like of float, shape (T,)
        One value per problem, ``NaN`` where the problem is not eligible (unavailable).
    params : mapping, optional
        Metric parameters stored in the result.
    reason_if_empty : str, optional
        Reason stored when no problem is eligible; defaults to ``"no problems"`` for an
        empty suite and ``"no eligible problem"`` otherwise.

    Returns
    -------
    MetricValue
        ``status="ok"`` with ``value = numerator / denominator`` when at least one problem
        is eligible, else ``status="unavailable"`` with ``value=None``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if the values are not a 1-D array of floats
        or contain an infinity.

    Notes
    -----
    Unit of analysis: the problem; each eligible problem weighs the same whatever its
    number of rollouts. The sum is computed with :func:`math.fsum` (correctly rounded), so
    the result does not depend on the order of the problems.

    Examples
    --------
    >>> import numpy as np
    >>> from rolleval.metrics import summarize
    >>> mv = summarize("pass@4", np.array([1.0, 0.5, np.nan]), params={"k": 4})
    >>> mv.value, mv.denominator, mv.n_total, mv.status
    (0.75, 2, 3, 'ok')
    >>> summarize("pass@4", np.array([np.nan])).value is None
    True
    """
    try:
        arr = np.asarray(per_problem_values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"per_problem_values of {name!r} must be an array of floats") from exc
    if arr.ndim != 1:
        raise UsageError(
            f"per_problem_values of {name!r} must be 1-D (one value per problem); "
            f"got shape {arr.shape}"
        )
    if np.isinf(arr).any():
        raise UsageError(
            f"per_problem_values of {name!r} must be finite or NaN (NaN = not eligible); "
            f"got an infinity"
        )
    eligible = arr[~np.isnan(arr)]
    numerator = math.fsum(eligible.tolist()) if eligible.size else None
    return _metric_value(
        name, numerator, int(eligible.size), int(arr.size), params, reason_if_empty
    )


def _metric_value(
    name: str,
    numerator: float | None,
    denominator: int,
    n_total: int,
    params: Mapping[str, Any] | None,
    reason_if_empty: str | None,
) -> MetricValue:
    params_ = dict(params or {})
    if denominator == 0 or numerator is None:
        if reason_if_empty is None:
            reason_if_empty = "no problems" if n_total == 0 else "no eligible problem"
        return MetricValue(
            name=name,
            value=None,
            numerator=None,
            denominator=0,
            n_total=n_total,
            status="unavailable",
            reason=reason_if_empty,
            params=params_,
        )
    return MetricValue(
        name=name,
        value=numerator / denominator,
        numerator=numerator,
        denominator=denominator,
        n_total=n_total,
        status="ok",
        reason=None,
        params=params_,
    )


def _summarize_pairs(
    name: str,
    pair_values: NDArray[np.float64],
    counts: NDArray[np.int64],
    n_total: int,
    params: Mapping[str, Any],
    reason: str,
) -> MetricValue:
    """:func:`summarize` from per-pair values and pair multiplicities (same result, bit for
    bit: both round the exact sum once)."""
    keep = ~np.isnan(pair_values)
    denominator = int(counts[keep].sum())
    exact = sum(
        (
            Fraction(v) * int(m)
            for v, m in zip(pair_values[keep].tolist(), counts[keep].tolist(), strict=True)
        ),
        Fraction(0),
    )
    numerator = float(exact) if denominator else None
    return _metric_value(name, numerator, denominator, n_total, params, reason)


@dataclass(frozen=True, eq=False)
class SuiteMetrics:
    """Result of :func:`suite_metrics`.

    Attributes
    ----------
    metrics : dict of str to MetricValue
        Suite values by key, in report order.
    per_problem : dict of str to numpy.ndarray
        Per-problem values by key (``NaN`` = not eligible), for resampling.

    ``result[name]`` is ``result.metrics[name]``; iterating yields the keys.
    """

    metrics: dict[str, MetricValue]
    per_problem: dict[str, NDArray[np.float64]]

    @property
    def names(self) -> tuple[str, ...]:
        """Metric keys in report order."""
        return tuple(self.metrics)

    def __getitem__(self, name: str) -> MetricValue:
        return self.metrics[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)


def default_ks(n_requested: int) -> list[int]:
    """Default draw counts for a run with ``n_requested`` rollouts per problem: the powers
    of two from 1 up to ``n_requested``.

    Parameters
    ----------
    n_requested : int
        Rollouts requested per problem, ``>= 1``.

    Returns
    -------
    list of int

    Examples
    --------
    >>> from rolleval.metrics import default_ks
    >>> default_ks(8), default_ks(6), default_ks(1)
    ([1, 2, 4, 8], [1, 2, 4], [1])
    """
    n = _as_int(n_requested, "n_requested", minimum=1, hint="(rollouts requested per problem)")
    return [1 << i for i in range(n.bit_length())]


def _validate_ks(ks: Iterable[object]) -> list[int]:
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Iterable):
        raise UsageError(f"ks must be a sequence of integers >= 1; got {ks!r}")
    out: list[int] = []
    for pos, k in enumerate(ks):
        k_ = _as_int(k, f"ks[{pos}]", minimum=1)
        if k_ not in out:
            out.append(k_)
    return out


def _validate_taus(taus: Iterable[object]) -> list[float]:
    if isinstance(taus, (str, bytes)) or not isinstance(taus, Iterable):
        raise UsageError(f"taus must be a sequence of numbers in [0, 1]; got {taus!r}")
    out: list[float] = []
    for pos, tau in enumerate(taus):
        try:
            _as_tau(tau)
        except UsageError as exc:
            raise UsageError(f"taus[{pos}] must be a number in [0, 1]; got {tau!r}") from exc
        assert isinstance(tau, numbers.Real)  # _as_tau accepts real numbers only
        if float(tau) not in out:
            out.append(float(tau))
    return out


def suite_metrics(
    n: ArrayLike,
    c: ArrayLike,
    *,
    ks: Iterable[int],
    taus: Iterable[float] = DEFAULT_TAUS,
) -> SuiteMetrics:
    """The sampled-answer metric family of a suite from per-problem counts.

    For every problem ``i`` with ``n[i]`` judged and ``c[i]`` correct rollouts this
    computes, and averages over eligible problems with :func:`summarize`:

    * ``pass@1``: ``c / n`` (avg@n); eligible iff ``n >= 1``;
    * for each ``k`` in ``ks``: ``pass@{k}``, ``pass^{k}``, ``G-Pass@{k}_{tau}`` for each
      ``tau`` in ``taus`` and ``mG-Pass@{k}``; eligible iff ``n >= k``.

    Parameters
    ----------
    n, c : array_like of int, shape (T,)
        Judged and correct rollouts per problem, ``0 <= c <= n``.
    ks : iterable of int
        Draw counts, each ``>= 1`` (see :func:`default_ks`); duplicates are dropped.
    taus : iterable of float, optional
        G-Pass thresholds in [0, 1]; default :data:`DEFAULT_TAUS`.

    Returns
    -------
    SuiteMetrics
        Suite values (:class:`MetricValue`) and per-problem arrays by key. A key with no
        eligible problem is ``unavailable`` with a reason such as
        ``"no problem has n >= k=8 judged rollouts (max n = 4)"``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) on invalid counts, ``k`` or ``tau``.

    Notes
    -----
    Unit of analysis: the problem. Each distinct ``(n, c)`` pair is evaluated once with
    exact integer arithmetic (see :func:`pass_at_k_array`); 10^5 problems take a few
    milliseconds.

    Examples
    --------
    >>> from rolleval.metrics import suite_metrics
    >>> res = suite_metrics([4, 4, 2], [4, 1, 0], ks=[1, 4], taus=[0.5])
    >>> list(res)
    ['pass@1', 'pass^1', 'G-Pass@1_0.5', 'mG-Pass@1', 'pass@4', 'pass^4', 'G-Pass@4_0.5', 'mG-Pass@4']
    >>> res["pass@1"].value, res["pass@4"].value, res["pass@4"].denominator
    (0.4166666666666667, 1.0, 2)
    """
    n_arr, c_arr = _validate_arrays(n, c)
    if n_arr.ndim != 1:
        raise UsageError(f"n and c must be 1-D (one entry per problem); got shape {n_arr.shape}")
    ks_ = _validate_ks(ks)
    taus_ = _validate_taus(taus)
    pairs = _unique_pairs(n_arr, c_arr)
    max_n = int(n_arr.max()) if n_arr.size else 0

    metrics: dict[str, MetricValue] = {}
    per_problem: dict[str, NDArray[np.float64]] = {}
    counts = np.bincount(pairs.inverse, minlength=len(pairs.n))
    n_total = int(n_arr.size)

    def add(
        name: str, pair_values: NDArray[np.float64], params: dict[str, Any], reason: str
    ) -> None:
        per_problem[name] = _scatter(pairs, pair_values)
        metrics[name] = _summarize_pairs(name, pair_values, counts, n_total, params, reason)

    def reason_for(k: int) -> str:
        if n_total == 0:
            return "no problems"
        return f"no problem has n >= k={k} judged rollouts (max n = {max_n})"

    add("pass@1", _evaluate(pairs, 1, lambda n, c: c / n), {"k": 1}, reason_for(1))

    for k in ks_:
        reason = reason_for(k)
        if k != 1:
            add(metric_name("pass_at_k", k=k), _pass_at_k_pairs(pairs, k), {"k": k}, reason)
        add(metric_name("pass_hat_k", k=k), _pass_hat_k_pairs(pairs, k), {"k": k}, reason)
        for tau in taus_:
            m = _threshold(k, _as_tau(tau))
            add(
                metric_name("g_pass_at_k", k=k, tau=tau),
                _g_pass_at_k_pairs(pairs, k, m),
                {"k": k, "tau": tau},
                reason,
            )
        add(metric_name("mg_pass_at_k", k=k), _mg_pass_at_k_pairs(pairs, k), {"k": k}, reason)
    return SuiteMetrics(metrics=metrics, per_problem=per_problem)
