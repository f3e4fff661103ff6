"""``rolleval baseline save``: a compact baseline file for CI gating."""

from __future__ import annotations

import click

from ._app import cli


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

    baseline = save_baseline(run, out, overwrite=force)
    counts = ", ".join(f"{name}: {len(task.ids)} problems" for name, task in baseline.tasks.items())
    click.echo(f"baseline written to {out} ({counts})")
    return 0
