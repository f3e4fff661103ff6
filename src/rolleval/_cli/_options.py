"""Options shared by several commands, declared once.

Each name is a decorator (or a factory of one) that adds one option, so a command reads as
the list of what it takes. The option's name, type, default and help are the same wherever
it appears; a command that needs a different default passes it to the factory.

Vocabulary (one word per concept; the table is in docs/architecture.md): ``--seed`` is the
CLI spelling of the Python API's ``rng``; ``--rollouts`` (``-n``) is the rollouts per
problem (``n_rollouts`` in the run files); baseline and candidate are always the two sides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "allow_incomplete_option",
    "alpha_option",
    "confidence_level_option",
    "format_option",
    "html_option",
    "inference_options",
    "n_resamples_option",
    "observe_option",
    "output_option",
    "power_option",
    "replicate_options",
    "run_noise_option",
    "seed_option",
    "task_name",
    "task_option",
    "tasks_option",
    "unmatched_option",
    "unsafe_exec_option",
]

_PROBABILITY = click.FloatRange(0, 1, min_open=True, max_open=True)


def seed_option(f: F) -> F:
    """``--seed``: the bootstrap/permutation seed (``rng=`` in the Python API)."""
    return click.option(
        "--seed",
        "seed",
        type=int,
        default=0,
        show_default=True,
        help="Seed of the resampling (bootstrap, permutation); the same seed gives the same bytes.",
    )(f)


def n_resamples_option(f: F) -> F:
    """``--n-resamples``: bootstrap or permutation resamples."""
    return click.option(
        "--n-resamples",
        type=click.IntRange(min=1),
        default=10_000,
        show_default=True,
        help="Resamples (B) of the bootstrap or permutation test.",
    )(f)


def confidence_level_option(
    default: float | None = 0.95, help: str | None = None
) -> Callable[[F], F]:
    """``--confidence-level``: of the intervals; ``default=None`` means ``1 - alpha``."""
    return click.option(
        "--confidence-level",
        type=_PROBABILITY,
        default=default,
        show_default=default is not None,
        help=help
        or ("Of the intervals." if default is not None else "Of the intervals [1 - alpha]."),
    )


def power_option(
    help: str = "Power of the minimum detectable effect; equivalence needs that MDE <= threshold.",
) -> Callable[[F], F]:
    """``--power``: of the minimum detectable effect (and of a plan's design)."""
    return click.option("--power", type=_PROBABILITY, default=0.8, show_default=True, help=help)


def alpha_option(f: F) -> F:
    """``--alpha``: the significance level."""
    return click.option("--alpha", type=_PROBABILITY, default=0.05, show_default=True)(f)


def inference_options(f: F) -> F:
    """``--seed``, ``--n-resamples`` and ``--confidence-level`` (default 0.95): every command
    that computes intervals on one run."""
    return confidence_level_option()(n_resamples_option(seed_option(f)))


def task_name(value: str | None) -> str | None:
    """A ``--task`` of a command that reads runs: a task name, or a task config file
    (``capitals.yaml``, as ``run --task`` takes) standing for the name it declares."""
    if value is None:
        return None
    from .._runner._config import is_task_file

    if not is_task_file(value):
        return value
    from ..tasks import task_from_config

    return str(task_from_config(value).name)


def _task_names(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(task_name(v) for v in value)
    return task_name(value)


def tasks_option(help: str = "Only this task (repeatable).") -> Callable[[F], F]:
    """``--task`` (repeatable), collected as ``tasks``; a task config file stands for its name."""
    return click.option(
        "--task",
        "tasks",
        multiple=True,
        help=help + " A task config file stands for its name.",
        callback=_task_names,
    )


def task_option(help: str) -> Callable[[F], F]:
    """``--task`` (one), a name or a task config file (standing for its name)."""
    return click.option("--task", default=None, help=help, callback=_task_names)


def unmatched_option(f: F) -> F:
    """``--unmatched``: what to do with problems on one side only or changed."""
    return click.option(
        "--unmatched",
        type=click.Choice(["error", "exclude"]),
        default=None,
        help="Problems that changed or exist on one side only: refuse, or compare the shared "
        "unchanged ones. Default: left out (and counted) for tasks paired by content, "
        "refused for tasks paired by name or --task-map.",
    )(f)


def run_noise_option(help: str) -> Callable[[F], F]:
    """``--run-noise FILE``: a run-noise file from ``rolleval noise`` (``run_noise=``)."""
    return click.option(
        "--run-noise", "run_noise", type=click.Path(path_type=str), default=None, help=help
    )


def replicate_options(base: str, cand: str) -> Callable[[F], F]:
    """``--baseline-replicate DIR`` and ``--candidate-replicate DIR`` (repeatable):
    replicate runs of each side (``baseline_replicates=``, ``candidate_replicates=``);
    ``base`` and ``cand`` name the sides' arguments in the help."""

    def add(f: F) -> F:
        f = click.option(
            "--candidate-replicate",
            "candidate_replicates",
            metavar="DIR",
            multiple=True,
            type=click.Path(path_type=str),
            help=f"Another run of {cand}'s configuration that differs only in the run seed "
            "(repeatable); as --baseline-replicate.",
        )(f)
        return click.option(
            "--baseline-replicate",
            "baseline_replicates",
            metavar="DIR",
            multiple=True,
            type=click.Path(path_type=str),
            help=f"Another run of {base}'s configuration that differs only in the run seed "
            "(repeatable): pass@1 counts are pooled over the side's runs and its run-level "
            "variance is measured from them.",
        )(f)

    return add


def observe_option(f: F) -> F:
    """``--observe``: report but exit 0."""
    return click.option(
        "--observe",
        is_flag=True,
        help="Exit 0 for every evaluated comparison (input errors still exit 2).",
    )(f)


def allow_incomplete_option(f: F) -> F:
    """``--allow-incomplete``: give a verdict on an unfinished run."""
    return click.option(
        "--allow-incomplete",
        is_flag=True,
        help="Give a verdict on an unfinished run (otherwise exit 4: resume it first); the result carries the missing counts.",
    )(f)


def output_option(f: F) -> F:
    """``--output``: the full result as JSON."""
    return click.option(
        "--output",
        type=click.Path(dir_okay=False, path_type=str),
        default=None,
        help="Write the full result as JSON.",
    )(f)


def write_output(output: str, data: Any) -> None:
    """Write ``--output``'s JSON atomically, creating its parent directory."""
    import os

    from ..rundir._store import atomic_write_json

    if os.path.dirname(output):
        os.makedirs(os.path.dirname(output), exist_ok=True)
    atomic_write_json(output, data)


def format_option(*choices: str) -> Callable[[F], F]:
    """``--format`` (collected as ``fmt``), the first choice the default."""
    formats = choices or ("text", "json")
    return click.option(
        "--format", "fmt", type=click.Choice(list(formats)), default=formats[0], show_default=True
    )


def html_option(help: str = "Write the result as a self-contained HTML page.") -> Callable[[F], F]:
    """``--html PATH`` (collected as ``html_path``)."""
    return click.option(
        "--html",
        "html_path",
        type=click.Path(dir_okay=False, path_type=str),
        default=None,
        help=help,
    )


def unsafe_exec_option(f: F) -> F:
    """``--unsafe-exec``: code tasks may run unisolated where the sandbox cannot start."""
    from ._unsafe import UNSAFE_EXEC_HELP

    return click.option("--unsafe-exec", is_flag=True, help=UNSAFE_EXEC_HELP)(f)
