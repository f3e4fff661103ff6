"""End to end with the real embedded model: llama.cpp serving SmolLM2-135M on 127.0.0.1.

Runs in the default suite (scripts/test.sh installs rolleval[local]); select it alone with
``-m local_model``. Kept to a few dozen short requests.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import child_env, rolleval_argv, run_cli
from rolleval import build_config, run_eval

pytestmark = pytest.mark.local_model
RUN_LOCAL = ("run", "--model", "local", "--task")


def test_local_model_run_and_server_options_in_provenance(tmp_path):
    cfg = build_config(
        {
            "model": "local",
            "tasks": ["copycolors"],
            "limit": 6,
            "n_rollouts": 3,
            "concurrency": 2,
            "server_options": {"rope_freq_scale": 0.8, "n_threads": 2},
        }
    )
    out = run_eval(cfg, tmp_path / "run", progress=False)
    rep = out.report["tasks"]["copycolors"]
    assert rep["rollouts"]["requested"] == 18
    assert rep["rollouts"]["completed"] == 18  # a real server answered every request
    assert rep["metrics"]["pass@1"]["status"] == "ok"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    server = manifest["provenance"]["server"]
    assert server["server_options"]["rope_freq_scale"] == 0.8
    assert (
        server["model_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
        and len(server["model_sha256"]) == 64
    )
    rollouts = [
        json.loads(x)
        for x in (tmp_path / "run" / "tasks" / "copycolors" / "rollouts.jsonl")
        .read_text()
        .splitlines()
    ]
    assert all(r["status"] == "ok" and r["usage"]["completion_tokens"] >= 1 for r in rollouts)
    assert {r["model"] for r in rollouts} == {"SmolLM2-135M-Instruct.Q4_1"}


def test_local_model_seed_makes_reruns_reproducible(tmp_path):
    """The server honours `seed`: the same run seed gives the same rollout texts."""
    cfg = build_config(
        {
            "model": "local",
            "tasks": ["common_knowledge"],
            "limit": 4,
            "n_rollouts": 2,
            "concurrency": 1,
            "seed": 5,
        }
    )
    a = run_eval(cfg, tmp_path / "a", progress=False)
    b = run_eval(cfg, tmp_path / "b", progress=False)
    assert a.completed == b.completed == 8

    def texts(p):
        rows = [
            json.loads(x)
            for x in (p / "tasks" / "common_knowledge" / "rollouts.jsonl").read_text().splitlines()
        ]
        return {(r["problem_id"], r["index"]): r["text"] for r in rows}

    assert texts(tmp_path / "a") == texts(tmp_path / "b")


def test_local_model_cli_rejects_reserved_server_option(tmp_path):
    res = run_cli(
        *RUN_LOCAL, "copycolors", "--server-option", "port=1", "--out", tmp_path / "r", timeout=60
    )
    assert res.returncode == 2 and "set by rolleval's launcher" in res.stderr
    assert not (tmp_path / "r").exists()


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead too
        return fh.read().split()[2] != "Z"


def test_embedded_server_dies_with_rolleval_even_on_sigkill(tmp_path):
    import signal
    import time

    child = subprocess.Popen(
        rolleval_argv(
            *RUN_LOCAL, "copycolors", "-n", "2", "--out", tmp_path / "r", "--no-progress"
        ),
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rollouts = tmp_path / "r" / "tasks" / "copycolors" / "rollouts.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (rollouts.exists() and rollouts.stat().st_size > 0):
        time.sleep(0.1)
    servers = _children(child.pid)
    assert servers, "the embedded server should be a child of rolleval"
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in servers):
        time.sleep(0.1)
    assert not any(_alive(p) for p in servers)
