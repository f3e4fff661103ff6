"""The peer side of the benchmarks: the tools rolleval is measured against.

The peers (lm-evaluation-harness, TraceLens) live in their own virtual environment,
``bench/.venv-peers`` (``bash bench/peers/setup.sh`` creates it), so they never touch
rolleval's environment. The benches run them as subprocesses through the small driver
scripts in this folder; ``ROLLEVAL_PEERS_VENV`` points at another venv.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

PEERS_DIR = Path(__file__).resolve().parent
BENCH_DIR = PEERS_DIR.parent
SETUP_HINT = "bash bench/peers/setup.sh"


def venv_dir() -> Path:
    return Path(os.environ.get("ROLLEVAL_PEERS_VENV") or BENCH_DIR / ".venv-peers")


def venv_python() -> Path | None:
    """The peer venv's interpreter, or None when the venv does not exist."""
    python = venv_dir() / "bin" / "python"
    return python if python.exists() else None


def venv_bin(name: str) -> Path | None:
    """A console script of the peer venv (e.g. ``tracelens``), or None."""
    path = venv_dir() / "bin" / name
    return path if path.exists() else None


def run_driver(script: str, *args: str, timeout: float | None = None) -> dict[str, Any]:
    """Run ``bench/peers/<script>`` in the peer venv; return the JSON its last stdout line holds.

    The peers print progress of their own (tqdm, logging) on stderr; a driver's last line on
    stdout is its result. Raises ``RuntimeError`` with the stderr tail when the driver fails.
    """
    python = venv_python()
    if python is None:
        raise RuntimeError(f"no peer venv at {venv_dir()}; run: {SETUP_HINT}")
    proc = subprocess.run(
        [str(python), str(PEERS_DIR / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{script} failed (exit {proc.returncode}):\n{tail}")
    return json.loads(lines[-1])
