"""Array forms of the per-problem estimators, for a whole suite at once.

A suite has few distinct ``(n, c)`` pairs (100,000 problems with 16 rollouts each have at
most 17), so each array function finds the distinct pairs with :func:`numpy.unique`,
evaluates the exact scalar estimator once per pair and scatters the values back. Results
are bit-identical to the scalar functions; ``NaN`` marks problems where ``k > n``
(unavailable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import UsageError
from ._exact import _g_pass_at_k, _mg_pass_at_k, _pass_at_k, _pass_hat_k
from ._validate import _as_int, _as_tau, _threshold

__all__ = ["g_pass_at_k_array", "mg_pass_at_k_array", "pass_at_k_array", "pass_hat_k_array"]


def _as_int_array(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """Return ``values`` as an int64 array, refusing booleans and non-integral numbers."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        raise UsageError(f"{name} must be an array of integers; got a boolean array")
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.unsignedinteger) and arr.max() > np.iinfo(np.int64).max:
            raise UsageError(f"{name} must be an array of integers below 2**63")
        return arr.astype(np.int64, copy=False)
    if np.issubdtype(arr.dtype, np.floating):
        finite = np.isfinite(arr)
        integral = finite & (arr == np.trunc(np.where(finite, arr, 0)))
        if not integral.all():
            pos = int(np.flatnonzero(~integral)[0])
            raise UsageError(
                f"{name} must be an array of integers; got {arr.flat[pos].item()!r} at position {pos}"
            )
        if np.abs(arr).max() >= 2.0**53:
            raise UsageError(
                f"{name} must be an array of integers below 2**53 when given as floats"
            )
        return arr.astype(np.int64)
    raise UsageError(f"{name} must be an array of integers; got dtype {arr.dtype}")


class _Pairs(NamedTuple):
    """Distinct ``(n, c)`` pairs of a suite and the map back to problems."""

    n: list[int]
    c: list[int]
    inverse: NDArray[np.intp]
    shape: tuple[int, ...]


