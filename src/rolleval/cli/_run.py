from __future__ import annotations

from typing import Any

import click
import yaml

from ..config import build_config, load_config_file
from ..errors import UsageError
from ..render import render_run_report
from ..runner import run_eval
from ..sanitize import redact, terminal_safe
from ._app import cli


def _parse_kv(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise UsageError(f"{flag} takes KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


@cli.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML run config; flags override it.",
)
@click.option(
    "--model",
    default=None,
    help="Model name at the endpoint, or 'local' for the embedded llama.cpp model.",
)
@click.option(
    "--endpoint",
    "endpoints",
    multiple=True,
    help="Base URL, e.g. http://127.0.0.1:8000/v1 (repeatable).",
)
@click.option(
    "--task", "tasks", multiple=True, help="Task name (repeatable); `rolleval tasks` lists them."
)
@click.option(
    "-n",
    "--rollouts",
    "n",
    type=click.IntRange(min=1),
    default=None,
    help="Rollouts per problem [8].",
)
@click.option(
    "--k",
    "ks",
    type=click.IntRange(min=1),
    multiple=True,
    help="k values to report (repeatable) [powers of two up to n].",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="First N problems of each task (sorted ids).",
)
@click.option("--seed", type=int, default=None, help="Run seed [0].")
@click.option("--temperature", type=click.FloatRange(min=0), default=None)
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=None)
@click.option("--max-tokens", type=click.IntRange(min=1), default=None)
@click.option("--stop", "stop", multiple=True, help="Stop sequence (repeatable).")
@click.option("--api", type=click.Choice(["chat", "completions"]), default=None)
@click.option(
    "--api-key-env", default=None, help="Name of the environment variable holding the API key."
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=None, help="Requests in flight [8]."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Per-request timeout, seconds [120].",
)
@click.option(
    "--server-option",
    "server_options",
    multiple=True,
    help="llama.cpp server setting KEY=VALUE for --model local (repeatable).",
)
@click.option("--denominator-policy", type=click.Choice(["judged", "requested"]), default=None)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=str),
    help="Run directory to create (or continue with --resume).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the run in --out: only missing or failed rollouts are requested.",
)
@click.option(
    "--server-n",
    is_flag=True,
    default=None,
    help="One request per problem with n = its pending rollouts (servers that honour n only).",
)
@click.option("--no-progress", is_flag=True, help="Do not print progress.")
def run_cmd(
    config_path: str | None, out: str, resume: bool, no_progress: bool, **flags: Any
) -> int:
    """Run n rollouts per problem against an OpenAI-compatible endpoint, grade and report.

    Exit 0 when the run completed, 4 when every rollout failed, 2 on bad input, 130 when
    interrupted (the run directory is then resumable with --resume).
    """
    data: dict[str, Any] = load_config_file(config_path) if config_path else {}
    sampling = dict(data.get("sampling") or {})
    for key in ("temperature", "top_p", "max_tokens"):
        if flags.get(key) is not None:
            sampling[key] = flags[key]
    if flags["stop"]:
        sampling["stop"] = list(flags["stop"])
    if sampling:
        data["sampling"] = sampling
    simple = {
        "model": "model",
        "n": "n",
        "limit": "limit",
        "seed": "seed",
        "api": "api",
        "api_key_env": "api_key_env",
        "concurrency": "concurrency",
        "timeout_s": "timeout_s",
        "denominator_policy": "denominator_policy",
    }
    for flag, key in simple.items():
        if flags.get(flag) is not None:
            data[key] = flags[flag]
    if flags.get("server_n"):
        data["server_n"] = True
    if flags["endpoints"]:
        data["endpoints"] = list(flags["endpoints"])
    if flags["tasks"]:
        data["tasks"] = list(flags["tasks"])
    if flags["ks"]:
        data["ks"] = list(flags["ks"])
    if flags["server_options"]:
        data["server_options"] = {
            **(data.get("server_options") or {}),
            **_parse_kv(flags["server_options"], "--server-option"),
        }
    where = f"{config_path}: " if config_path else ""
    if "model" not in data:
        raise UsageError(
            f"{where}no model: pass --model NAME (or --model local), or set model in --config"
        )
    if not data.get("tasks"):
        raise UsageError(
            f"{where}no task: pass --task NAME (repeatable; `rolleval tasks` lists them), or set tasks in --config"
        )
    config = build_config(data, source=config_path or "flags")
    outcome = run_eval(
        config,
        out,
        resume=resume,
        progress=not no_progress,
        on_event=lambda m: click.echo(terminal_safe(redact(m), one_line=True), err=True),
    )
    click.echo(terminal_safe(render_run_report(outcome.report)))
    click.echo(
        f"\n{outcome.completed} rollouts completed, {outcome.failed} failed, in {outcome.seconds:.1f}s; "
        f"run directory {outcome.path} (report.json inside)"
    )
    return 0
