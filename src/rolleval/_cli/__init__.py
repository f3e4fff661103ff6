"""The ``rolleval`` command line: one module per command, each a thin layer over the Python API."""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from typing import Any

import click

from .._sanitize import redact, terminal_safe
from ..errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, RollevalError
from ._app import cli

__all__ = ["cli", "main"]


def _load_commands() -> None:
    from . import (  # noqa: F401  (registers commands)
        _baseline,
        _compare,
        _drift,
        _example,
        _gate,
        _import,
        _plan,
        _regrade,
        _report,
        _run,
        _show,
        _tasks,
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning rolleval errors into one-line messages and exit codes."""
    _load_commands()
    args = list(sys.argv[1:] if argv is None else argv)
    previous = _terminate_like_interrupt()
    try:
        return _main(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _say_error(message: str, *, one_line: bool = True) -> None:
    """Print on stderr, secrets redacted and control characters shown as escapes; one line
    unless ``one_line`` is false (click's usage errors carry the usage text)."""
    click.echo(terminal_safe(redact(message), one_line=one_line), err=True)


def _traceback(code: int) -> int:
    """``--debug``: the traceback on stderr, redacted and inert like every other output."""
    click.echo(terminal_safe(redact(traceback.format_exc())), err=True, nl=False)
    return code


def _reader_gone() -> None:
    """stdout's reader closed the pipe (``| head``): send what is still buffered, and all
    later output, to /dev/null, so that nothing more is said at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture)
        pass


def _main(args: list[str]) -> int:
    debug = "--debug" in args
    meta: dict[str, Any] = {}
    try:
        # Not cli.main(): on Ctrl-C it prints a blank line before raising Abort.
        with cli.make_context("rolleval", args) as ctx:
            meta = ctx.meta
            rv = cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # --help, --version
        return exc.exit_code
    except BrokenPipeError:
        # The reader stopped reading: not an error. The command's exit code when it had
        # decided it (gate, compare), else 0 (everything it printed was read as written).
        _reader_gone()
        return int(meta.get("rolleval.exit_code", 0))
    except RollevalError as exc:
        if debug:
            return _traceback(exc.exit_code)
        _say_error(f"rolleval: error: {exc}")
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        hint = getattr(exc, "hint", None)
        _say_error("rolleval: interrupted" + (f"; {hint}" if hint else ""))
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        if debug:
            return _traceback(exc.exit_code)
        _say_error(f"rolleval: error: {exc.format_message()}", one_line=False)
        return exc.exit_code
    except OSError as exc:
        if debug:
            return _traceback(EXIT_USAGE)
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        _say_error(f"rolleval: error: {where}{exc.strerror or exc}")
        return EXIT_USAGE
    except Exception as exc:
        # A bug in rolleval: never let it pass for a verdict (exit 1 means "regression").
        if debug:
            return _traceback(EXIT_INTERNAL)
        _say_error(
            f"rolleval: internal error: {type(exc).__name__}: {exc} (a bug in rolleval; rerun with --debug for the traceback)"
        )
        return EXIT_INTERNAL
    return int(rv or 0)


def _terminate_like_interrupt() -> Any:
    """SIGTERM (``kill``, a CI timeout) cleans up like Ctrl-C: records flushed, the run marked
    interrupted and resumable, the embedded server stopped."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        # Act as Ctrl-C does: inside asyncio.run that cancels the main task (so cleanup runs
        # at an await point, not wherever the signal landed), elsewhere KeyboardInterrupt.
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint):
            on_sigint(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def _entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
