from __future__ import annotations

import click

from ..render import emit
from ..store import atomic_write_json
from ._app import cli


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
@click.option("--n-resamples", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="Power of the minimum detectable effect; a pass by equivalence needs MDE <= threshold.",
)
@click.option(
    "--confidence-level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Of the intervals [1 - the policy's alpha].",
)
@click.option(
    "--unmatched", type=click.Choice(["error", "exclude"]), default="error", show_default=True
)
@click.option("--observe", is_flag=True, help="Report but exit 0 (input errors still exit 2).")
@click.option(
    "--task",
    "tasks",
    multiple=True,
    help="Gate only this task (repeatable; overrides the policy's tasks).",
)
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Gate an unfinished run (otherwise exit 4: resume it first); the result carries the missing counts.",
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
    default="github",
    show_default=True,
    help="md: GitHub Markdown; github: md, also appended to $GITHUB_STEP_SUMMARY when set.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the result as a self-contained HTML page.",
)
def gate_cmd(
    fmt: str,
    html_path: str | None,
    run: str,
    baseline: str,
    policy: str | None,
    n_resamples: int,
    seed: int,
    power: float,
    confidence_level: float | None,
    unmatched: str,
    observe: bool,
    tasks: tuple[str, ...],
    allow_incomplete: bool,
    output: str | None,
) -> int:
    """Gate RUN against a baseline: exit 1 if a regression is established or a limit broken,
    3 if a gating metric is inconclusive or a baseline task is missing from RUN, 4 if the run
    failed (incomplete, or infra errors over the limit), 0 otherwise. Prints a Markdown summary
    (also appended to $GITHUB_STEP_SUMMARY when set)."""
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
    )
    data = res.to_dict()
    click.echo(emit("gate", data, fmt))
    if output:
        atomic_write_json(output, data)
    if html_path:
        from ..html import gate_html, write_html

        click.echo(f"HTML report: {write_html(html_path, gate_html(data))}", err=fmt == "json")
    if fmt != "json":
        click.echo(f"\ngate: {res.verdict} (exit {res.exit_code})")
    return res.exit_code


@cli.group("baseline")
def baseline_group() -> None:
    """Compact baselines for CI gating."""


@baseline_group.command("save")
@click.argument("run", type=click.Path(path_type=str))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=str))
@click.option("--force", is_flag=True, help="Replace an existing file.")
def baseline_save_cmd(run: str, out: str, force: bool) -> int:
    """Store RUN's per-problem counts, metric values, content hashes and provenance in OUT."""
    from ..compare import save_baseline

    doc = save_baseline(run, out, overwrite=force)
    counts = ", ".join(
        f"{name}: {len(task['ids'])} problems" for name, task in doc["tasks"].items()
    )
    click.echo(f"baseline written to {out} ({counts})")
    return 0
