"""``--unsafe-exec``: let code tasks run unisolated where the sandbox cannot start."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["UNSAFE_EXEC_HELP", "unsafe_exec_scope"]

UNSAFE_EXEC_HELP = (
    "Code tasks: where the sandbox cannot start, run model-written code unisolated "
    "(as the current user) instead of refusing."
)


@contextlib.contextmanager
def unsafe_exec_scope(enabled: bool) -> Iterator[None]:
    """Set ``ROLLEVAL_UNSAFE_EXEC=1`` for the duration (grading workers inherit it)."""
    if not enabled:
        yield
        return
    from ..grading._code import UNSAFE_EXEC_ENV

    previous = os.environ.get(UNSAFE_EXEC_ENV)
    os.environ[UNSAFE_EXEC_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(UNSAFE_EXEC_ENV, None)
        else:
            os.environ[UNSAFE_EXEC_ENV] = previous
