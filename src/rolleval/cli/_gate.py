from __future__ import annotations

import os

import click
import orjson

from ..sanitize import terminal_safe
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
    "--unmatched", type=click.Choice(["error", "exclude"]), default="error", show_default=True
)
@click.option("--observe", is_flag=True, help="Report but exit 0 (input errors still exit 2).")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the full result as JSON.",
)
def gate_cmd(
    run: str,
    baseline: str,
    policy: str | None,
    n_resamples: int,
    seed: int,
    unmatched: str,
    observe: bool,
    output: str | None,
) -> int:
    """Gate RUN against a baseline: exit 1 if a regression is established or a limit broken,
    3 if a gating metric is inconclusive, 0 otherwise. Prints a Markdown summary (also appended
    to $GITHUB_STEP_SUMMARY when set)."""
    from ..compare import gate_run, load_policy

    res = gate_run(
        run,
        baseline,
        policy=load_policy(policy),
        n_resamples=n_resamples,
        seed=seed,
        unmatched=unmatched,
        observe=observe,
    )  # type: ignore[arg-type]
    md = res.markdown()
    click.echo(terminal_safe(md))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(md + "\n")
    if output:
        atomic_write_json(output, res.to_dict())
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


@cli.command("plan")
@click.argument("pilot", type=click.Path(path_type=str))
@click.option(
    "--candidate",
    type=click.Path(path_type=str),
    default=None,
    help="A second run, to estimate the paired variance.",
)
@click.option(
    "--effect", type=click.FloatRange(min=0, min_open=True), default=0.02, show_default=True
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option("--task", "tasks", multiple=True)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def plan_cmd(
    pilot: str,
    candidate: str | None,
    effect: float,
    power: float,
    alpha: float,
    tasks: tuple[str, ...],
    fmt: str,
) -> int:
    """How many problems and rollouts per problem detect EFFECT on pass@1 (Miller 2024)."""
    from ..compare import plan_runs

    res = plan_runs(
        pilot, candidate, effect=effect, alpha=alpha, power=power, tasks=list(tasks) or None
    )
    if fmt == "json":
        click.echo(orjson.dumps(res, option=orjson.OPT_INDENT_2).decode())
        return 0
    click.echo(
        f"rolleval plan: detect a pass@1 change of {effect} with power {power} at alpha {alpha} (two-sided, paired)"
    )
    for name, e in res["tasks"].items():
        click.echo(f"\ntask {name}: {e['problems']} problems in the pilot; {e['assumption']}")
        if e["status"] != "ok":
            click.echo(f"  N/A: {e['reason']}")
            continue
        click.echo(f"  minimum detectable effect of the current design: {e['mde_current']:.4f}")
        click.echo(
            f"  problems needed at the current rollouts per problem: {e['required_problems']}"
        )
        r = e["required_rollouts_at_current_problems"]
        click.echo(
            f"  rollouts per problem needed at {e['problems']} problems: {'unreachable by rollouts alone (between-problem variance)' if r is None else r}"
        )
    return 0
