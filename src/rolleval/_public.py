"""``__module__`` of public names: where a user imports them, not the private file they live in.

Each public package ends with ``publish(__name__, globals(), __all__)``, so tracebacks,
``repr`` of classes, pickles and the documentation name ``rolleval.compare.compare_runs``
rather than ``rolleval.compare._runs.compare_runs`` (as httpx does).
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PUBLIC_MODULES", "publish"]

#: The modules a user imports from; everything else in ``rolleval`` is private.
PUBLIC_MODULES = frozenset(
    {
        "rolleval",
        "rolleval.client",
        "rolleval.compare",
        "rolleval.drift",
        "rolleval.errors",
        "rolleval.grading",
        "rolleval.metrics",
        "rolleval.records",
        "rolleval.rundir",
        "rolleval.stats",
        "rolleval.tasks",
        "rolleval.testing",
        "rolleval.writer",
    }
)


def publish(module: str, namespace: Mapping[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` to ``module`` on each class and function of ``names`` that rolleval
    defines in a private module (one a user does not import from)."""
    for name in names:
        obj = namespace[name]
        if not isinstance(obj, (type, types.FunctionType)):  # classes and functions
            continue  # constants and typing aliases stay as they are
        home = getattr(obj, "__module__", "")
        if home.split(".")[0] == "rolleval" and home not in PUBLIC_MODULES:
            obj.__module__ = module
