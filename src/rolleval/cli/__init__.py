"""The ``rolleval`` command line: one module per command, each a thin layer over the Python API."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import click

from ..errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RollevalError
from ._app import cli

__all__ = ["cli", "main"]


def _load_commands() -> None:
    from . import _compare, _example, _gate, _import, _regrade, _report, _run, _show, _tasks  # noqa: F401  (registers commands)


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


def _main(args: list[str]) -> int:
    debug = "--debug" in args
    try:
        rv = cli.main(args=args, prog_name="rolleval", standalone_mode=False)
    except RollevalError as exc:
        if debug:
            raise
        click.echo(f"rolleval: error: {exc}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("rolleval: interrupted", err=True)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        click.echo("rolleval: interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"rolleval: error: {exc.format_message()}", err=True)
        return exc.exit_code
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        click.echo(f"rolleval: error: {where}{exc.strerror or exc}", err=True)
        return 2
    except Exception as exc:
        # A bug in rolleval: never let it pass for a verdict (exit 1 means "regression").
        if debug:
            raise
        click.echo(
            f"rolleval: internal error: {type(exc).__name__}: {exc} (a bug in rolleval; rerun with --debug for the traceback)",
            err=True,
        )
        return EXIT_INTERNAL
    return int(rv or 0)


def _terminate_like_interrupt() -> Any:
    """SIGTERM (``kill``, a CI timeout) cleans up like Ctrl-C: records flushed, the run marked
    interrupted and resumable, the embedded server stopped."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def _entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
