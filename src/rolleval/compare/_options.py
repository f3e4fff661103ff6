"""The statistical settings of a comparison, one frozen object threaded through compare.

:func:`paired_compare`, :func:`compare_frames`, :func:`compare_runs` and :func:`gate_run`
take the settings as keywords (``threshold=``, ``alpha=``...) or as one
:class:`CompareOptions`, not both; inside, the object is what travels from function to
function. :func:`plan_runs` has its own, :class:`~rolleval.compare.PlanOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..errors import UsageError
from ..stats._validate import describe

__all__ = ["CompareOptions", "one_of"]


@dataclass(frozen=True)
class CompareOptions:
    """How a candidate is compared with its baseline: the threshold that matters, the level
    of the test and interval, the resampling and the power of the planning figures.

    Every field is checked where it is used (:func:`paired_compare`): an out-of-range value
    raises ``UsageError`` naming the field. The defaults are ``rolleval compare``'s.
    """

    threshold: float | None = None
    """``threshold >= 0``, the smallest change that matters, in the metric's units. None: the
    metric's default (:func:`~rolleval.compare.default_threshold`: 0.02 for a rate on a 0-1
    scale; other metrics need one). :func:`paired_compare` knows no metric: it needs a
    number (its ``threshold`` keyword defaults to 0.02)."""
    alpha: float = 0.05
    """Two-sided significance level, in (0, 1)."""
    confidence_level: float | None = None
    """Of the bootstrap interval, in (0, 1); None: ``1 - alpha``."""
    n_resamples: int = 10_000
    """Bootstrap resamples, and random sign vectors of the sign-flip test (exact enumeration
    when ``2**T <= n_resamples``)."""
    rng: int | np.random.Generator | None = 0
    """An int seed (recorded as ``seed``; the bootstrap and the test each start their own
    ``numpy.random.default_rng(seed)``), a Generator (drawn from by the test, then the
    bootstrap), or None (fresh OS entropy: not reproducible)."""
    power: float = 0.8
    """Power of the minimum detectable effect (and so of the equivalence condition) and of
    the planning figures, in (alpha/2, 1)."""


_Options = TypeVar("_Options")


def one_of(
    options: _Options | None, keywords: _Options, defaults: _Options, where: str
) -> _Options:
    """The options object, or the one the keywords built: not both.

    ``keywords`` is the object built from a function's keywords, ``defaults`` the one its
    keyword defaults build; a keyword that differs from its default next to ``options`` is
    a ``UsageError`` naming the function (as :func:`rolleval.testing.write_synthetic_run`).
    """
    if options is None:
        return keywords
    if type(options) is not type(defaults):
        raise UsageError(
            f"{where}: `options` must be a {type(defaults).__name__}; got {describe(options)}"
        )
    if keywords != defaults:
        default = vars(defaults)
        given = [name for name, value in vars(keywords).items() if value != default[name]]
        raise UsageError(
            f"{where}: pass {type(options).__name__} or keywords, not both "
            f"(got options and {', '.join(given)})"
        )
    return options
