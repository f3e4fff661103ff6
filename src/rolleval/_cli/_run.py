from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._sanitize import redact, terminal_safe
from ..errors import UsageError
from ._app import Interrupted, cli
from ._options import unsafe_exec_option
from ._unsafe import unsafe_exec_scope

if TYPE_CHECKING:
    from .._runner import SequentialOptions


@contextlib.contextmanager
def _resume_hint_on_interrupt(out: str) -> Iterator[None]:
    """Ctrl-C (or SIGTERM) after the run directory exists: the message names the command
    that continues it."""
    try:
        yield
    except KeyboardInterrupt:
        if (Path(out) / "manifest.json").exists():
            from .._runner import resume_command

            raise Interrupted(f"resume with: {resume_command(out)}") from None
        raise


@cli.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML run config; flags override it.",
)
@click.option(
    "--model",
    default=None,
    help="Model name at the endpoint, or 'local' for the embedded llama.cpp model.",
)
@click.option(
    "--endpoint",
    "endpoints",
    multiple=True,
    help="Base URL, e.g. http://127.0.0.1:8000/v1 (repeatable).",
)
@click.option(
    "--task",
    "tasks",
    multiple=True,
    help="Task name or task config file (repeatable); `rolleval tasks` lists the built-in ones.",
)
@click.option(
    "-n",
    "--rollouts",
    "n_rollouts",
    type=click.IntRange(min=1),
    default=None,
    help="Rollouts per problem [8].",
)
@click.option(
    "--k",
    "ks",
    type=click.IntRange(min=1),
    multiple=True,
    help="k values to report (repeatable) [powers of two up to n].",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="First N problems of each task (sorted ids).",
)
@click.option("--seed", type=int, default=None, help="Run seed [0].")
@click.option("--temperature", type=click.FloatRange(min=0), default=None)
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=None)
@click.option("--max-tokens", type=click.IntRange(min=1), default=None)
@click.option("--stop", "stop", multiple=True, help="Stop sequence (repeatable).")
@click.option("--api", type=click.Choice(["chat", "completions"]), default=None)
@click.option(
    "--api-key-env", default=None, help="Name of the environment variable holding the API key."
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=None, help="Requests in flight [8]."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Per-request timeout, seconds [120].",
)
@click.option(
    "--server-option",
    "server_options",
    multiple=True,
    help="llama.cpp server setting KEY=VALUE for --model local (repeatable).",
)
@click.option("--denominator-policy", type=click.Choice(["judged", "requested"]), default=None)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=str),
    help="Run directory to create (or continue with --resume).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the run in --out with its stored settings (no other flag needed; any given must match): only missing or failed rollouts are requested.",
)
@click.option(
    "--server-n",
    is_flag=True,
    default=None,
    help="One request per problem with n = its pending rollouts (servers that honour n only).",
)
@click.option("--no-progress", is_flag=True, help="Do not print progress.")
@click.option(
    "--baseline",
    "baseline",
    type=click.Path(path_type=str),
    default=None,
    help="With --until-decided: BASE, a run directory or a `rolleval baseline save` file.",
)
@click.option(
    "--until-decided",
    is_flag=True,
    help="Visit BASE's problems in a seeded random order and stop when the verdict is settled.",
)
@click.option(
    "--max-problems",
    type=click.IntRange(min=1),
    default=None,
    help="Budget per task for --until-decided [all of BASE's problems].",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Margin of the sequential verdict (pass@1 units) [0.02].",
)
@click.option(
    "--round-size",
    type=click.IntRange(min=1),
    default=None,
    help="Problems per round of --until-decided; the sequence is looked at after each [10].",
)
@click.option("--all-metrics", is_flag=True, help="Print every metric, grouped.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the run's size (problems, rollouts, requests, tokens) and stop: nothing is requested or written.",
)
@unsafe_exec_option
def run_cmd(
    config_path: str | None,
    out: str,
    resume: bool,
    no_progress: bool,
    dry_run: bool,
    all_metrics: bool,
    unsafe_exec: bool,
    baseline: str | None,
    until_decided: bool,
    max_problems: int | None,
    threshold: float | None,
    round_size: int | None,
    **flags: Any,
) -> int:
    """Run n rollouts per problem against an OpenAI-compatible endpoint, grade and report.

    Exit 0 when the run completed, 4 when every rollout failed, 2 on bad input, 130 when
    interrupted (the run directory is then resumable with --resume). With --until-decided:
    the verdict's exit code (0 pass, 1 regression, 3 inconclusive at the budget).
    """
    sequential = _sequential_options(baseline, until_decided, max_problems, threshold, round_size)
    from .._report._render import render_run_report
    from .._runner import run_eval
    from .._runner._config import OldSettingWarning, config_from_flags, stored_settings

    base = stored_settings(out) if resume else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OldSettingWarning)
        config = config_from_flags(config_path, flags, base=base)
    for w in caught:
        if issubclass(w.category, OldSettingWarning):
            click.echo(terminal_safe(f"rolleval: warning: {w.message}", one_line=True), err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if dry_run:
        from .._runner._size import render_size, run_size

        click.echo(render_size(run_size(config, out, resume=resume)))
        return 0
    with unsafe_exec_scope(unsafe_exec), _resume_hint_on_interrupt(out):
        outcome = run_eval(
            config,
            out,
            resume=resume,
            progress=not no_progress,
            on_event=lambda m: click.echo(terminal_safe(redact(m), one_line=True), err=True),
            sequential=sequential,
        )
    click.echo(terminal_safe(render_run_report(outcome.report, all_metrics=all_metrics)))
    click.echo(
        f"\n{outcome.completed} rollouts completed, {outcome.failed} failed, in {outcome.seconds:.1f}s; "
        f"run directory {outcome.path} (report.json inside)"
    )
    if outcome.sequential is not None:
        from ..compare._sequential import sequential_summary

        click.echo(terminal_safe(sequential_summary(outcome.sequential)))
    return outcome.exit_code


def _sequential_options(
    baseline: str | None,
    until_decided: bool,
    max_problems: int | None,
    threshold: float | None,
    round_size: int | None,
) -> SequentialOptions | None:
    if not until_decided:
        given = [
            name
            for name, value in (
                ("--baseline", baseline),
                ("--max-problems", max_problems),
                ("--threshold", threshold),
                ("--round-size", round_size),
            )
            if value is not None
        ]
        if given:
            raise UsageError(f"{given[0]} applies only with --until-decided")
        return None
    if baseline is None:
        raise UsageError("--until-decided needs --baseline BASE (a run directory or baseline file)")
    from .._runner import SequentialOptions

    return SequentialOptions(
        baseline=baseline,
        threshold=0.02 if threshold is None else threshold,
        max_problems=max_problems,
        round_problems=10 if round_size is None else round_size,
    )