def _validate_arrays(n: ArrayLike, c: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Check that ``n`` and ``c`` are integer arrays of one shape with ``0 <= c <= n``."""
    n_arr = _as_int_array(n, "n")
    c_arr = _as_int_array(c, "c")
    if n_arr.shape != c_arr.shape:
        raise UsageError(
            f"n and c must be arrays of the same shape (one entry per problem); "
            f"got shapes {n_arr.shape} and {c_arr.shape}"
        )
    if n_arr.size:
        bad = n_arr < 0
        if bad.any():
            pos = int(np.flatnonzero(bad.ravel())[0])
            raise UsageError(
                f"n must be an array of integers >= 0 (judged rollouts per problem); "
                f"got {int(n_arr.flat[pos])} at position {pos}"
            )
        bad = (c_arr < 0) | (c_arr > n_arr)
        if bad.any():
            pos = int(np.flatnonzero(bad.ravel())[0])
            raise UsageError(
                f"c must be an array of integers with 0 <= c <= n elementwise (correct rollouts "
                f"per problem); got c={int(c_arr.flat[pos])}, n={int(n_arr.flat[pos])} "
                f"at position {pos}"
            )
    return n_arr, c_arr


def _unique_pairs(n_arr: NDArray[np.int64], c_arr: NDArray[np.int64]) -> _Pairs:
    """Distinct ``(n, c)`` pairs of validated arrays."""
    shape = n_arr.shape
    n_flat = n_arr.ravel()
    c_flat = c_arr.ravel()
    if n_flat.size == 0:
        return _Pairs([], [], np.zeros(0, dtype=np.intp), shape)
    base = int(c_flat.max()) + 1
    if int(n_flat.max()) * base + base < 2**62:
        keys, inverse = np.unique(n_flat * base + c_flat, return_inverse=True)
        u_n, u_c = np.divmod(keys, base)
    else:  # astronomically large counts: fall back to row-wise unique
        rows, inverse = np.unique(np.stack([n_flat, c_flat], axis=1), axis=0, return_inverse=True)
        u_n, u_c = rows[:, 0], rows[:, 1]
    return _Pairs(u_n.tolist(), u_c.tolist(), inverse.ravel(), shape)


def _evaluate(pairs: _Pairs, k: int, func: Callable[[int, int], float]) -> NDArray[np.float64]:
    """``func(n, c)`` once per distinct pair, ``NaN`` where ``k > n``: one value per pair."""
    return np.array(
        [func(n, c) if k <= n else np.nan for n, c in zip(pairs.n, pairs.c, strict=True)],
        dtype=np.float64,
    )


def _scatter(pairs: _Pairs, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-pair values back to one value per problem, in the input's shape."""
    return values[pairs.inverse].reshape(pairs.shape)


def _pass_at_k_pairs(pairs: _Pairs, k: int) -> NDArray[np.float64]:
    return _evaluate(pairs, k, lambda n, c: _pass_at_k(n, c, k))


def _pass_hat_k_pairs(pairs: _Pairs, k: int) -> NDArray[np.float64]:
    return _evaluate(pairs, k, lambda n, c: _pass_hat_k(n, c, k))


def _g_pass_at_k_pairs(pairs: _Pairs, k: int, m: int) -> NDArray[np.float64]:
    return _evaluate(pairs, k, lambda n, c: _g_pass_at_k(n, c, k, m))


def _mg_pass_at_k_pairs(pairs: _Pairs, k: int) -> NDArray[np.float64]:
    return _evaluate(pairs, k, lambda n, c: _mg_pass_at_k(n, c, k))


def _prepare(n: ArrayLike, c: ArrayLike, k: object) -> tuple[_Pairs, int]:
    n_arr, c_arr = _validate_arrays(n, c)
    k_ = _as_int(k, "k", minimum=1, hint="(number of draws)")
    return _unique_pairs(n_arr, c_arr), k_


def pass_at_k_array(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
    """:func:`pass_at_k` for every problem of a suite.

    Parameters
    ----------
    n, c : array_like of int
        Judged and correct rollouts per problem, same shape, ``0 <= c <= n``.
    k : int
        Number of draws, ``k >= 1``.

    Returns
    -------
    numpy.ndarray of float64
        Same shape as ``n``; ``NaN`` exactly where ``k > n`` (unavailable). Every other
        entry equals ``pass_at_k(n[i], c[i], k)`` bit for bit.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) on non-integer entries, shapes that differ,
        ``n < 0``, ``c`` outside ``[0, n]`` or ``k < 1``; the message gives the first
        offending position.

    Notes
    -----
    Each distinct ``(n, c)`` pair is evaluated once with the exact scalar code, so the cost
    is one :func:`numpy.unique` plus a handful of exact evaluations.

    Examples
    --------
    >>> from rolleval.metrics import pass_at_k_array
    >>> pass_at_k_array([5, 5, 2], [2, 0, 1], 3)
    array([0.9, 0. , nan])
    """
    pairs, k_ = _prepare(n, c, k)
    return _scatter(pairs, _pass_at_k_pairs(pairs, k_))


def pass_hat_k_array(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
    """:func:`pass_hat_k` for every problem of a suite.

    Parameters and errors as for :func:`pass_at_k_array`; ``NaN`` exactly where ``k > n``.

    Examples
    --------
    >>> from rolleval.metrics import pass_hat_k_array
    >>> pass_hat_k_array([4, 4, 1], [4, 2, 1], 2)
    array([1.        , 0.16666667,        nan])
    """
    pairs, k_ = _prepare(n, c, k)
    return _scatter(pairs, _pass_hat_k_pairs(pairs, k_))


def g_pass_at_k_array(n: ArrayLike, c: ArrayLike, k: int, tau: float) -> NDArray[np.float64]:
    """:func:`g_pass_at_k` for every problem of a suite.

    Parameters and errors as for :func:`pass_at_k_array`, plus ``tau`` in [0, 1] (the
    threshold is :func:`g_pass_threshold`); ``NaN`` exactly where ``k > n``.

    Examples
    --------
    >>> from rolleval.metrics import g_pass_at_k_array
    >>> g_pass_at_k_array([4, 4, 1], [2, 2, 1], 2, 0.5)
    array([0.83333333, 0.83333333,        nan])
    """
    pairs, k_ = _prepare(n, c, k)
    m = _threshold(k_, _as_tau(tau))
    return _scatter(pairs, _g_pass_at_k_pairs(pairs, k_, m))


def mg_pass_at_k_array(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
    """:func:`mg_pass_at_k` for every problem of a suite.

    Parameters and errors as for :func:`pass_at_k_array`; ``NaN`` exactly where ``k > n``.

    Examples
    --------
    >>> from rolleval.metrics import mg_pass_at_k_array
    >>> mg_pass_at_k_array([8, 8, 2], [8, 4, 2], 4)
    array([1.        , 0.12857143,        nan])
    """
    pairs, k_ = _prepare(n, c, k)
    return _scatter(pairs, _mg_pass_at_k_pairs(pairs, k_))
