"""Shared helpers of the reliability suite: the real CLI in a subprocess, a math task file,
the test server's fault kinds, and the suite's figures (docs/reliability.md).

Set ``ROLLEVAL_RELIABILITY_FIGURES=path.json`` to have the suite write the figures it
measured (fault classification, broken-input cases and exit codes, hypothesis example
counts, kill trials) to that file at the end of the session.
"""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

# the math task and its responder are shared with the other tests (tests/conftest.py)
from conftest import math_task_entry as math_task_entry
from conftest import rolleval_argv
from conftest import run_settings as run_settings
from conftest import sum_responder as sum_responder
from conftest import write_math_run as write_math_run
from conftest import write_math_task as write_math_task
from rolleval.testing import Fault

SRC = str(Path(__file__).resolve().parents[2] / "src")

_FIGURES: dict[str, Any] = defaultdict(dict)


def record_figure(section: str, key: str, value: Any) -> None:
    """Keep one measured figure for docs/reliability.md (written at session end)."""
    _FIGURES[section][key] = value


@pytest.fixture(scope="session", autouse=True)
def _write_figures() -> Iterator[None]:
    yield
    target = os.environ.get("ROLLEVAL_RELIABILITY_FIGURES")
    if target and _FIGURES:
        Path(target).write_bytes(
            orjson.dumps(_FIGURES, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        )


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout's sources first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLEVAL_")}
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = SRC if not path else SRC + os.pathsep + path
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra)
    return env


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[bytes]:
    """``python -m rolleval ARGS`` as a user runs it; stdout and stderr kept as bytes."""
    return subprocess.run(
        rolleval_argv(*args),
        capture_output=True,
        env=env if env is not None else cli_env(),
        timeout=timeout,
    )


def popen_cli(*args: str, env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen:
    """The CLI as a background process (stdout/stderr piped), in its own process group so a
    test can send the group a terminal's Ctrl-C."""
    return subprocess.Popen(
        rolleval_argv(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env if env is not None else cli_env(),
        start_new_session=True,
        **kwargs,
    )


#: Every fault kind of the test server: name -> (fault, final status, retried?).
#: ``timeout`` needs a client deadline under its delay (the tests use 0.5 s).
FAULT_KINDS: dict[str, tuple[Fault, str, bool]] = {
    "ok": (Fault.ok(), "ok", False),
    "delay_past_deadline": (Fault.delay(3.0), "timeout", True),
    "http_400": (Fault.http_status(400), "infra_error", False),
    "http_401": (Fault.http_status(401), "infra_error", False),
    "http_403": (Fault.http_status(403), "infra_error", False),
    "http_404": (Fault.http_status(404), "infra_error", False),
    "http_408": (Fault.http_status(408), "infra_error", True),
    "http_429_retry_after": (Fault.http_status(429, retry_after=0), "infra_error", True),
    "http_500": (Fault.http_status(500), "infra_error", True),
    "http_502": (Fault.http_status(502), "infra_error", True),
    "http_503": (Fault.http_status(503), "infra_error", True),
    "http_504": (Fault.http_status(504), "infra_error", True),
    "malformed_json": (Fault.malformed(), "infra_error", True),
    "html_page_200": (Fault.raw("<html><body>proxy error</body></html>"), "infra_error", True),
    "no_choices": (Fault.no_choices(), "infra_error", True),
    # null content with finish_reason "stop": a completed rollout with no answer (issue 19),
    # never an infra error
    "no_content": (Fault.no_content(), "ok", False),
    "drop": (Fault.drop(), "infra_error", True),
    "reset": (Fault.drop(reset=True), "infra_error", True),
    "echo_headers_401": (Fault.echo_headers(401), "infra_error", False),
    "echo_headers_500": (Fault.echo_headers(500), "infra_error", True),
    "lone_surrogate": (Fault.lone_surrogate(), "ok", False),
}
