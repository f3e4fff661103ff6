"""``rolleval plan``: problems and rollouts for the regression verdict at a true drop."""

from __future__ import annotations

import click

from ._app import cli
from ._options import alpha_option, format_option, power_option, tasks_option


@cli.command("plan")
@click.argument("pilot", type=click.Path(path_type=str))
@click.option(
    "--candidate",
    type=click.Path(path_type=str),
    default=None,
    help="A second run, to estimate the paired variance.",
)
@click.option(
    "--effect",
    type=click.FloatRange(min=0, min_open=True),
    default=0.04,
    show_default=True,
    help="The true pass@1 drop to catch.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=0.02,
    show_default=True,
    help="The threshold the comparison will use (rolleval compare --threshold).",
)
@power_option("The chance the planned design gives the regression verdict at the true drop.")
@alpha_option
@tasks_option("Plan only this task (repeatable).")
@format_option()
def plan_cmd(
    pilot: str,
    candidate: str | None,
    effect: float,
    threshold: float,
    power: float,
    alpha: float,
    tasks: tuple[str, ...],
    fmt: str,
) -> int:
    """Problems and rollouts per problem at which `rolleval compare` says REGRESSION for a
    true pass@1 drop of EFFECT (significant and at least THRESHOLD; Miller 2024)."""
    import orjson

    from .._report._render import render_plan
    from ..compare import plan_runs

    res = plan_runs(
        pilot,
        candidate,
        effect=effect,
        threshold=threshold,
        alpha=alpha,
        power=power,
        tasks=list(tasks) or None,
    )
    if fmt == "json":
        click.echo(orjson.dumps(res, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_plan(res))
    return 0
