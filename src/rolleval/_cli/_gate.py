from __future__ import annotations

import sys
from typing import Literal

import click

from .._report._formats import FORMATS
from ._app import cli, will_exit
from ._options import (
    allow_incomplete_option,
    confidence_level_option,
    html_option,
    n_resamples_option,
    observe_option,
    output_option,
    power_option,
    replicate_options,
    run_noise_option,
    seed_option,
    tasks_option,
    unmatched_option,
    write_output,
)


@cli.command("gate")
@click.argument("run", type=click.Path(path_type=str))
@click.option(
    "--baseline",
    required=True,
    type=click.Path(path_type=str),
    help="Baseline run directory or baseline file.",
)
@click.option(
    "--policy",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Policy YAML [pass@1 within 0.02; unextracted rate +0.02 at most; infra errors under 2%].",
)
@n_resamples_option
@seed_option
@power_option()
@confidence_level_option(default=None, help="Of the intervals [1 - the policy's alpha].")
@unmatched_option
@observe_option
@tasks_option("Gate only this task (repeatable; overrides the policy's tasks).")
@click.option(
    "--task-map",
    "task_map",
    metavar="BASE=CAND",
    multiple=True,
    help="Pair baseline task BASE with task CAND of RUN (repeatable): for runs that name "
    "one benchmark differently and whose problems do not match by content.",
)
@run_noise_option(
    "Run-noise file from `rolleval noise` (A/A replicates of the endpoint): widen the pass@1 "
    "comparisons by the measured run-level variance [the policy's run_noise]."
)
@replicate_options("--baseline", "RUN")
@allow_incomplete_option
@output_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default=None,
    help="[text on a terminal, github otherwise (Markdown, also appended to $GITHUB_STEP_SUMMARY)]",
)
@html_option()
def gate_cmd(
    fmt: str | None,
    html_path: str | None,
    run: str,
    baseline: str,
    policy: str | None,
    n_resamples: int,
    seed: int,
    power: float,
    confidence_level: float | None,
    unmatched: Literal["error", "exclude"] | None,
    observe: bool,
    tasks: tuple[str, ...],
    task_map: tuple[str, ...],
    allow_incomplete: bool,
    run_noise: str | None,
    baseline_replicates: tuple[str, ...],
    candidate_replicates: tuple[str, ...],
    output: str | None,
) -> int:
    """Gate RUN against a baseline: exit 1 if a regression is established or a limit broken,
    3 if a gating metric is inconclusive or a baseline task is missing from RUN, 4 if the run
    failed (incomplete, or infra errors over the limit), 0 otherwise. Prints text on a
    terminal; elsewhere (CI) a Markdown summary, also appended to $GITHUB_STEP_SUMMARY when set.

    With --run-noise or --baseline-replicate/--candidate-replicate the pass@1 comparisons
    include the run-level variance, as in `rolleval compare`; without, the output notes that
    they assume none."""
    from .._report._render import emit
    from ..compare import gate_run, load_policy

    res = gate_run(
        run,
        baseline,
        policy=load_policy(policy),
        n_resamples=n_resamples,
        rng=seed,
        power=power,
        confidence_level=confidence_level,
        unmatched=unmatched,
        observe=observe,
        allow_incomplete=allow_incomplete,
        tasks=list(tasks) or None,
        task_map=list(task_map) or None,
        run_noise=run_noise,
        baseline_replicates=baseline_replicates,
        candidate_replicates=candidate_replicates,
    )
    will_exit(res.exit_code)
    if fmt is None:
        fmt = "text" if sys.stdout.isatty() else "github"
    data = res.to_dict()
    click.echo(emit("gate", data, fmt))
    if output:
        write_output(output, data)
    if html_path:
        from .._report._html import gate_html, write_html

        click.echo(f"HTML report: {write_html(html_path, gate_html(data))}", err=fmt == "json")
    if fmt != "json":
        click.echo(f"\ngate: {res.verdict} (exit {res.exit_code})")
    return res.exit_code
