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
    replicate_options,
    run_noise_option,
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
@run_noise_option(
    "Run-noise file from `rolleval noise` (A/A replicates of the endpoint): widen the "
    "interval and p-value by the measured run-level variance."
)
@replicate_options("BASELINE", "CANDIDATE")
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

    A CANDIDATE made by `run --until-decided` gets its recorded sequential verdict against
    its own BASE, in every --format and --html; a flag it cannot honour exits 2.
    """
    from ..compare import compare_runs
    from ..compare._sequential_run import sequential_design_of

    design = sequential_design_of(candidate)
    if design is not None:
        _refuse_unhonoured(candidate, design.model_dump(mode="json"), metric, threshold, alpha)
        return _sequential(
            baseline, candidate, tasks, observe, require_provenance, output, fmt, html_path
        )
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
    return _finish(res.to_dict(), res.exit_code, output, fmt, html_path)


def _finish(
    data: dict[str, Any], exit_code: int, output: str | None, fmt: str, html_path: str | None
) -> int:
    """Write ``--output``, print ``--format``, write ``--html``: one comparison's result (a
    fixed-design or a sequential one: the renderers tell them apart by its ``design``)."""
    from .._report._render import emit

    will_exit(exit_code)
    if output:
        write_output(output, data)
    click.echo(emit("compare", data, fmt))
    if html_path:
        from .._report._html import compare_html, write_html

        click.echo(f"HTML report: {write_html(html_path, compare_html(data))}", err=fmt != "text")
    return exit_code


#: The compare flags a sequential candidate cannot honour, with why (one usage error each).
_SEQUENTIAL_REFUSES = {
    "power": "a sequential verdict has no minimum detectable effect: the run stopped when its "
    "confidence sequence decided",
    "confidence_level": "the confidence sequence's level is the run's recorded alpha",
    "n_resamples": "a sequential verdict uses no bootstrap or other resampling",
    "seed": "a sequential verdict uses no resampling seed; the visit order's seed is recorded in the run",
    "task_map": "a sequential run pairs each task with BASE's task of the same name, fixed when "
    "it started",
    "unmatched": "a sequential run's problems are BASE's, matched when it started",
    "run_noise": "the confidence sequence has no run-level variance term",
    "baseline_replicates": "a sequential run is judged by its recorded design against its own "
    "BASE alone",
    "candidate_replicates": "a sequential run is judged by its recorded design against its own "
    "BASE alone",
    "allow_incomplete": "a sequential verdict holds wherever the run stopped (the confidence "
    "sequence is anytime-valid): there is nothing to allow",
}


def _refuse_unhonoured(
    candidate: str, design: dict[str, Any], metric: str, threshold: float | None, alpha: float
) -> None:
    """``UsageError`` (exit 2) naming the first compare flag given that a sequential
    candidate cannot honour; ``--metric``, ``--threshold`` and ``--alpha`` are honoured when
    they restate the recorded design, refused when they differ from it."""
    from click.core import ParameterSource

    from ..errors import UsageError

    ctx = click.get_current_context()
    given = {
        p.name
        for p in ctx.command.params
        if p.name
        and ctx.get_parameter_source(p.name)
        not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    }
    for name, why in _SEQUENTIAL_REFUSES.items():
        if name in given:
            flag = next(p.opts[0] for p in ctx.command.params if p.name == name)
            raise UsageError(
                f"{flag}: {candidate} is a sequential run (--until-decided): {why}; drop {flag}"
            )
    recorded = {
        "metric": design["metric"],
        "threshold": design["threshold"],
        "alpha": design["alpha"],
    }
    asked = {"metric": metric, "threshold": threshold, "alpha": alpha}
    for name, value in asked.items():
        if name in given and not _restates(name, value, recorded[name]):
            raise UsageError(
                f"--{name} {value}: {candidate} is a sequential run that stopped on its recorded "
                f"{name} {recorded[name]} (its looks and verdict depend on it); drop --{name} "
                f"or give {recorded[name]}"
            )


def _restates(name: str, value: Any, recorded: Any) -> bool:
    """Whether a flag's value is the recorded design's (a metric in any spelling)."""
    if name != "metric":
        return bool(float(value) == float(recorded))
    from ..metrics import parse_metric_name

    try:
        return parse_metric_name(str(value)) == parse_metric_name(str(recorded))
    except ValueError:
        return str(value).strip().lower() == str(recorded).strip().lower()


def _sequential(
    baseline: str,
    candidate: str,
    tasks: tuple[str, ...],
    observe: bool,
    require_provenance: bool,
    output: str | None,
    fmt: str,
    html_path: str | None,
) -> int:
    """A sequential candidate: its recorded design's verdict, in every format and --html."""
    from ..compare._sequential_run import compare_sequential_run

    res = compare_sequential_run(
        baseline,
        candidate,
        tasks=list(tasks) or None,
        observe=observe,
        require_provenance=require_provenance,
    )
    return _finish(res.to_dict(), res.exit_code, output, fmt, html_path)


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
