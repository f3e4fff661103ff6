from __future__ import annotations

import click

from .._version import __version__


class Interrupted(KeyboardInterrupt):
    """Ctrl-C with something to tell: ``hint`` is printed after "rolleval: interrupted"."""

    def __init__(self, hint: str):
        super().__init__(hint)
        self.hint = hint


def will_exit(code: int) -> None:
    """Record the exit code a command has decided before it prints: should its reader stop
    reading (``rolleval gate ... | head``), the command still exits with it."""
    click.get_current_context().meta["rolleval.exit_code"] = code


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="rolleval")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """rolleval: did this converted, quantized or re-served LLM get worse than its baseline?

    Exit codes: 0 success, 1 negative result (regression, gate blocked), 2 usage or input
    error, 3 inconclusive / not enough evidence, 4 the run failed, 5 internal error (a bug in
    rolleval, never a verdict), 130 interrupted.
    """
