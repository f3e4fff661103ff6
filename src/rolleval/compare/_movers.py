"""Per-problem movers: which problems changed most between baseline and candidate."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any, NamedTuple

import numpy as np

from ..errors import UsageError
from ..stats._validate import as_counts, describe, is_int
from ._holm import holm

__all__ = ["problem_movers"]


class _MoversArgs(NamedTuple):
    ids: list[Any]
    c_baseline: np.ndarray
    n_baseline: np.ndarray
    c_candidate: np.ndarray
    n_candidate: np.ndarray
    direction: int
    top: int | None


def _validate_problem_movers(
    ids: object,
    c_baseline: object,
    n_baseline: object,
    c_candidate: object,
    n_candidate: object,
    direction: object,
    top: object,
) -> _MoversArgs:
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence | np.ndarray):
        raise UsageError(f"`ids` must be a sequence of problem ids; got {describe(ids)}")
    ids_ = [i.item() if isinstance(i, np.generic) else i for i in ids]
    size = len(ids_)
    try:
        distinct = len(set(ids_))
    except TypeError as exc:
        raise UsageError(f"`ids` must be hashable problem ids; {exc}") from exc
    if distinct != size:
        raise UsageError(
            f"`ids` must be unique (one row per problem); got {size - distinct} duplicates"
        )
    arrays = {}
    for name, value in (
        ("c_baseline", c_baseline),
        ("n_baseline", n_baseline),
        ("c_candidate", c_candidate),
        ("n_candidate", n_candidate),
    ):
        array = as_counts(value, name, minimum=0)
        if array.ndim != 1 or array.size != size:
            raise UsageError(
                f"`{name}` must be 1-D with one count per id ({size}); got shape {array.shape}"
            )
        arrays[name] = array
    for side in ("baseline", "candidate"):
        c, n = arrays[f"c_{side}"], arrays[f"n_{side}"]
        over = np.flatnonzero(c > n)
        if over.size:
            i = int(over[0])
            raise UsageError(
                f"`c_{side}` must not exceed `n_{side}`; got {c[i]} > {n[i]} at index {i}"
            )
    if not is_int(direction) or direction not in (1, -1):
        raise UsageError(
            "`direction` must be +1 (c counts good events) or -1 (c counts bad events); "
            f"got {describe(direction)}"
        )
    if top is not None and (not is_int(top) or top < 1):
        raise UsageError(f"`top` must be a positive integer or None (all); got {describe(top)}")
    return _MoversArgs(
        ids_, direction=int(direction), top=None if top is None else int(top), **arrays
    )


def _fisher_one_sided(a: int, b: int, c: int, d: int, alternative: str) -> float:
    """One-sided Fisher exact p-value of the table ``[[a, b], [c, d]]``, exactly.

    Under the null, ``a ~ Hypergeometric(N = a+b+c+d, K = a+c, n = a+b)``; ``greater`` is
    ``P(X >= a)``, ``less`` is ``P(X <= a)``: the definition ``scipy.stats.fisher_exact``
    uses, summed in integers and divided once (correctly rounded).
    """
    n, k, total = a + b, a + c, a + b + c + d
    lo, hi = max(0, n + k - total), min(n, k)
    xs = range(a, hi + 1) if alternative == "greater" else range(lo, a + 1)
    num = sum(comb(k, x) * comb(total - k, n - x) for x in xs)
    return min(1.0, num / comb(total, n))


def _one_sided_fisher(tables: np.ndarray, alternative: str) -> np.ndarray:
    """One-sided Fisher exact p-values of ``(m, 2, 2)`` tables, once per distinct table."""
    flat = tables.reshape(len(tables), 4)
    unique, inverse = np.unique(flat, axis=0, return_inverse=True)
    p = np.array(
        [_fisher_one_sided(int(a), int(b), int(c), int(d), alternative) for a, b, c, d in unique],
        dtype=np.float64,
    )
    return p[inverse.reshape(-1)]


def problem_movers(
    ids: Sequence[Any],
    c_baseline: object,
    n_baseline: object,
    c_candidate: object,
    n_candidate: object,
    *,
    direction: int = +1,
    top: int | None = 20,
) -> list[dict[str, Any]]:
    """The problems whose rate moved most, with a per-problem exact test and Holm adjustment.

    For problem ``i`` with ``c`` events among ``n`` judged rollouts on the baseline and
    ``c'`` among ``n'`` on the candidate:

    1. Rates ``c/n`` and ``c'/n'`` and the direction-normalised change
       ``delta = direction * (c'/n' - c/n)`` (negative = candidate worse).
    2. One-sided Fisher exact test [1]_ of "candidate worse" on the 2x2 table
       ``[[c, n - c], [c', n' - c']]`` (rows baseline, candidate; columns events,
       non-events), computed exactly (the definition of ``scipy.stats.fisher_exact``). Its odds ratio is
       ``(c (n' - c')) / ((n - c) c')`` = baseline odds / candidate odds, so:

       - ``direction=+1`` (``c`` counts good events, e.g. correct): ``alternative="greater"``
         (the baseline's odds of success are higher);
       - ``direction=-1`` (``c`` counts bad events, e.g. unextracted):
         ``alternative="less"`` (the candidate's odds of the bad event are higher).

       The test conditions on both margins, so it is exact for any ``n``. A side with
       ``n = 0`` (no judged rollout) makes the problem not testable: rate, ``delta``,
       ``pvalue`` and ``adjusted_pvalue`` are None for it.
    3. Holm adjustment [2]_ (:func:`rolleval.compare.holm`) over **all** testable
       problems, not only those returned: with hundreds of problems some will look like
       movers by chance, and only ``adjusted_pvalue <= alpha`` singles one out.
    4. Order: largest ``|delta|`` first, then smaller ``pvalue``, then input order;
       untestable problems last, in input order. The first ``top`` rows are returned.

    The unit here is the rollout within one problem: these tests say which problems
    moved, not whether the model did (that is :func:`rolleval.compare.paired_compare`).

    Parameters
    ----------
    ids : sequence
        Unique problem ids, aligned with the count arrays.
    c_baseline, n_baseline, c_candidate, n_candidate : array_like of int, 1-D
        Events and judged rollouts per problem on each side, ``0 <= c <= n``.
    direction : {+1, -1}, default +1
        Whether ``c`` counts good (+1) or bad (-1) events.
    top : int or None, default 20
        Rows to return (None: all).

    Returns
    -------
    list of dict
        Keys ``id``, ``baseline_rate``, ``candidate_rate``, ``delta``, ``pvalue``,
        ``adjusted_pvalue``, ``c_baseline``, ``n_baseline``, ``c_candidate``,
        ``n_candidate`` (plain Python values, JSON-ready).

    References
    ----------
    .. [1] R. A. Fisher, *Statistical Methods for Research Workers*, 5th ed., Oliver &
       Boyd, 1934, section 21.02.
    .. [2] S. Holm, "A simple sequentially rejective multiple test procedure",
       *Scandinavian Journal of Statistics* 6(2):65-70, 1979.

    Examples
    --------
    >>> from rolleval.compare import problem_movers
    >>> rows = problem_movers(["p1", "p2", "p3"], [8, 4, 0], [8, 8, 0], [1, 5, 3], [8, 8, 8])
    >>> [(r["id"], r["delta"], round(r["pvalue"], 5)) for r in rows[:2]]
    [('p1', -0.875, 0.0007), ('p2', 0.125, 0.84266)]
    >>> rows[2]["id"], rows[2]["pvalue"]
    ('p3', None)
    """
    args = _validate_problem_movers(
        ids, c_baseline, n_baseline, c_candidate, n_candidate, direction, top
    )
    cb, nb, cc, nc = args.c_baseline, args.n_baseline, args.c_candidate, args.n_candidate
    testable = (nb > 0) & (nc > 0)
    idx = np.flatnonzero(testable)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate_b = cb / nb
        rate_c = cc / nc
    delta = args.direction * (rate_c - rate_b)
    pvalues = np.full(cb.size, np.nan)
    adjusted = np.full(cb.size, np.nan)
    if idx.size:
        tables = np.stack(
            [np.stack([cb, nb - cb], axis=1), np.stack([cc, nc - cc], axis=1)], axis=1
        )[idx]
        alternative = "greater" if args.direction == 1 else "less"
        pvalues[idx] = _one_sided_fisher(tables, alternative)
        adjusted[idx] = holm(pvalues[idx])
    order = sorted(idx.tolist(), key=lambda i: (-abs(delta[i]), pvalues[i], i))
    order += np.flatnonzero(~testable).tolist()
    if args.top is not None:
        order = order[: args.top]

    def _opt(x: float) -> float | None:
        return None if np.isnan(x) else float(x)

    return [
        {
            "id": args.ids[i],
            "baseline_rate": _opt(rate_b[i]),
            "candidate_rate": _opt(rate_c[i]),
            "delta": _opt(delta[i]) if testable[i] else None,
            "pvalue": _opt(pvalues[i]),
            "adjusted_pvalue": _opt(adjusted[i]),
            "c_baseline": int(cb[i]),
            "n_baseline": int(nb[i]),
            "c_candidate": int(cc[i]),
            "n_candidate": int(nc[i]),
        }
        for i in order
    ]
