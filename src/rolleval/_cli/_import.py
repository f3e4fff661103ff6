from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ._app import cli

if TYPE_CHECKING:
    from .._importers import ImportResult

#: ``rolleval._importers.FORMATS``, spelled here so that the CLI starts without loading the
#: importers (tests/project/test_import_cost.py checks that the two agree).
FORMATS = ("lm-eval", "inspect", "lighteval", "tracelens", "sieval")


def _summary_lines(summary: ImportResult) -> list[str]:
    totals = summary.totals
    lines = [
        f"imported {summary.format} {summary.source}: {totals['tasks']} task(s), "
        f"{totals['problems']} problems, {totals['rollouts']} rollouts; "
        + (
            f"judgements regraded by rolleval ({summary.regrade_grader['type']})"
            if summary.regrade_grader
            else "judgements from the source's own per-sample scores"
        )
    ]
    for name, t in summary.tasks.items():
        lines.append(
            f"  {name}: {t.problems} problems, {t.rollouts} rollouts, aligned by {t.aligned_by.replace('_', ' ')}"
        )
        lines.extend(f"    note: {n}" for n in t.notes)
        for u in t.unmapped:
            lines.append(f"    not mapped: {u['field']} ({u['reason']}): {u['count']}")
    return lines


@cli.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(list(FORMATS)))
@click.argument("source", type=click.Path(path_type=str))
@click.option(
    "--out", required=True, type=click.Path(path_type=str), help="Run directory to create."
)
@click.option(
    "--regrade",
    "regrade",
    metavar="TYPE",
    default=None,
    help="Re-judge every stored rollout with rolleval's grader of this type "
    "(math, mcq, short_answer) instead of using the source's per-sample scores.",
)
@click.option(
    "--task-name",
    "task_name",
    metavar="NAME|OLD=NEW",
    multiple=True,
    help="Name the imported task NAME (one-task sources), or rename task OLD to NEW "
    "(repeatable), e.g. to share a task name with a run from another harness.",
)
def import_cmd(
    fmt: str, source: str, out: str, regrade: str | None, task_name: tuple[str, ...]
) -> int:
    """Turn another harness's output (SOURCE, written by FORMAT) into a rolleval run at --out.

    FORMAT is lm-eval (an --output_path folder or one samples file), inspect (a log folder,
    .eval or .json log), lighteval (an --output-dir folder), tracelens (a --save-trials
    JSON) or sieval (a result directory). report, show, compare and gate then work on the
    run. Nothing is written at --out unless the whole import succeeds.
    """
    from .._importers import import_run

    summary = import_run(fmt, source, out, regrade=regrade, task_name=list(task_name) or None)
    for line in _summary_lines(summary):
        click.echo(line)
    click.echo(f"run written to {out}")
    return 0
