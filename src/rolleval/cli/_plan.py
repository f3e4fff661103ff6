"""``rolleval plan``: problems and rollouts for the regression verdict at a true drop."""

from __future__ import annotations

import click
import orjson

from ._app import cli


def render_plan(res: dict) -> str:
    """Text form of :func:`rolleval.compare.plan_runs`'s result."""
    lines = [
        f"rolleval plan: the regression verdict at a true pass@1 drop of {res['effect']:g} "
        f"against the threshold {res['threshold']:g}, with power {res['power']:g} at alpha "
        f"{res['alpha']:g} (paired over problems, normal approximation)"
    ]
    if res.get("note"):
        lines.append(f"  NOTE: {res['note']}")
    for name, e in res["tasks"].items():
        lines.append(f"\ntask {name}: {e['problems']} problems in the pilot; {e['assumption']}")
        if e["status"] != "ok":
            lines.append(f"  N/A: {e['reason']}")
            continue
        power_now = e.get("regression_power_current")
        lines.append(
            f"  current design: minimum detectable effect {e['mde_current']:.4f} "
            f"(significance, {round(100 * res['power'])}% power); chance of the regression "
            f"verdict at a drop of {res['effect']:g}: "
            + ("N/A (no variance)" if power_now is None else f"{power_now:.2f}")
        )
        if e["required_problems"] is None:
            lines.append("  problems needed for the regression verdict: none is enough (see NOTE)")
        else:
            lines.append(
                f"  problems needed for the regression verdict at the current rollouts per "
                f"problem: {e['required_problems']} (for significance alone: "
                f"{e['required_problems_significance']})"
            )
            r = e["required_rollouts_at_current_problems"]
            lines.append(
                f"  rollouts per problem needed at {e['problems']} problems: "
                + (
                    "unreachable by rollouts alone (between-problem variance)"
                    if r is None
                    else str(r)
                )
            )
    return "\n".join(lines)


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
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option("--task", "tasks", multiple=True)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
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
