from __future__ import annotations

import click

from .._report._formats import FORMATS
from .._sanitize import redact, terminal_safe
from ._app import cli
from ._options import format_option, html_option, inference_options


@cli.command("report")
@click.argument("run", type=click.Path(file_okay=False, path_type=str))
@format_option(*FORMATS)
@click.option("--no-write", is_flag=True, help="Print only; do not rewrite report.json.")
@click.option(
    "--all-metrics",
    is_flag=True,
    help="Every metric, grouped (default: pass@1, pass@k and pass^k with the health lines).",
)
@html_option("Also write the report as a self-contained HTML page.")
@inference_options
def report_cmd(
    run: str,
    fmt: str,
    no_write: bool,
    all_metrics: bool,
    html_path: str | None,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> int:
    """Recompute RUN's report from its stored judgements (no model calls) and print it.

    Writes RUN/report.json and each task's report.json atomically. --format md prints GitHub
    Markdown; github also appends it to $GITHUB_STEP_SUMMARY.
    """
    from .._report._api import report_run
    from .._report._render import emit

    res = report_run(
        run,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=seed,
        write=not no_write,
    )
    for w in res.warnings:
        click.echo(terminal_safe(redact(f"rolleval: warning: {w}"), one_line=True), err=True)
    click.echo(emit("run", res.report, fmt, all_metrics=all_metrics))
    if fmt == "text" and res.path is not None:
        click.echo(f"\nreport written to {res.path}")
    if html_path:
        from .._report._html import report_html, write_html

        page = report_html(res.report, run=run)
        click.echo(f"HTML report: {write_html(html_path, page)}", err=fmt != "text")
    return 0
