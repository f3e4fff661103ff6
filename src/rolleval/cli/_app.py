from __future__ import annotations

import click

from .._version import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="rolleval")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """rolleval: did this converted, quantized or re-served LLM get worse than its baseline?

    Exit codes: 0 success, 1 negative result (regression, gate blocked), 2 usage or input
    error, 3 inconclusive / not enough evidence, 4 the run failed, 130 interrupted.
    """


def inference_options(f):
    """Options shared by every command that computes intervals."""
    f = click.option(
        "--seed", "seed", type=int, default=0, show_default=True, help="Bootstrap seed."
    )(f)
    f = click.option(
        "--n-resamples",
        type=click.IntRange(min=1),
        default=10_000,
        show_default=True,
        help="Bootstrap resamples (B).",
    )(f)
    f = click.option(
        "--confidence-level",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.95,
        show_default=True,
    )(f)
    return f
