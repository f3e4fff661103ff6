from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import UsageError
from ._app import cli
from ._options import confidence_level_option, html_option, n_resamples_option, seed_option

_F = TypeVar("_F", bound=Callable[..., Any])


def _side_options(name: str) -> list[Callable[[_F], _F]]:
    return [
        click.option(
            f"--{name}",
            required=True,
            help=f"The {name}: an endpoint URL (http://HOST:PORT/v1) or a .gguf file rolleval serves.",
        ),
        click.option(f"--{name}-model", default=None, help=f"Model name at the {name} endpoint."),
        click.option(
            f"--{name}-api-key-env",
            default=None,
            help=f"Environment variable holding the {name} endpoint's API key.",
        ),
    ]


def _apply(options: list[Callable[[_F], _F]]) -> Callable[[_F], _F]:
    def deco(f: _F) -> _F:
        for opt in reversed(options):
            f = opt(f)
        return f

    return deco


def _texts(
    texts_path: str | None,
    task: str | None,
    limit: int | None,
    continuation: str | None,
    max_tokens: int | None,
    temperature: float | None,
    seed: int,
) -> tuple[list[tuple[str, str]], Any]:
    """The texts to score, and the sampled-continuation settings (None: score as given)."""
    from ..drift import SampledContinuation, load_texts, task_prompts, task_texts

    if (texts_path is None) == (task is None):
        raise UsageError("give exactly one of --texts FILE.jsonl and --task NAME")
    given = [
        name
        for name, value in (
            ("--continuation", continuation),
            ("--max-tokens", max_tokens),
            ("--temperature", temperature),
        )
        if value is not None
    ]
    if texts_path is not None:
        if given:
            raise UsageError(f"{given[0]} applies to --task only (--texts are scored as given)")
        return load_texts(texts_path, limit=limit), None
    if continuation == "reference":
        if given[1:]:
            raise UsageError(f"{given[1]} applies to --continuation sampled only")
        return task_texts(str(task), limit=limit), None
    spec = SampledContinuation(
        seed=seed,
        temperature=1.0 if temperature is None else temperature,
        max_tokens=128 if max_tokens is None else max_tokens,
    )
    return task_prompts(str(task), limit=limit), spec


@cli.command("drift")
@_apply(_side_options("baseline") + _side_options("candidate"))
@click.option(
    "--texts",
    "texts_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help='JSONL corpus, one {"id": ..., "text": ...} per line.',
)
@click.option(
    "--task",
    default=None,
    help="A task: each problem's prompt followed by a continuation (--continuation).",
)
@click.option(
    "--continuation",
    type=click.Choice(["sampled", "reference"]),
    default=None,
    help="With --task: the baseline's own continuation, sampled here with a seed derived "
    "from --seed, or the reference answer [sampled].",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Longest sampled continuation, tokens [128].",
)
@click.option(
    "--temperature",
    type=click.FloatRange(min=0),
    default=None,
    help="Temperature of the sampled continuation [1.0: the model's own distribution].",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="First N texts/problems.")
@click.option(
    "--top-logprobs",
    type=click.IntRange(min=1),
    default=None,
    help="K alternatives asked of an endpoint side [20]; a .gguf side is scored exactly.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=None,
    help="Threshold on the mean KL divergence, nats per token [0.01].",
)
@confidence_level_option()
@n_resamples_option
@seed_option
@click.option(
    "--server-option",
    "server_options",
    multiple=True,
    help="llama.cpp server setting KEY=VALUE for a .gguf side (repeatable).",
)
@click.option("--concurrency", type=click.IntRange(min=1), default=2, show_default=True)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Per-request timeout, seconds.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="Directory for drift.json and tokens.jsonl (created; an existing drift.json is refused).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True
)
@html_option()
def drift_cmd(
    baseline: str,
    baseline_model: str | None,
    baseline_api_key_env: str | None,
    candidate: str,
    candidate_model: str | None,
    candidate_api_key_env: str | None,
    texts_path: str | None,
    task: str | None,
    continuation: str | None,
    max_tokens: int | None,
    temperature: float | None,
    limit: int | None,
    top_logprobs: int | None,
    threshold: float | None,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    server_options: tuple[str, ...],
    concurrency: int,
    timeout_s: float,
    out: str,
    fmt: str,
    html_path: str | None,
) -> int:
    """Token-level drift of CANDIDATE against BASELINE: KL divergence, top-1 agreement and
    delta NLL, both models scoring the same texts (teacher forcing).

    Exit 0: the mean KL divergence is within the threshold; 1: significantly above it;
    3: undecided (the interval contains the threshold, or fewer than 2 texts); 2: usage error
    (bad input, a server with unusable prompt log-probs, different tokenizers).
    """
    import dataclasses

    import orjson

    from .._report._render import emit
    from .._runner._config import _parse_kv
    from ..drift import (
        DEFAULT_THRESHOLD,
        DEFAULT_TOP_LOGPROBS,
        DriftOptions,
        DriftSide,
        measure_drift,
    )
    from ..rundir._store import atomic_write_bytes, atomic_write_json

    out_dir = Path(out)
    if (out_dir / "drift.json").exists():
        raise UsageError(f"{out_dir / 'drift.json'} exists; give another --out (nothing written)")
    texts, sampled = _texts(texts_path, task, limit, continuation, max_tokens, temperature, seed)
    extra = _parse_kv(server_options, "--server-option")
    options = DriftOptions(
        top_logprobs=top_logprobs or DEFAULT_TOP_LOGPROBS,
        threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=seed,
        concurrency=concurrency,
        timeout_s=timeout_s,
        server_options={"n_threads": 2, **extra},
        continuation=sampled,
    )
    result = measure_drift(
        DriftSide(baseline, baseline_model, baseline_api_key_env),
        DriftSide(candidate, candidate_model, candidate_api_key_env),
        texts,
        options,
    )
    if task is not None and sampled is None:
        method = dataclasses.replace(result.method, continuation={"kind": "reference"})
        result = dataclasses.replace(result, method=method)
    data = result.to_dict()
    data["texts_source"] = texts_path or f"task {task}"
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out_dir / "drift.json", data)
    lines = b"".join(orjson.dumps(t) + b"\n" for t in result.tokens)
    atomic_write_bytes(out_dir / "tokens.jsonl", lines)
    click.echo(emit("drift", data, fmt))
    if html_path:
        from .._report._drift import drift_html
        from .._report._html import write_html

        click.echo(f"HTML report: {write_html(html_path, drift_html(data))}", err=fmt != "text")
    return result.exit_code
