"""Exact per-problem estimators: pass@k, pass^k, G-Pass@k_tau and mG-Pass@k.

All four are functionals of X ~ Hypergeometric(population n, successes c, draws k), the
number of correct rollouts among k drawn without replacement from the problem's n judged
rollouts, c of them correct. Numerators and denominators are exact Python integers and the
result is one ``int / int`` true division, which Python rounds correctly: the returned float
is the exact value rounded once (error below 1.2e-16), for any n (no overflow, no
cancellation, no ``1 - cdf``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ._validate import _as_tau, _threshold, _validate_counts

__all__ = ["g_pass_at_k", "mg_pass_at_k", "pass_at_k", "pass_hat_k"]


def _upper_tail_terms(n: int, c: int, k: int, m: int) -> Iterator[tuple[int, int]]:
    """Yield ``(j, C(c, j) * C(n - c, k - j))`` for ``j = max(m, k - (n - c)) .. min(c, k)``.

    The sum of the yielded terms over ``C(n, k)`` is ``P(X >= m)``. Terms follow the exact
    integer recurrence ``T(j+1) = T(j) (c - j)(k - j) / ((j + 1)(n - c - k + j + 1))``.
    """
    lo = max(m, k - (n - c), 0)
    hi = min(c, k)
    if lo > hi:
        return
    term = math.comb(c, lo) * math.comb(n - c, k - lo)
    j = lo
    while True:
        yield j, term
        if j == hi:
            return
        term = term * (c - j) * (k - j) // ((j + 1) * (n - c - k + j + 1))
        j += 1


def _pass_at_k(n: int, c: int, k: int) -> float:
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def _pass_hat_k(n: int, c: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k)


def _g_pass_at_k(n: int, c: int, k: int, m: int) -> float:
    numerator = sum(term for _, term in _upper_tail_terms(n, c, k, m))
    return numerator / math.comb(n, k)


def _mg_start(k: int) -> int:
    """First threshold in the mG-Pass sum: ``ceil(k/2) + 1``."""
    return (k + 1) // 2 + 1


def _mg_pass_at_k(n: int, c: int, k: int) -> float:
    # sum_{i=a}^{k} P(X >= i) = sum_{j >= a} (j - a + 1) P(X = j)
    a = _mg_start(k)
    numerator = sum((j - a + 1) * term for j, term in _upper_tail_terms(n, c, k, a))
    return 2 * numerator / (k * math.comb(n, k))


def pass_at_k(n: int, c: int, k: int) -> float | None:
    r"""Unbiased pass@k of one problem: the chance that k rollouts drawn without
    replacement from its n judged rollouts include at least one correct one.

    .. math::

        \text{pass@}k = 1 - \binom{n-c}{k} \Big/ \binom{n}{k} = P(X \ge 1),
        \qquad X \sim \text{Hypergeom}(n, c, k)

    Parameters
    ----------
    n : int
        Number of judged rollouts of the problem, ``n >= 0``.
    c : int
        Number of correct rollouts among them, ``0 <= c <= n``.
    k : int
        Number of draws, ``k >= 1``.

    Returns
    -------
    float or None
        The estimate in [0, 1]; ``None`` (unavailable) when ``k > n``. Never 0 and never
        ``c / n`` for an unavailable problem.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if an argument is not an integer, ``n < 0``,
        ``c`` is outside ``[0, n]`` or ``k < 1``.

    Notes
    -----
    Unit of analysis: one problem. Computed exactly as
    ``(C(n, k) - C(n - c, k)) / C(n, k)`` in integer arithmetic with one correctly
    rounded division. ``pass_at_k(n, c, 1) == c / n``.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating Large Language Models Trained on Code",
       arXiv:2107.03374, 2021.

    Examples
    --------
    >>> from rolleval.metrics import pass_at_k
    >>> pass_at_k(5, 2, 3)
    0.9
    >>> pass_at_k(4, 1, 8) is None
    True
    """
    n, c, k = _validate_counts(n, c, k)
    if k > n:
        return None
    return _pass_at_k(n, c, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    r"""pass^k of one problem: the chance that k rollouts drawn without replacement
    from its n judged rollouts are all correct.

    .. math::

        \text{pass}^k = \binom{c}{k} \Big/ \binom{n}{k} = P(X = k),
        \qquad X \sim \text{Hypergeom}(n, c, k)

    Parameters
    ----------
    n : int
        Number of judged rollouts of the problem, ``n >= 0``.
    c : int
        Number of correct rollouts among them, ``0 <= c <= n``.
    k : int
        Number of draws, ``k >= 1``.

    Returns
    -------
    float or None
        The estimate in [0, 1]; ``None`` (unavailable) when ``k > n``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if an argument is not an integer, ``n < 0``,
        ``c`` is outside ``[0, n]`` or ``k < 1``.

    Notes
    -----
    Unit of analysis: one problem. Exact integer ratio ``C(c, k) / C(n, k)``, one correctly
    rounded division. For the ordered, consecutive-trial variant see
    :func:`window_pass_hat_k`.

    References
    ----------
    .. [1] S. Yao et al., "tau-bench: A Benchmark for Tool-Agent-User Interaction in
       Real-World Domains", arXiv:2406.12045, 2024.

    Examples
    --------
    >>> from rolleval.metrics import pass_hat_k
    >>> pass_hat_k(4, 2, 2)
    0.16666666666666666
    >>> pass_hat_k(4, 4, 4)
    1.0
    """
    n, c, k = _validate_counts(n, c, k)
    if k > n:
        return None
    return _pass_hat_k(n, c, k)


def g_pass_at_k(n: int, c: int, k: int, tau: float) -> float | None:
    r"""G-Pass@k_tau of one problem: the chance that at least ``m = max(ceil(tau k), 1)``
    of k rollouts drawn without replacement from its n judged rollouts are correct.

    .. math::

        \text{G-Pass@}k_\tau = P(X \ge m)
        = \sum_{j=m}^{\min(c,k)} \binom{c}{j}\binom{n-c}{k-j} \Big/ \binom{n}{k}

    ``tau -> 0`` (``m = 1``) gives pass@k; ``tau = 1`` (``m = k``) gives pass^k.

    Parameters
    ----------
    n : int
        Number of judged rollouts of the problem, ``n >= 0``.
    c : int
        Number of correct rollouts among them, ``0 <= c <= n``.
    k : int
        Number of draws, ``k >= 1``.
    tau : float
        Required fraction of correct draws, ``0 <= tau <= 1``.

    Returns
    -------
    float or None
        The estimate in [0, 1]; ``None`` (unavailable) when ``k > n``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if a count is not an integer, ``n < 0``,
        ``c`` is outside ``[0, n]``, ``k < 1``, or ``tau`` is not in [0, 1].

    Notes
    -----
    Unit of analysis: one problem. The threshold ``m`` is computed exactly, see
    :func:`g_pass_threshold` (``tau = 0.28, k = 25`` gives ``m = 7``, where a float
    ``ceil`` gives 8). The upper tail is summed directly in exact integers (never
    ``1 - cdf``), then divided once with correct rounding.

    References
    ----------
    .. [1] J. Liu et al., "Are Your LLMs Capable of Stable Reasoning?" (G-Pass@k),
       arXiv:2412.13147, 2024.

    Examples
    --------
    >>> from rolleval.metrics import g_pass_at_k
    >>> g_pass_at_k(4, 2, 2, 0.5)  # at least 1 of 2 correct
    0.8333333333333334
    >>> g_pass_at_k(4, 2, 2, 1.0)  # both correct
    0.16666666666666666
    """
    n, c, k = _validate_counts(n, c, k)
    m = _threshold(k, _as_tau(tau))
    if k > n:
        return None
    return _g_pass_at_k(n, c, k, m)


def mg_pass_at_k(n: int, c: int, k: int) -> float | None:
    r"""mG-Pass@k of one problem: G-Pass@k_tau averaged over tau in (0.5, 1], as the sum
    published with G-Pass@k defines it.

    .. math::

        \text{mG-Pass@}k = \frac{2}{k} \sum_{i=\lceil k/2 \rceil + 1}^{k} P(X \ge i),
        \qquad X \sim \text{Hypergeom}(n, c, k)

    Parameters
    ----------
    n : int
        Number of judged rollouts of the problem, ``n >= 0``.
    c : int
        Number of correct rollouts among them, ``0 <= c <= n``.
    k : int
        Number of draws, ``k >= 1``.

    Returns
    -------
    float or None
        The estimate in [0, 1]; ``None`` (unavailable) when ``k > n``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if an argument is not an integer, ``n < 0``,
        ``c`` is outside ``[0, n]`` or ``k < 1``.

    Notes
    -----
    Unit of analysis: one problem. rolleval follows the published sum, which every
    published number uses. For odd ``k`` the sum is not the integral it is described as:
    it has ``(k - 1) / 2`` terms, so ``mg_pass_at_k(n, c, 1)`` is always 0 and a perfect
    model (``c == n``) scores ``(k - 1) / k`` at odd ``k``; at even ``k`` a perfect model
    scores 1. Computed exactly as
    ``2 * sum_{j >= a} (j - a + 1) C(c, j) C(n - c, k - j) / (k C(n, k))`` with
    ``a = ceil(k/2) + 1``.

    References
    ----------
    .. [1] J. Liu et al., "Are Your LLMs Capable of Stable Reasoning?" (G-Pass@k),
       arXiv:2412.13147, 2024.

    Examples
    --------
    >>> from rolleval.metrics import mg_pass_at_k
    >>> mg_pass_at_k(8, 8, 4)
    1.0
    >>> mg_pass_at_k(8, 8, 3)  # odd-k quirk: (k - 1) / k
    0.6666666666666666
    >>> mg_pass_at_k(8, 8, 1)
    0.0
    """
    n, c, k = _validate_counts(n, c, k)
    if k > n:
        return None
    return _mg_pass_at_k(n, c, k)
