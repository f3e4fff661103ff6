from __future__ import annotations

import click

from ._app import cli

#: Columns of the listing (as every text rendering: docs/cli.md).
WIDTH = 100


@cli.command("tasks")
def tasks_cmd() -> int:
    """List the built-in tasks."""
    import textwrap

    from ..tasks import list_tasks

    for spec in list_tasks():
        head = f"{spec.name:<18} {spec.grader.get('type', '?'):<13} "
        lines = textwrap.wrap(
            spec.description, width=WIDTH, initial_indent=head, subsequent_indent=" " * len(head)
        )
        click.echo("\n".join(lines or [head.rstrip()]))
    return 0
