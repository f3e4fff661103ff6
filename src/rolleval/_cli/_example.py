from __future__ import annotations

import click

from ._app import cli


@cli.command("example")
@click.argument("out", type=click.Path(path_type=str))
@click.option("--problems", type=click.IntRange(min=1), default=200, show_default=True)
@click.option(
    "-n",
    "--rollouts",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Rollouts per problem.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the problems (their answers and true success rates).",
)
@click.option(
    "--sampling-seed",
    type=int,
    default=None,
    help="Seed of the rollout outcomes [--seed]: the same --seed with two sampling seeds is an A/A pair (two samplings of one benchmark).",
)
@click.option(
    "--shift",
    type=float,
    default=0.0,
    show_default=True,
    help="Added to every true success rate (a candidate that regressed: -0.05).",
)
def example_cmd(
    out: str, problems: int, rollouts: int, seed: int, sampling_seed: int | None, shift: float
) -> int:
    """Write a synthetic run directory OUT (no model needed) with a few injected faults."""
    from ..testing._synthetic import write_synthetic_run

    rd = write_synthetic_run(
        out,
        n_problems=problems,
        n_rollouts=rollouts,
        rng=seed,
        outcome_rng=sampling_seed,
        shift=shift,
        p_infra_error=0.01,
        p_grader_error=0.005,
        p_unextracted=0.05,
        p_truncated=0.02,
    )
    click.echo(f"synthetic run {rd.info.run_id} written to {out}")
    return 0
