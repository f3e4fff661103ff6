"""Processes and signals, with the real CLI in a subprocess and real grading workers:

* ``kill -9`` of rolleval takes its grading workers and the multiprocessing resource
  tracker with it;
* Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and SIGTERM end the
  run with one line on stderr and exit 130, leave no process behind, and ``--resume``
  finishes the run with nothing lost or duplicated and no judgement of a cancelled grading.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import orjson
import pytest

from rolleval.testing import Fault, OpenAIServer

from .conftest import (
    popen_cli,
    record_figure,
    run_cli,
    sum_responder,
    write_math_run,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

N_PROBLEMS = 40
N_ROLLOUTS = 2


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] != b"Z"


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


#: This file's run settings (``N_PROBLEMS`` problems): 2 grading workers.
SETTINGS = {
    "n_rollouts": N_ROLLOUTS,
    "seed": 3,
    "concurrency": 2,
    "timeout_s": 10,
    "grading_workers": 2,
}


def _judged(run_dir: Path) -> int:
    path = run_dir / "tasks" / "sums" / "judgements.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _start(tmp_path: Path, server: OpenAIServer):
    config = write_math_run(tmp_path, server, N_PROBLEMS, SETTINGS)
    run_dir = tmp_path / "run"
    proc = popen_cli("run", "--config", str(config), "--out", str(run_dir), "--no-progress")
    # Interrupt mid-run: workers warm (a judgement is stored), many rollouts still pending.
    _wait(lambda: _judged(run_dir) > 0 or proc.poll() is not None, 120, "the first judgement")
    assert proc.poll() is None, proc.communicate()
    _wait(
        lambda: len([p for p in _descendants(proc.pid) if "spawn_main" in _cmdline(p)]) >= 2,
        60,
        "two grading workers",
    )
    workers = _descendants(proc.pid)
    return proc, config, run_dir, workers


def _slow_server() -> OpenAIServer:
    """Quick for the first problems, then 1 s per request (time to interrupt mid-run)
    until ``server.slow`` is set false."""
    server = OpenAIServer(responder=sum_responder)
    server.slow = True
    server.faults = lambda r: Fault.delay(1.0 if server.slow and r.index >= 8 else 0.01)
    return server


def test_kill_9_takes_grading_workers_and_resource_tracker_along(tmp_path: Path) -> None:
    with _slow_server() as server:
        proc, _, _, family = _start(tmp_path, server)
        kinds = sorted(
            "tracker" if "resource_tracker" in _cmdline(p) else "worker"
            for p in family
            if "multiprocessing" in _cmdline(p)
        )
        assert kinds.count("worker") >= 2 and "tracker" in kinds, [_cmdline(p) for p in family]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        started = time.monotonic()
        _wait(lambda: not any(_alive(p) for p in family), 15, f"orphans {family} to die")
    record_figure(
        "signals",
        "kill_9_orphans",
        {
            "processes_left_behind": 0,
            "processes_before_kill": len(family),
            "seconds_until_all_gone": round(time.monotonic() - started, 2),
        },
    )


@pytest.mark.parametrize("how", ["ctrl_c_to_group", "sigterm_to_rolleval"])
def test_interrupt_is_one_line_exit_130_and_resumable(tmp_path: Path, how: str) -> None:
    with _slow_server() as server:
        proc, config, run_dir, family = _start(tmp_path, server)
        if how == "ctrl_c_to_group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        # one line, naming the command that continues the run (issue 25 item 3)
        assert stderr.decode() == (
            f"rolleval: interrupted; resume with: rolleval run --out {run_dir} --resume\n"
        )
        assert stdout == b""
        _wait(lambda: not any(_alive(p) for p in family), 15, "workers to stop")
        manifest = orjson.loads((run_dir / "manifest.json").read_bytes())
        assert manifest["status"] == "interrupted"
        requested_before = server.completion_requests
        assert requested_before < N_PROBLEMS * N_ROLLOUTS
        server.slow = False
        res = run_cli(
            "run", "--config", str(config), "--out", str(run_dir), "--resume", "--no-progress"
        )
        assert res.returncode == 0, res.stderr
    tf = run_dir / "tasks" / "sums"
    rollouts = [orjson.loads(x) for x in (tf / "rollouts.jsonl").read_bytes().splitlines()]
    judgements = [orjson.loads(x) for x in (tf / "judgements.jsonl").read_bytes().splitlines()]
    keys = [(r["problem_id"], r["index"]) for r in rollouts]
    assert len(keys) == len(set(keys)) == N_PROBLEMS * N_ROLLOUTS  # nothing lost or repeated
    jkeys = [(j["problem_id"], j["index"]) for j in judgements]
    assert sorted(jkeys) == sorted(keys)
    assert all(j.get("grader_error") is None for j in judgements), [
        j["grader_error"] for j in judgements if j.get("grader_error")
    ]
    assert all(j["correct"] is True for j in judgements)
    record_figure(
        "signals",
        how,
        {
            "exit_code": 130,
            "stderr_lines": 1,
            "rollouts_before_interrupt": requested_before,
            "rollouts_after_resume": f"{len(keys)}/{N_PROBLEMS * N_ROLLOUTS}",
            "judgements_with_grader_error": 0,
        },
    )
