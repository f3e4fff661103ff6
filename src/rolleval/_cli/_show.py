from __future__ import annotations

import os
from typing import Any

import click

from .._sanitize import check_api_key, redact, redact_value, register_secret, terminal_safe
from ..errors import UsageError
from ._app import cli
from ._options import format_option, task_option


def _line(text: str) -> None:
    """One line of untrusted text, inert on a terminal, secrets redacted."""
    click.echo(terminal_safe(redact(text), one_line=True))


def _block(text: str) -> None:
    """Untrusted multi-line text (model output, prompts): newlines and tabs kept."""
    click.echo(terminal_safe(redact(text)))


def _register_run_key(rd: Any) -> None:
    """Redact the run's API key too, should a record hold it (defence in depth)."""
    throughput = rd.manifest.get("throughput")
    name = throughput.get("api_key_env") if isinstance(throughput, dict) else None
    if not isinstance(name, str) or not name:
        return
    value = os.environ.get(name)
    if value:
        try:
            register_secret(check_api_key(value, name))
        except UsageError:  # an unusable key is still redacted as it is
            register_secret(value)


def _thought_line(thought: str, width: int = 100) -> str:
    """The thought sent apart, collapsed to one line above the answer (``--format jsonl``
    prints it whole)."""
    flat = " ".join(thought.split())
    head = flat if len(flat) <= width else flat[: width - 3] + "..."
    return f"    (thought, {len(thought)} chars, collapsed; --format jsonl for all) {head}"


def _prompt_text(prompt: object) -> str:
    if prompt is None:  # runs imported from a source that does not store the prompt
        return "(prompt not stored: the source this run was imported from lacks it)"
    if isinstance(prompt, list):
        return "\n".join(
            f"[{m.get('role')}] {m.get('content')}" for m in prompt if isinstance(m, dict)
        )
    return str(prompt)


def _short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _details(rollout: dict[str, object]) -> str:
    """``, em=1 f1=0.67`` for judgement metrics; the code grader's failure kind."""
    import orjson

    parts = []
    metrics = rollout.get("metrics") or {}
    if isinstance(metrics, dict) and metrics:
        parts.append(" ".join(f"{k}={v:g}" for k, v in sorted(metrics.items())))
    raw = rollout.get("judge_raw")
    if isinstance(raw, str):
        try:
            summary = orjson.loads(raw)
        except orjson.JSONDecodeError:
            summary = None
        if isinstance(summary, dict) and summary.get("failure"):
            parts.append(f"failure={summary['failure']}")
    return "".join(f", {p}" for p in parts)


@cli.command("show")
@click.argument("run", type=click.Path(file_okay=False, path_type=str))
@task_option("Only this task (a name, or a task config file).")
@click.option("--problem", "problem", default=None, help="Only this problem id.")
@click.option(
    "--failures",
    is_flag=True,
    help="Only rollouts that are not correct (wrong, unextracted, errors).",
)
@click.option(
    "--unextracted", is_flag=True, help="Only gradable rollouts with no extracted answer."
)
@format_option("text", "jsonl")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="Show at most this many problems."
)
def show_cmd(
    run: str,
    task: str | None,
    problem: str | None,
    failures: bool,
    unextracted: bool,
    fmt: str,
    limit: int | None,
) -> int:
    """Read RUN's records: prompt, reference, and each rollout's text and judgement.

    Text output shows control characters (escape sequences, BEL, NUL, bidi overrides) as
    visible escapes; ``--format jsonl`` prints the records exactly (JSON-escaped)."""
    import orjson

    from ..rundir._show import show_records
    from ..rundir._store import RunDir

    rd = RunDir.open(run)
    _register_run_key(rd)
    items = show_records(rd, task=task, problem=problem, failures=failures, unextracted=unextracted)
    if limit is not None:
        items = items[:limit]
    for item in items:
        if fmt == "jsonl":
            click.echo(orjson.dumps(redact_value(item)).decode())
            continue
        _line(f"=== {item['task']} / {item['problem_id']}  reference: {item['reference']!r}")
        _block(_prompt_text(item["prompt"]))
        for r in item["rollouts"]:
            if r["status"] != "ok":
                label = f"{r['status']}: {r.get('error') or ''}"
            elif r.get("grader_error"):
                label = f"grader error: {r['grader_error']}"
            elif r.get("correct") is None:
                label = "not judged"
            else:
                label = (
                    "correct" if r["correct"] else "wrong"
                ) + f", extracted {_short(r['extracted'])}"
                label += _details(r)
            _line(f"--- rollout {r['index']} [{label}] finish={r.get('finish_reason')}")
            if r.get("reasoning"):
                _line(_thought_line(str(r["reasoning"])))
            if r.get("text") is not None:
                _block(str(r["text"]))
    if not items:
        click.echo("no matching records")
    return 0
