"""SIGKILL at random moments, then ``--resume``: nothing lost, nothing duplicated, and the
task report is the same as that of an uninterrupted run (the CLI in a subprocess, a real
test server; kills land anywhere after the run directory exists: during requests, record
appends, grading, profile and report writes)."""

from __future__ import annotations

import random
import re
import signal
import time
from pathlib import Path

import orjson
import pytest

from rolleval.testing import Fault, OpenAIServer

from .conftest import (
    popen_cli,
    record_figure,
    run_cli,
    write_math_run,
)

pytestmark = pytest.mark.slow

TRIALS = 8
N_PROBLEMS = 30
N_ROLLOUTS = 4


def graded_responder(request):
    """Right for seeds not divisible by 3, wrong otherwise: a report with some spread."""
    a, b = map(
        int, re.search(r"What is (\d+)\+(\d+)\?", request["messages"][-1]["content"]).groups()
    )
    answer = a + b if request["seed"] % 3 else a + b + 1
    return f"The answer is \\boxed{{{answer}}}.", "stop"


#: This file's run settings (``N_PROBLEMS`` problems).
SETTINGS = {
    "n_rollouts": N_ROLLOUTS,
    "seed": 5,
    "concurrency": 4,
    "timeout_s": 10,
    "grading_workers": 0,
}


def _task_report(run_dir: Path) -> dict:
    report = orjson.loads((run_dir / "tasks" / "sums" / "report.json").read_bytes())
    return {k: report[k] for k in ("metrics", "rollouts", "problems", "health")}


def test_sigkill_at_random_moments_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    outcomes = []
    with OpenAIServer(responder=graded_responder, faults=lambda r: Fault.delay(0.01)) as server:
        config = write_math_run(tmp_path, server, N_PROBLEMS, SETTINGS)
        reference = tmp_path / "reference"
        started = time.monotonic()
        res = run_cli("run", "--config", str(config), "--out", str(reference), "--no-progress")
        assert res.returncode == 0, res.stderr
        expected = _task_report(reference)
        span = time.monotonic() - started
        for trial in range(TRIALS):
            run_dir = tmp_path / f"trial{trial}"
            proc = popen_cli("run", "--config", str(config), "--out", str(run_dir), "--no-progress")
            deadline = time.monotonic() + 60
            while not (run_dir / "tasks" / "sums" / "prompts.jsonl").exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, span * 0.6))
            finished_first = proc.poll() is not None
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            res = run_cli(
                "run", "--config", str(config), "--out", str(run_dir), "--resume", "--no-progress"
            )
            assert res.returncode == 0, res.stderr
            tf = run_dir / "tasks" / "sums"
            rollouts = [orjson.loads(x) for x in (tf / "rollouts.jsonl").read_bytes().splitlines()]
            judgements = [
                orjson.loads(x) for x in (tf / "judgements.jsonl").read_bytes().splitlines()
            ]
            ok = [(r["problem_id"], r["index"]) for r in rollouts if r["status"] == "ok"]
            judged = [(j["problem_id"], j["index"]) for j in judgements]
            assert len(ok) == len(set(ok)) == N_PROBLEMS * N_ROLLOUTS  # none lost, none twice
            assert sorted(judged) == sorted(ok)
            assert _task_report(run_dir) == expected
            outcomes.append("finished before the kill" if finished_first else "killed mid-run")
    record_figure(
        "kill_resume",
        "sigkill_trials",
        {
            "trials": TRIALS,
            "survived": f"{len(outcomes)}/{TRIALS}",
            "killed_mid_run": outcomes.count("killed mid-run"),
            "rollouts_per_run": N_PROBLEMS * N_ROLLOUTS,
            "lost_or_duplicated": 0,
            "task_report_equal_to_uninterrupted": f"{len(outcomes)}/{TRIALS}",
        },
    )
