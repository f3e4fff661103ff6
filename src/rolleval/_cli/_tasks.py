from __future__ import annotations

import click

from ._app import cli


@cli.command("tasks")
def tasks_cmd() -> int:
    """List the built-in tasks."""
    from ..tasks import list_tasks

    for spec in list_tasks():
        click.echo(f"{spec.name:<18} {spec.grader.get('type', '?'):<13} {spec.description}")
    return 0
