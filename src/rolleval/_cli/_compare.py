from __future__ import annotations

import os
from typing import Any, Literal

import click

from .._report._formats import FORMATS
from ._app import cli, will_exit
from ._options import (
    allow_incomplete_option,
    alpha_option,
    confidence_level_option,
    format_option,
    html_option,
    n_resamples_option,
    observe_option,
    output_option,
    power_option,
    seed_option,
    tasks_option,
    unmatched_option,
    write_output,
)


@cli.command("compare")
@click.argument("baseline", type=click.Path(path_type=str))
@click.argument("candidate", type=click.Path(path_type=str))
@click.option(
    "--metric",
    default="pass@1",
    show_default=True,
    help="Any metric key a report prints (pass@1, pass@K, pass^K, G-Pass@K_TAU, mG-Pass@K, consecutive-pass^K, maj@n, self_consistency) or a health metric (unextracted_rate, truncation_rate, infra_error_rate, timeout_rate, grader_error_rate, output_tokens).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=None,
    help="Practical threshold, absolute on the metric's scale [0.02 for rates].",
)
@alpha_option
@power_option()
@confidence_level_option(default=None)
@n_resamples_option
@seed_option
@tasks_option("Compare only this task (repeatable).")
@click.option(
    "--task-map",
    "task_map",
    metavar="BASE=CAND",
    multiple=True,
    help="Pair baseline task BASE with candidate task CAND (repeatable): for runs that name "
    "one benchmark differently and whose problems do not match by content.",
)
@unmatched_option
@click.option(
    "--require-provenance",
    is_flag=True,
    help="Refuse runs without content hashes instead of aligning by id.",
)
@click.option(
    "--run-noise",
    "run_noise",
    type=click.Path(path_type=str),
    default=None,
    help="Run-noise file from `rolleval noise` (A/A replicates of the endpoint): widen the "
    "interval and p-value by the measured run-level variance.",
)
@click.option(
    "--baseline-replicate",
    "baseline_replicates",
    metavar="DIR",
    multiple=True,
    type=click.Path(path_type=str),
    help="Another run of BASELINE's configuration that differs only in the run seed "
    "(repeatable): pass@1 counts are pooled over the side's runs and its run-level variance "
    "is measured from them.",
)
@click.option(
    "--candidate-replicate",
    "candidate_replicates",
    metavar="DIR",
    multiple=True,
    type=click.Path(path_type=str),
    help="Another run of CANDIDATE's configuration that differs only in the run seed "
    "(repeatable); as --baseline-replicate.",
)
@observe_option
@allow_incomplete_option
@output_option
@format_option(*FORMATS)
@html_option()
def compare_cmd(
    html_path: str | None,
    baseline: str,
    candidate: str,
    metric: str,
    threshold: float | None,
    alpha: float,
    power: float,
    confidence_level: float | None,
    n_resamples: int,
    seed: int,
    tasks: tuple[str, ...],
    task_map: tuple[str, ...],
    unmatched: Literal["error", "exclude"] | None,
    require_provenance: bool,
    observe: bool,
    allow_incomplete: bool,
    run_noise: str | None,
    baseline_replicates: tuple[str, ...],
    candidate_replicates: tuple[str, ...],
    output: str | None,
    fmt: str,
) -> int:
    """Compare CANDIDATE with BASELINE problem by problem and give a verdict.

    BASELINE is a run directory or a baseline file (`rolleval baseline save`). Exit 0:
    no regression (improvement, equivalent, or a significant change below the threshold);
    1: regression; 3: inconclusive, not enough evidence, or a baseline task missing from the
    candidate; 2: the runs cannot be compared; 4: a run is incomplete (resume it).
    """
    from .._report._render import emit
    from ..compare import compare_runs
    from ..compare._sequential_run import compare_sequential_run, sequential_design_of

    if sequential_design_of(candidate) is not None:
        if baseline_replicates or candidate_replicates:
            from ..errors import UsageError

            raise UsageError(
                f"{candidate}: a sequential run (--until-decided) is judged by its recorded "
                "design against its own BASE; drop --baseline-replicate/--candidate-replicate"
            )
        return _sequential(baseline, candidate, fmt, output, compare_sequential_run)
    res = compare_runs(
        baseline,
        candidate,
        metric=metric,
        threshold=threshold,
        alpha=alpha,
        power=power,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=seed,
        tasks=list(tasks) or None,
        unmatched=unmatched,
        require_provenance=require_provenance,
        observe=observe,
        allow_incomplete=allow_incomplete,
        run_noise=run_noise,
        task_map=list(task_map) or None,
        baseline_replicates=baseline_replicates,
        candidate_replicates=candidate_replicates,
    )
    will_exit(res.exit_code)
    data = res.to_dict()
    if output:
        write_output(output, data)
    click.echo(emit("compare", data, fmt))
    if html_path:
        from .._report._html import compare_html, write_html

        click.echo(f"HTML report: {write_html(html_path, compare_html(data))}", err=fmt != "text")
    return res.exit_code


def _sequential(baseline: str, candidate: str, fmt: str, output: str | None, run: Any) -> int:
    """A sequential candidate: its recorded design's verdict (text names the design)."""
    import json

    from ..compare._sequential import sequential_summary

    res = run(baseline, candidate)
    data = res.to_dict()
    if output:
        write_output(output, data)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        from .._report._document import changed_blocks
        from .._report._render import to_markdown, to_text

        click.echo(f"compare ({data['method']})")
        click.echo(sequential_summary(res.design))
        click.echo(f"verdict: {data['verdict']} (exit {data['exit_code']})")
        blocks = changed_blocks(data["what_changed"])
        click.echo(to_text(blocks) if fmt == "text" else to_markdown(blocks))
    return int(res.exit_code)


@cli.command("noise")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=str))
@output_option
def noise_cmd(runs: tuple[str, ...], output: str | None) -> int:
    """Measure an endpoint's run-level noise from A/A replicate RUNS (2 or more; 8+ advised).

    The runs must differ only in the run seed. Prints per task the variance of pass@1
    across runs against the binomial variance of independent rollouts (ratio, chi-square
    p-value) and the run-level variance; --output writes the file `rolleval compare
    --run-noise` reads.
    """
    from ..compare import measure_run_noise, save_run_noise

    noise = measure_run_noise(list(runs))
    for task, nz in noise.items():
        ratio = "N/A (no problem between 0 and 1)" if nz.ratio is None else f"{nz.ratio:.2f}"
        p = "N/A" if nz.pvalue is None else f"{nz.pvalue:.3g}"
        click.echo(
            f"{task}: {nz.n_runs} runs x {nz.n_problems} problems; pass@1 by run "
            f"{', '.join(f'{m:.4f}' for m in nz.run_means)}; variance ratio {ratio} "
            f"(chi2 df {nz.df}, p = {p}); run-level variance {nz.run_variance:.3g} "
            f"(upper {nz.confidence_level:.0%} {nz.run_variance_upper:.3g})"
        )
    if output:
        if os.path.dirname(output):
            os.makedirs(os.path.dirname(output), exist_ok=True)
        save_run_noise(output, noise, list(runs))
        click.echo(f"run-noise file: {output}")
    return 0
