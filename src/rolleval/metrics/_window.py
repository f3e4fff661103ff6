"""Consecutive-window pass^k over ordered trials (the TraceLens convention)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..errors import UsageError
from ._validate import _as_int

__all__ = ["window_pass_hat_k"]


def _flag(trial: Mapping[str, object], key: str, default: bool | None, pos: int) -> bool:
    value = trial.get(key, default)
    if not isinstance(value, (bool, np.bool_)):
        raise UsageError(f"trials[{pos}][{key!r}] must be a bool; got {value!r}")
    return bool(value)


def window_pass_hat_k(trials: Iterable[Mapping[str, object]], k: int) -> float | None:
    r"""Consecutive-window pass^k of one problem: the share of windows of k consecutive
    run indices in which every trial passed.

    .. math::

        \text{pass}^k_{\text{window}} =
        \frac{\#\{\text{complete windows whose } k \text{ trials all passed}\}}
             {\#\{\text{complete windows}\}}

    A window is a run of k consecutive run indices ``r, r+1, ..., r+k-1`` that are all
    present and not excluded. A missing or excluded run index is a gap that no window
    spans.

    Parameters
    ----------
    trials : iterable of mappings
        The trials of one problem, in any order, each
        ``{"run_index": int >= 0, "passed": bool, "excluded": bool}`` (``excluded`` is
        optional and defaults to ``False``; use it for harness failures such as infra
        errors). Other keys are ignored.
    k : int
        Window length, ``k >= 1``.

    Returns
    -------
    float or None
        The share in [0, 1]; ``None`` (unavailable) when no complete window exists.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if ``k < 1``, a trial lacks ``run_index`` or
        ``passed``, a field has the wrong type, or a run index occurs twice.

    Notes
    -----
    Unit of analysis: one problem. Unlike :func:`pass_hat_k`, which averages over all
    k-subsets, this estimator depends on the order of the trials: it measures whether a
    model passes k times *in a row*. With no gaps and ``T`` trials there are
    ``T - k + 1`` windows. Runs in ``O(T log T)``.

    References
    ----------
    .. [1] TraceLens statistical contract (consecutive pass^k).
    .. [2] S. Yao et al., "tau-bench", arXiv:2406.12045, 2024 (pass^k).

    Examples
    --------
    >>> from rolleval.metrics import window_pass_hat_k
    >>> trials = [{"run_index": i, "passed": p} for i, p in enumerate([1, 1, 0, 1, 1, 1])]
    >>> trials = [dict(t, passed=bool(t["passed"])) for t in trials]
    >>> window_pass_hat_k(trials, 2)  # windows 01 12 23 34 45: 01, 34, 45 pass
    0.6
    >>> trials[2]["excluded"] = True  # now windows 01 34 45, all pass
    >>> window_pass_hat_k(trials, 2)
    1.0
    >>> window_pass_hat_k(trials, 4) is None
    True
    """
    k_ = _as_int(k, "k", minimum=1, hint="(window length)")
    usable: dict[int, bool] = {}
    seen: set[int] = set()
    for pos, trial in enumerate(trials):
        if not isinstance(trial, Mapping):
            raise UsageError(f"trials[{pos}] must be a mapping with 'run_index' and 'passed'")
        if "run_index" not in trial or "passed" not in trial:
            raise UsageError(f"trials[{pos}] must have the keys 'run_index' and 'passed'")
        run_index = _as_int(trial["run_index"], f"trials[{pos}]['run_index']", minimum=0)
        if run_index in seen:
            raise UsageError(
                f"trials[{pos}]['run_index'] = {run_index} occurs twice; each run index "
                f"must appear once per problem"
            )
        seen.add(run_index)
        passed = _flag(trial, "passed", None, pos)
        if not _flag(trial, "excluded", False, pos):
            usable[run_index] = passed
    if len(usable) < k_:
        return None
    index = np.fromiter(sorted(usable), dtype=np.int64, count=len(usable))
    failed = np.fromiter((not usable[i] for i in index.tolist()), dtype=np.int64, count=index.size)
    # A window starting at sorted position s is complete iff index[s + k - 1] - index[s] == k - 1
    # (indices are distinct and sorted, so the k entries are then consecutive integers).
    starts = index.size - k_ + 1
    complete = (index[k_ - 1 :] - index[:starts]) == k_ - 1
    n_complete = int(complete.sum())
    if n_complete == 0:
        return None
    cum = np.concatenate(([0], np.cumsum(failed)))
    clean = (cum[k_:] - cum[:starts]) == 0
    return int((complete & clean).sum()) / n_complete
