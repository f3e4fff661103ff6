from __future__ import annotations

import time

import click

from .._sanitize import redact, terminal_safe
from ._app import cli
from ._options import task_option, unsafe_exec_option
from ._unsafe import unsafe_exec_scope


@cli.command("regrade")
@click.argument("run", type=click.Path(file_okay=False, path_type=str))
@task_option("Regrade only this task (a name, or a task config file).")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=None,
    help="Grading processes (0 = in this process).",
)
@click.option(
    "--thinking",
    default=None,
    metavar="OPEN,CLOSE|none",
    help="Split the stored texts by these thinking delimiters (e.g. '<think>,</think>'), "
    "or 'none' to grade them whole; stored in task.json. Default: the task's own.",
)
@unsafe_exec_option
def regrade_cmd(
    run: str, task: str | None, workers: int | None, thinking: str | None, unsafe_exec: bool
) -> int:
    """Re-judge RUN's stored rollouts with each task's current grader, then refresh the report.

    No model calls. The previous judgements are kept as judgements.prev.jsonl.
    """
    from .._report._api import report_run
    from .._runner._regrade import regrade_run

    last = [0.0]

    def progress(name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= 5.0:
            last[0] = now
            click.echo(f"regrading {name}: {done}/{total} problems", err=True)

    with unsafe_exec_scope(unsafe_exec):
        res = regrade_run(
            run, task=task, workers=workers, on_progress=progress, thinking=_thinking(thinking)
        )
    for w in res.warnings:
        click.echo(terminal_safe(redact(f"rolleval: warning: {w}"), one_line=True), err=True)
    for name, counts in res.tasks.items():
        click.echo(
            f"{name}: {counts['graded']} of {counts['rollouts']} rollouts graded, {counts['changed']} judgements changed"
        )
    rep = report_run(run)
    click.echo(f"report written to {rep.path}")
    return 0


def _thinking(value: str | None) -> list[str] | str | None:
    """``--thinking``: ``none``, or ``OPEN,CLOSE`` split at the one comma."""
    if value is None or value == "none":
        return value
    from ..errors import UsageError

    parts = value.split(",")
    if len(parts) != 2:
        raise UsageError(
            f"--thinking takes OPEN,CLOSE (one comma, e.g. '<think>,</think>') or none, got {value!r}"
        )
    return parts
