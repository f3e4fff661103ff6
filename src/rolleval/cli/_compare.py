from __future__ import annotations

import os

import click

from ..render import emit
from ..store import atomic_write_json
from ._app import cli


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
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="Power of the minimum detectable effect; equivalence needs that MDE <= threshold.",
)
@click.option(
    "--confidence-level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Of the interval [1 - alpha].",
)
@click.option("--n-resamples", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--task", "tasks", multiple=True, help="Compare only this task (repeatable).")
@click.option(
    "--unmatched",
    type=click.Choice(["error", "exclude"]),
    default="error",
    show_default=True,
    help="Problems that changed or exist on one side only: refuse, or compare the shared unchanged ones.",
)
@click.option(
    "--require-provenance",
    is_flag=True,
    help="Refuse runs without content hashes instead of aligning by id.",
)
@click.option(
    "--observe",
    is_flag=True,
    help="Exit 0 for every evaluated comparison (input errors still exit 2).",
)
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Give a verdict on an unfinished run (otherwise exit 4: resume it first); the result carries the missing counts.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the full result as JSON.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "md", "github"]),
    default="text",
    show_default=True,
    help="md: GitHub Markdown for a PR comment; github: md, also appended to $GITHUB_STEP_SUMMARY.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the result as a self-contained HTML page.",
)
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
    unmatched: str,
    require_provenance: bool,
    observe: bool,
    allow_incomplete: bool,
    output: str | None,
    fmt: str,
) -> int:
    """Compare CANDIDATE with BASELINE problem by problem and give a verdict.

    BASELINE is a run directory or a baseline file (`rolleval baseline save`). Exit 0:
    no regression (improvement, equivalent, or a significant change below the threshold);
    1: regression; 3: inconclusive, not enough evidence, or a baseline task missing from the
    candidate; 2: the runs cannot be compared; 4: a run is incomplete (resume it).
    """
    from ..compare import compare_runs

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
        allow_incomplete=allow_incomplete,  # type: ignore[arg-type]
    )
    data = res.to_dict()
    if output:
        if os.path.dirname(output):
            os.makedirs(os.path.dirname(output), exist_ok=True)
        atomic_write_json(output, data)
    click.echo(emit("compare", data, fmt))
    if html_path:
        from ..html import compare_html, write_html

        click.echo(f"HTML report: {write_html(html_path, compare_html(data))}", err=fmt != "text")
    return res.exit_code
