"""``--unsafe-exec``: let code tasks run unisolated where the sandbox cannot start."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["UNSAFE_EXEC_HELP", "unsafe_exec_scope", "unsafe_exec_warning"]

UNSAFE_EXEC_HELP = (
    "Code tasks: where the sandbox cannot start, run model-written code unisolated "
    "(as the current user) instead of refusing. The code can then read rolleval's "
    "environment (the API key too), read and write the user's files, use the network and "
    "signal the user's processes."
)


def unsafe_exec_warning() -> str:
    """The warning ``--unsafe-exec`` prints: what unisolated code can do."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid
        user = f"uid {os.getuid()}"
    return (
        "rolleval: warning: --unsafe-exec: where the code sandbox cannot start, model-written "
        f"code runs unisolated as {user}: it can read rolleval's environment (the API key "
        f"too, through /proc), read and write every file {user} can, use the network, and "
        f"send signals to {user}'s processes; grade only code you trust this way"
    )


@contextlib.contextmanager
def unsafe_exec_scope(enabled: bool) -> Iterator[None]:
    """Set ``ROLLEVAL_UNSAFE_EXEC=1`` for the duration (grading workers inherit it), after
    printing :func:`unsafe_exec_warning` on stderr."""
    if not enabled:
        yield
        return
    import click

    from ..grading._code import UNSAFE_EXEC_ENV

    click.echo(unsafe_exec_warning(), err=True)
    previous = os.environ.get(UNSAFE_EXEC_ENV)
    os.environ[UNSAFE_EXEC_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(UNSAFE_EXEC_ENV, None)
        else:
            os.environ[UNSAFE_EXEC_ENV] = previous
