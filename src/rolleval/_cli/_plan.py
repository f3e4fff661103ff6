"""``rolleval plan``: problems and rollouts for the regression verdict at a true drop."""

from __future__ import annotations

import click

from ._app import cli
from ._options import (
    alpha_option,
    format_option,
    n_resamples_option,
    power_option,
    run_noise_option,
    tasks_option,
)


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
@click.option(
    "--sequential",
    is_flag=True,
    help="Also simulate `run --until-decided` against PILOT: problems to a verdict at EFFECT.",
)
@click.option(
    "--max-problems",
    type=click.IntRange(min=1),
    default=None,
    help="Budget of the simulated sequential run [the pilot's problems].",
)
@click.option(
    "--sims", type=click.IntRange(min=1), default=1000, show_default=True, help="Simulations."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulations.")
@n_resamples_option
@run_noise_option(
    "Run-noise file from `rolleval noise`: plan with the endpoint's run-level variance v "
    "(the effect's variance gains v_baseline/runs + v_candidate/runs)."
)
@click.option(
    "--runs-per-side",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs per side of the planned comparison: 1 (compare --run-noise, v known) or K "
    "replicate runs (compare --baseline-replicate/--candidate-replicate: v estimated from "
    "each side's runs, Student t with Satterthwaite df).",
)
@format_option()
def plan_cmd(
    pilot: str,
    candidate: str | None,
    effect: float,
    threshold: float,
    power: float,
    alpha: float,
    tasks: tuple[str, ...],
    sequential: bool,
    max_problems: int | None,
    sims: int,
    seed: int,
    n_resamples: int,
    run_noise: str | None,
    runs_per_side: int,
    fmt: str,
) -> int:
    """Problems and rollouts per problem at which `rolleval compare` says REGRESSION for a
    true pass@1 drop of EFFECT (significant and at least THRESHOLD; Miller 2024). A size of
    100 problems or fewer is checked by simulating compare's rule (--sims, --n-resamples).
    With --run-noise and/or --runs-per-side the sizes include the run-level variance (a
    Student t reference when the runs per side estimate it), without that simulation."""
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
        sequential=sequential,
        max_problems=max_problems,
        n_sims=sims,
        rng=seed,
        n_resamples=n_resamples,
        run_noise=run_noise,
        runs_per_side=runs_per_side,
    )
    if fmt == "json":
        click.echo(orjson.dumps(res.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_plan(res.to_dict()))
    return 0
