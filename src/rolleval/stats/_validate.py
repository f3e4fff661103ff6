"""Argument checks shared by the public functions of :mod:`rolleval.stats`.

Each public function owns one ``_validate_<name>`` (next to it) that calls
these helpers before any work is done. Every helper raises
:class:`rolleval.errors.UsageError` with a one-line message that names the
parameter, says what it accepts and shows what it got.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple, TypeGuard

import numpy as np

from ..errors import UsageError

ALTERNATIVES = ("two-sided", "greater", "less")


def describe(value: object) -> str:
    """A short description of a bad value for an error message."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


#: What :func:`is_int` and :func:`is_real` accept, for the type checker.
Int = int | np.integer
Real = int | float | np.integer | np.floating


def is_int(value: object) -> TypeGuard[Int]:
    """True for Python and numpy integers, False for bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_real(value: object) -> TypeGuard[Real]:
    """True for Python and numpy real numbers, False for bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


class RngArg(NamedTuple):
    """A validated ``rng`` argument: the generator to draw from and the seed to record."""

    generator: np.random.Generator
    seed: int | None


def check_rng(rng: object) -> RngArg:
    """``rng``: None (fresh OS entropy), an int seed >= 0, or a numpy Generator.

    The legacy global state (``numpy.random.seed``, ``RandomState``) is never used.
    """
    if rng is None:
        return RngArg(np.random.default_rng(), None)
    if isinstance(rng, np.random.Generator):
        return RngArg(rng, None)
    if is_int(rng) and rng >= 0:
        seed = int(rng)
        return RngArg(np.random.default_rng(seed), seed)
    raise UsageError(
        f"`rng` must be None, a non-negative int seed or a numpy.random.Generator; got {describe(rng)}"
    )


def check_n_resamples(n_resamples: object) -> int:
    """``n_resamples``: a positive integer."""
    if not is_int(n_resamples) or n_resamples < 1:
        raise UsageError(f"`n_resamples` must be a positive integer; got {describe(n_resamples)}")
    return int(n_resamples)


def check_open_unit(value: object, name: str) -> float:
    """A real number strictly between 0 and 1 (``confidence_level``, ``alpha``, ``power``)."""
    if not is_real(value) or not 0.0 < float(value) < 1.0:
        raise UsageError(
            f"`{name}` must be a number strictly between 0 and 1; got {describe(value)}"
        )
    return float(value)


def check_alternative(alternative: object) -> str:
    """``alternative``: one of ``ALTERNATIVES``."""
    if not isinstance(alternative, str) or alternative not in ALTERNATIVES:
        allowed = ", ".join(repr(a) for a in ALTERNATIVES)
        raise UsageError(f"`alternative` must be one of {allowed}; got {describe(alternative)}")
    return alternative


def check_nonnegative(value: object, name: str) -> float:
    """A finite real number >= 0."""
    if not is_real(value) or not math.isfinite(float(value)) or float(value) < 0.0:
        raise UsageError(f"`{name}` must be a finite number >= 0; got {describe(value)}")
    return float(value)


def check_positive(value: object, name: str) -> float:
    """A finite real number > 0."""
    if not is_real(value) or not math.isfinite(float(value)) or float(value) <= 0.0:
        raise UsageError(f"`{name}` must be a finite number > 0; got {describe(value)}")
    return float(value)


def check_count(value: object, name: str, *, minimum: int) -> int:
    """An integer >= ``minimum``."""
    if not is_int(value) or value < minimum:
        raise UsageError(f"`{name}` must be an integer >= {minimum}; got {describe(value)}")
    return int(value)


def as_scores(values: object, name: str) -> np.ndarray:
    """One finite real score per problem, as a 1-D float64 array (a fresh copy)."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise UsageError(
            f"`{name}` must be a 1-D array of real numbers (one per problem); {exc}"
        ) from exc
    if array.dtype.kind not in "biuf":
        raise UsageError(
            f"`{name}` must be a 1-D array of real numbers (one per problem); "
            f"got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise UsageError(f"`{name}` must be 1-D (one score per problem); got shape {array.shape}")
    array = np.array(array, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise UsageError(
            f"`{name}` must be finite; got {array[bad[0]]} at index {bad[0]} "
            "(drop or resolve unavailable problems before calling)"
        )
    return array


def as_counts(values: object, name: str, *, minimum: int) -> np.ndarray:
    """Whole numbers >= ``minimum`` (ints, or floats with integral values) as int64, 0-D or 1-D."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"`{name}` must be whole numbers >= {minimum}; {exc}") from exc
    if array.ndim > 1:
        raise UsageError(
            f"`{name}` must be a scalar or 1-D (one per problem); got shape {array.shape}"
        )
    if array.dtype.kind not in "iuf":
        raise UsageError(f"`{name}` must be whole numbers >= {minimum}; got dtype {array.dtype}")
    flat = array.reshape(-1)
    bad = ~np.isfinite(flat) | (flat < minimum) | (flat != np.round(flat))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        where = "" if array.ndim == 0 else f" at index {i}"
        raise UsageError(f"`{name}` must be whole numbers >= {minimum}; got {flat[i]}{where}")
    return array.astype(np.int64)


def as_paired_scores(
    candidate: object, baseline: object, *, nonempty: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The two sides of a paired comparison, each as :func:`as_scores`, of equal length.

    ``nonempty``: zero problems is an error (a test needs one pair; a standard error
    is None instead).
    """
    candidate_ = as_scores(candidate, "candidate")
    baseline_ = as_scores(baseline, "baseline")
    if candidate_.size != baseline_.size:
        raise UsageError(
            "`candidate` and `baseline` must have the same length (one paired score per "
            f"problem, same problem order); got {candidate_.size} and {baseline_.size}"
        )
    if nonempty and candidate_.size == 0:
        raise UsageError("`candidate` and `baseline` must hold at least one problem; got 0")
    return candidate_, baseline_
