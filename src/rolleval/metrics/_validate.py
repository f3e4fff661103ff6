"""Input validation shared by the per-problem estimators.

Every check raises :class:`rolleval.errors.UsageError` (a :class:`ValueError`) whose
message names the parameter, the values it accepts and the value it got.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from ..errors import UsageError

__all__ = ["g_pass_threshold"]

#: Relative tolerance used to snap ``tau * k`` to an integer threshold (see
#: :func:`g_pass_threshold`).
_SNAP_RTOL = 1e-9


def _as_int(value: object, name: str, *, minimum: int | None = None, hint: str = "") -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Accepts ``int``, numpy integers and integral floats (``4.0``); refuses ``bool``,
    non-integral and non-finite numbers and everything else.
    """
    allowed = "an integer" if minimum is None else f"an integer >= {minimum}"
    if hint:
        allowed += f" {hint}"
    if isinstance(value, (bool, np.bool_)):
        raise UsageError(f"{name} must be {allowed}; got the boolean {value!r}")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        out = int(float(value))
    else:
        raise UsageError(f"{name} must be {allowed}; got {value!r}")
    if minimum is not None and out < minimum:
        raise UsageError(f"{name} must be {allowed}; got {out}")
    return out


def _as_tau(tau: object) -> Fraction:
    """Return ``tau`` as an exact :class:`~fractions.Fraction` in [0, 1], or raise.

    Integers and fractions are taken as they are; a float is taken as the shortest decimal
    that reproduces it (``0.28`` is 7/25, ``np.float32(0.28)`` too).
    """
    allowed = "a real number with 0 <= tau <= 1"
    if isinstance(tau, (bool, np.bool_)) or not isinstance(tau, numbers.Real):
        raise UsageError(f"tau must be {allowed}; got {tau!r}")
    if isinstance(tau, numbers.Integral):
        exact = Fraction(int(tau))
    elif isinstance(tau, Fraction):
        exact = tau
    else:
        if not math.isfinite(float(tau)):
            raise UsageError(f"tau must be {allowed}; got {tau!r}")
        # The shortest decimal that round-trips (what was typed: 0.28 -> 7/25), for
        # float64 and narrower numpy floats alike (str(np.float32(0.28)) == "0.28").
        exact = Fraction(str(tau)) if isinstance(tau, np.floating) else Fraction(repr(float(tau)))
    if not 0 <= exact <= 1:
        raise UsageError(f"tau must be {allowed}; got {tau!r}")
    return exact


def _threshold(k: int, tau: Fraction) -> int:
    """``max(ceil(tau * k), 1)`` with ``tau * k`` snapped to an integer when within
    ``1e-9 * k`` of one (so that ``0.28 * 25`` counts as 7, not 8)."""
    x = tau * k
    nearest = round(x)
    m = nearest if abs(x - nearest) <= Fraction(_SNAP_RTOL) * k else math.ceil(x)
    return max(int(m), 1)


def g_pass_threshold(k: int, tau: float) -> int:
    """Number of correct draws G-Pass@k_tau asks for: ``m = max(ceil(tau * k), 1)``.

    ``tau`` is read exactly: a float as the shortest decimal that reproduces it (``0.28`` is
    7/25, also as ``numpy.float32``), a :class:`~fractions.Fraction` or an integer as given.
    The product ``tau * k`` is then computed in exact rationals and snapped to the nearest
    integer when it lies within ``1e-9 * k`` of it (for thresholds such as ``(15/29) * 29``,
    whose float ``tau`` is not exactly 15/29). A naive ``math.ceil(0.28 * 25)`` gives 8,
    because ``0.28 * 25 == 7.000000000000001`` in floating point; the intended threshold is
    7. The snap tolerance is far below the spacing ``1/k`` of the thresholds, so no other
    value of ``tau`` is affected.

    Parameters
    ----------
    k : int
        Number of draws, ``k >= 1``.
    tau : float
        Required fraction of correct draws, ``0 <= tau <= 1``.

    Returns
    -------
    int
        The threshold ``m``, ``1 <= m <= k``.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) if ``k < 1``, ``k`` is not an integer, or
        ``tau`` is not a number in [0, 1].

    Examples
    --------
    >>> from rolleval.metrics import g_pass_threshold
    >>> g_pass_threshold(25, 0.28)
    7
    >>> g_pass_threshold(4, 0.0), g_pass_threshold(4, 0.5), g_pass_threshold(4, 1.0)
    (1, 2, 4)
    """
    return _threshold(_as_int(k, "k", minimum=1), _as_tau(tau))


class _Counts(NamedTuple):
    """Validated per-problem counts."""

    n: int
    c: int
    k: int


def _validate_counts(n: object, c: object, k: object) -> _Counts:
    """Check ``0 <= c <= n`` and ``k >= 1`` (all integers)."""
    n_ = _as_int(n, "n", minimum=0, hint="(number of judged rollouts)")
    c_ = _as_int(c, "c", hint=f"with 0 <= c <= n (n={n_})")
    if not 0 <= c_ <= n_:
        raise UsageError(
            f"c must be an integer with 0 <= c <= n (number of correct rollouts, n={n_}); got {c_}"
        )
    k_ = _as_int(k, "k", minimum=1, hint="(number of draws)")
    return _Counts(n_, c_, k_)
