"""Paired sign-flip permutation test over problems."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..errors import UsageError
from ._chunks import rows_per_chunk
from ._validate import (
    as_paired_scores,
    check_alternative,
    check_count,
    check_n_resamples,
    check_rng,
    describe,
    is_real,
)

__all__ = ["SignFlipResult", "min_attainable_pvalue", "sign_flip_test"]

# Sign vectors are evaluated in chunks of about this many bytes (int64 / float64).
# Tests shrink it to force many chunks.
_CHUNK_BYTES = 2**20


@dataclass(frozen=True)
class SignFlipResult:
    """Result of :func:`sign_flip_test`.

    Attributes
    ----------
    statistic : float
        The observed mean paired difference ``mean(candidate - baseline)``.
    pvalue : float
        The p-value of the chosen ``alternative``.
    exact : bool
        True when all ``2**n`` sign vectors were enumerated.
    n_resamples : int
        Number of sign vectors evaluated: ``2**n`` when exact, else as requested.
    alternative : str
        As requested.
    n : int
        Number of problems (pairs).
    seed : int or None
        The integer seed given as ``rng``; None when ``rng`` was None or a
        Generator. Recorded as given even when the test was exact (no draws).
    null_distribution : numpy.ndarray
        The mean of the sign-flipped differences for every sign vector evaluated.
        Left out of ``repr`` and ``==``.
    """

    statistic: float
    pvalue: float
    exact: bool
    n_resamples: int
    alternative: str
    n: int
    seed: int | None
    null_distribution: np.ndarray = field(repr=False, compare=False)


class _SignFlipArgs(NamedTuple):
    differences: np.ndarray
    n_resamples: int
    alternative: str
    exact: bool
    generator: np.random.Generator
    seed: int | None
    rtol: float


def _validate_sign_flip_test(
    candidate: object,
    baseline: object,
    n_resamples: object,
    alternative: object,
    rng: object,
    rtol: object,
) -> _SignFlipArgs:
    candidate_, baseline_ = as_paired_scores(candidate, baseline)
    n_resamples_ = check_n_resamples(n_resamples)
    alternative_ = check_alternative(alternative)
    generator, seed = check_rng(rng)
    if not is_real(rtol) or not 0.0 <= float(rtol) < 1.0:
        raise UsageError(f"`rtol` must be a number >= 0 and < 1; got {describe(rtol)}")
    exact = _is_exact(candidate_.size, n_resamples_)
    differences = candidate_ - baseline_
    return _SignFlipArgs(
        differences, n_resamples_, alternative_, exact, generator, seed, float(rtol)
    )


def _is_exact(n_problems: int, n_resamples: int) -> bool:
    """``2**n_problems <= n_resamples``, without building a huge integer."""
    return n_problems <= n_resamples.bit_length() - 1


def _flipped_means(
    differences: np.ndarray, total: int, signs: Callable[[int, int], np.ndarray]
) -> np.ndarray:
    """``mean(s * d)`` for the sign vectors ``signs(start, stop)``, rows start..stop-1 of ``total``."""
    rows = min(rows_per_chunk(differences.size, _CHUNK_BYTES), total)
    out = np.empty(total)
    for start in range(0, total, rows):
        stop = min(start + rows, total)
        out[start:stop] = np.mean(signs(start, stop) * differences, axis=-1)
    return out


def _all_signs(n: int) -> Callable[[int, int], np.ndarray]:
    """Row k is the sign vector whose bit i is set where element i is flipped."""
    bits = np.arange(n, dtype=np.int64)

    def signs(start: int, stop: int) -> np.ndarray:
        k = np.arange(start, stop, dtype=np.int64)
        return 1.0 - 2.0 * ((k[:, None] >> bits) & 1)

    return signs


def _random_signs(n: int, generator: np.random.Generator) -> Callable[[int, int], np.ndarray]:
    """Rows of ``2*rng.integers(0, 2, (B, n)) - 1``, drawn chunk by chunk (same stream)."""

    def signs(start: int, stop: int) -> np.ndarray:
        return 2 * generator.integers(0, 2, size=(stop - start, n)) - 1

    return signs


def sign_flip_test(
    candidate: object,
    baseline: object,
    *,
    n_resamples: int = 10_000,
    alternative: str = "two-sided",
    rng: int | np.random.Generator | None = None,
    rtol: float = 1e-9,
) -> SignFlipResult:
    """Paired sign-flip permutation test of the mean difference over problems.

    ``candidate[i]`` and ``baseline[i]`` are the scores of the same problem ``i``
    under the two sides of a comparison (for example their pass@1). The unit of
    analysis is the problem: ``d[i] = candidate[i] - baseline[i]`` is one
    observation.

    Null hypothesis: each ``d[i]`` is symmetric about 0 (exchanging the labels
    of a pair does not change its distribution), so every sign vector
    ``s in {-1, +1}**T`` makes ``mean(s * d)`` equally likely [1]_.

    The procedure:

    1. Observed statistic ``m = mean(d)``.
    2. If ``2**T <= n_resamples``, enumerate all ``2**T`` sign vectors (the
       identity included) -- the exact test. Otherwise draw ``n_resamples``
       vectors ``2*rng.integers(0, 2, (n_resamples, T)) - 1`` (in chunks that
       give the same stream as one draw).
    3. With ``tol = rtol * max|d|``, count the flipped means ``m_s`` that are at
       least as extreme as ``m``: ``|m_s| >= |m| - tol`` for ``"two-sided"``,
       ``m_s >= m - tol`` for ``"greater"`` (candidate better than baseline) and
       ``m_s <= m + tol`` for ``"less"``.
    4. Exact: ``p = count / 2**T``. Randomized: ``p = (count + 1) /
       (n_resamples + 1)`` [2]_, which is never 0 and keeps the test valid.

    The tolerance makes float noise count as a tie: decimal scores such as
    0.1, 0.2 and 0.3 sum to means that differ in the last bits although they
    are equal in exact arithmetic.

    Parameters
    ----------
    candidate, baseline : array_like, 1-D
        Paired finite scores, one per problem, both in the same problem order;
        ``baseline`` is subtracted from ``candidate``.
    n_resamples : int, default 10000
        Number of random sign vectors; also the bound for the exact test
        (exact when ``2**T <= n_resamples``, i.e. ``T <= 13`` by default).
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        ``"greater"``: the alternative is ``mean(candidate - baseline) > 0``;
        ``"less"``: ``mean(candidate - baseline) < 0``.
    rng : None, int or numpy.random.Generator, default None
        Randomness for the randomized test (not used when exact). An int is a
        seed for ``numpy.random.default_rng``; the global numpy state is never
        used.
    rtol : float, default 1e-9
        Tie tolerance relative to ``max|d|``, in ``[0, 1)``.

    Returns
    -------
    SignFlipResult
        ``statistic``, ``pvalue``, ``exact``, ``n_resamples``, ``alternative``,
        ``n``, ``seed`` and the ``null_distribution``.

    Raises
    ------
    rolleval.errors.UsageError
        If ``candidate`` and ``baseline`` differ in length, are empty (``T == 0``: no test is
        defined; callers check ``T`` first), hold NaN or infinity, or another
        argument is out of range.

    Notes
    -----
    In the exact branch the p-value equals that of
    ``scipy.stats.permutation_test((candidate, baseline), statistic,
    permutation_type='samples')`` with ``statistic`` the mean of ``x - y``
    [3]_ whenever SciPy's own tie rule (100 machine epsilons relative to
    ``|m|``) and this one agree; they differ only where float noise exceeds
    SciPy's tolerance, and there this function gives the exact-arithmetic
    answer. In the randomized branch SciPy counts each tail separately, so
    the two-sided p-values differ by design.

    The smallest p-value the test can return is
    :func:`min_attainable_pvalue`; with ``T <= 5`` problems the exact
    two-sided test can never reach 0.05.

    References
    ----------
    .. [1] R. A. Fisher, *The Design of Experiments*, Oliver & Boyd, 1935,
       section 21.
    .. [2] B. Phipson and G. K. Smyth, "Permutation p-values should never be
       zero: calculating exact p-values when permutations are randomly drawn",
       *Statistical Applications in Genetics and Molecular Biology* 9(1), 2010.
    .. [3] SciPy, ``scipy.stats.permutation_test``,
       https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.permutation_test.html

    Examples
    --------
    >>> from rolleval.stats import sign_flip_test
    >>> candidate = [0.1, 0.2, 0.3, 0.0, 0.5, 0.2, 0.1, 0.3]
    >>> baseline = [0.3, 0.2, 0.6, 0.1, 0.7, 0.4, 0.2, 0.3]
    >>> res = sign_flip_test(candidate, baseline, alternative="less")
    >>> res.exact, res.n_resamples, res.pvalue
    (True, 256, 0.015625)
    >>> round(res.statistic, 10)
    -0.1375
    """
    args = _validate_sign_flip_test(candidate, baseline, n_resamples, alternative, rng, rtol)
    d = args.differences
    n = d.size
    observed = float(np.mean(d))
    exact = args.exact
    if exact:
        null = _flipped_means(d, 2**n, _all_signs(n))
    else:
        null = _flipped_means(d, args.n_resamples, _random_signs(n, args.generator))
    tol = args.rtol * float(np.max(np.abs(d)))
    if args.alternative == "two-sided":
        count = int(np.count_nonzero(np.abs(null) >= abs(observed) - tol))
    elif args.alternative == "greater":
        count = int(np.count_nonzero(null >= observed - tol))
    else:
        count = int(np.count_nonzero(null <= observed + tol))
    pvalue = count / null.size if exact else (count + 1) / (null.size + 1)
    return SignFlipResult(
        statistic=observed,
        pvalue=pvalue,
        exact=exact,
        n_resamples=null.size,
        alternative=args.alternative,
        n=n,
        seed=args.seed,
        null_distribution=null,
    )


class _MinPvalueArgs(NamedTuple):
    n_problems: int
    n_resamples: int
    alternative: str


def _validate_min_attainable_pvalue(
    n_problems: object, n_resamples: object, alternative: object
) -> _MinPvalueArgs:
    return _MinPvalueArgs(
        check_count(n_problems, "n_problems", minimum=1),
        check_n_resamples(n_resamples),
        check_alternative(alternative),
    )


def min_attainable_pvalue(
    n_problems: int, *, n_resamples: int = 10_000, alternative: str = "two-sided"
) -> float:
    """Smallest p-value :func:`sign_flip_test` can return for ``n_problems`` problems.

    Used to say "too few problems to ever reach alpha" before running anything.

    1. Exact test (``2**T <= n_resamples``): only the identity and, for the
       two-sided test, its negation can be as extreme as the observed mean
       when no other sign vector is, so the minimum is ``2 / 2**T`` two-sided
       and ``1 / 2**T`` one-sided (and 1 for ``T == 1`` two-sided).
    2. Randomized test: ``1 / (n_resamples + 1)`` [1]_.

    Parameters
    ----------
    n_problems : int
        Number of paired problems ``T``, >= 1.
    n_resamples : int, default 10000
        As passed to :func:`sign_flip_test`.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        As passed to :func:`sign_flip_test`.

    Returns
    -------
    float
        The minimum attainable p-value.

    References
    ----------
    .. [1] B. Phipson and G. K. Smyth, "Permutation p-values should never be
       zero: calculating exact p-values when permutations are randomly drawn",
       *Statistical Applications in Genetics and Molecular Biology* 9(1), 2010.

    Examples
    --------
    >>> from rolleval.stats import min_attainable_pvalue
    >>> min_attainable_pvalue(5)  # 2/32: five problems can never reach 0.05
    0.0625
    >>> min_attainable_pvalue(6, alternative="less")
    0.015625
    >>> min_attainable_pvalue(20, n_resamples=9999)
    0.0001
    """
    args = _validate_min_attainable_pvalue(n_problems, n_resamples, alternative)
    if not _is_exact(args.n_problems, args.n_resamples):
        return 1.0 / (args.n_resamples + 1)
    extreme = 2 if args.alternative == "two-sided" else 1
    sign_vectors: int = 2**args.n_problems
    return min(1.0, extreme / sign_vectors)
