"""One writer per run directory, atomic creation, and exit 2 changing nothing on disk.

Concurrency is tested with real processes: a second ``rolleval`` against a directory that
another one is writing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import orjson
import pytest

from conftest import (
    child_env,
    rolleval_argv,
    run_cli,
    run_config,
    tree_bytes,
    write_math_task,
    write_run_yaml,
)
from rolleval import regrade_run, report_run, run_eval
from rolleval.errors import UsageError
from rolleval.records import LockHolder, RunManifest, TaskSettings
from rolleval.rundir._lock import LOCK_NAME, RunLock
from rolleval.testing import OpenAIServer
from rolleval.testing._synthetic import write_synthetic_run
from rolleval.writer import RunWriter

N_PROBLEMS = 8


@pytest.fixture
def data_file(tmp_path):
    return write_math_task(tmp_path / "sums.jsonl", N_PROBLEMS)


def _yaml(path, srv, data_file, **extra):
    return write_run_yaml(path, srv, data_file, n_rollouts=3, grading_workers=0, **extra)


_HOLD = r"""
import sys
from rolleval.rundir._lock import RunLock
lock = RunLock(sys.argv[1], command="test-holder").acquire()
print("locked", flush=True)
sys.stdin.readline()
lock.release()
"""


def _holder(path):
    """A real process holding ``path``'s write lock until its stdin is closed."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "locked"
    return child


def test_a_second_writer_is_refused_naming_pid_and_host_and_changes_nothing(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=10, n_rollouts=2)
    child = _holder(run.path)
    try:
        before = tree_bytes(run.path)
        for args in (["regrade", str(run.path), "--workers", "0"], ["report", str(run.path)]):
            res = run_cli(*args)
            assert res.returncode == 2, res.stderr
            assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
            assert f"pid {child.pid} on host {socket.gethostname()}" in res.stderr
            assert "test-holder" in res.stderr and "is writing this run directory" in res.stderr
        assert tree_bytes(run.path) == before
        # reading is never blocked
        res = run_cli("report", str(run.path), "--no-write", "--format", "json")
        assert res.returncode == 0, res.stderr
    finally:
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()
    assert (run.path / LOCK_NAME).read_bytes() == b""  # released cleanly
    assert regrade_run(run.path, workers=0).tasks["synthetic_math"]["rollouts"] == 20


def test_a_stale_lock_of_a_killed_holder_is_taken_over_with_a_note(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=5, n_rollouts=2)
    child = _holder(run.path)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdin.close()
    child.stdout.close()
    holder = LockHolder.model_validate(orjson.loads((run.path / LOCK_NAME).read_bytes()))
    assert holder.pid == child.pid  # the dead holder's record is still there
    res = report_run(run.path)
    assert any(
        f"took over the write lock left by rolleval test-holder (pid {child.pid}" in w
        and "no longer running" in w
        for w in res.warnings
    ), res.warnings
    assert (run.path / LOCK_NAME).read_bytes() == b""


def test_the_lock_is_reentrant_within_a_process_and_exclusive_across(tmp_path):
    (tmp_path / "d").mkdir()
    with RunLock(tmp_path / "d", command="outer"):
        with RunLock(tmp_path / "d", command="inner"):
            pass
        info = LockHolder.model_validate(orjson.loads((tmp_path / "d" / LOCK_NAME).read_bytes()))
        assert info.command == "outer" and info.pid == os.getpid()  # still held by the outer
        code = (
            "import sys\nfrom rolleval.rundir._lock import RunLock\n"
            "from rolleval.errors import UsageError\n"
            "try:\n    RunLock(sys.argv[1], command='x').acquire()\n"
            "except UsageError as e:\n    print(e)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "d")], capture_output=True, text=True
        )
        assert f"rolleval outer (pid {os.getpid()}" in out.stdout
    assert (tmp_path / "d" / LOCK_NAME).read_bytes() == b""


def test_two_concurrent_resumes_one_is_refused_and_nothing_is_requested_twice(tmp_path, data_file):
    gate = threading.Event()
    served = []

    def held(request):
        served.append(1)
        if len(served) > 2:
            gate.wait(60)  # hold the first writer mid-run until the second has been refused
        return f"\\boxed{{{request['seed'] % 5}}}", "stop"

    with OpenAIServer(responder=held) as srv:
        cfg = _yaml(tmp_path / "run.yaml", srv, data_file, concurrency=2)
        out = tmp_path / "r"
        first = subprocess.Popen(
            rolleval_argv("run", "--config", cfg, "--out", out, "--no-progress"),
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        rollouts = out / "tasks" / "sums" / "rollouts.jsonl"
        deadline = time.monotonic() + 60
        while not (rollouts.exists() and rollouts.read_bytes().count(b"\n") >= 2):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.02)
        second = run_cli("run", "--config", str(cfg), "--out", str(out), "--resume")
        assert first.poll() is None
        gate.set()
        assert second.returncode == 2, second.stderr
        assert f"pid {first.pid} on host" in second.stderr and "rolleval run" in second.stderr
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        assert srv.completion_requests == N_PROBLEMS * 3  # every rollout requested once
    recs = [orjson.loads(x) for x in rollouts.read_bytes().splitlines()]
    assert len({(r["problem_id"], r["index"]) for r in recs}) == len(recs) == N_PROBLEMS * 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "completed" and len(manifest["segments"]) == 1


def test_two_fresh_runs_racing_for_one_out_leave_exactly_one_run(tmp_path, data_file):
    with OpenAIServer() as srv:
        cfg = _yaml(tmp_path / "run.yaml", srv, data_file)
        out = tmp_path / "runs" / "r"
        argv = rolleval_argv("run", "--config", cfg, "--out", out, "--no-progress")
        procs = [
            subprocess.Popen(
                argv, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert "run directory exists" in loser and "Traceback" not in loser
    assert sorted(p.name for p in out.parent.iterdir()) == ["r"]  # no partial directory left
    manifest = RunManifest.model_validate(json.loads((out / "manifest.json").read_text()))
    assert manifest.status == "completed"
    recs = (out / "tasks" / "sums" / "rollouts.jsonl").read_bytes().splitlines()
    assert len(recs) == N_PROBLEMS * 3


def test_resume_of_a_run_without_prompts_is_refused_and_changes_nothing(tmp_path, data_file):
    with OpenAIServer() as srv:
        run_eval(run_config(srv, data_file), tmp_path / "r", progress=False)
        (tmp_path / "r" / "tasks" / "sums" / "prompts.jsonl").unlink()
        before = tree_bytes(tmp_path / "r")
        srv.reset_counters()
        cfg = _yaml(tmp_path / "run.yaml", srv, data_file)
        res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "r"), "--resume")
        assert res.returncode == 2, res.stderr
        assert "prompts.jsonl" in res.stderr and "Traceback" not in res.stderr
        assert srv.completion_requests == 0 and srv.path_counts.get("/v1/models", 0) == 0
    assert tree_bytes(tmp_path / "r") == before


def test_a_missing_api_key_is_a_usage_error_before_anything_is_written(
    tmp_path, data_file, monkeypatch
):
    monkeypatch.delenv("ROLLEVAL_TEST_NO_SUCH_KEY", raising=False)
    with OpenAIServer() as srv:
        cfg = run_config(srv, data_file, api_key_env="ROLLEVAL_TEST_NO_SUCH_KEY")
        with pytest.raises(UsageError, match="ROLLEVAL_TEST_NO_SUCH_KEY is not set"):
            run_eval(cfg, tmp_path / "r", progress=False)
        assert not (tmp_path / "r").exists() and list(tmp_path.glob(".r.*")) == []
        assert srv.completion_requests == 0
        # a plain re-run once the key is there is not refused
        monkeypatch.setenv("ROLLEVAL_TEST_NO_SUCH_KEY", "sk-test")
        out = run_eval(cfg, tmp_path / "r", progress=False)
    assert out.completed == N_PROBLEMS * 3


def test_a_run_directory_appears_complete_or_not_at_all(tmp_path):
    target = tmp_path / "new"
    with (
        pytest.raises(RuntimeError, match="importer crashed"),
        RunWriter.create(target, RunManifest(run_id="x")) as w,
    ):
        w.add_task(TaskSettings(name="t", n_rollouts=1), [])
        assert not target.exists()  # built beside the target
        raise RuntimeError("importer crashed")
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with RunWriter.create(target, RunManifest(run_id="x")) as w:
        w.add_task(TaskSettings(name="t", n_rollouts=1), [])
        run = w.finish()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]
    assert run.task_names() == ["t"] and run.task("t").read_settings().n_rollouts == 1
    with pytest.raises(UsageError, match="run directory exists"):
        RunWriter.create(target, RunManifest(run_id="y"))


_BUILD_THEN_DIE = r"""
import os, sys
from rolleval.records import RunManifest, TaskSettings
from rolleval.writer import RunWriter
w = RunWriter.create(sys.argv[1], RunManifest(run_id="dies"))
w.add_task(TaskSettings(name="t", n_rollouts=1), [])
os._exit(9)  # killed mid-build: the partial directory stays, its lock is dropped
"""


def test_a_crash_before_the_rename_leaves_the_target_usable(tmp_path):
    target = tmp_path / "runs" / "r"
    res = subprocess.run([sys.executable, "-c", _BUILD_THEN_DIE, str(target)], timeout=60)
    assert res.returncode == 9
    partials = list(target.parent.glob(".r.partial-*"))
    assert len(partials) == 1 and not target.exists()
    notes: list[str] = []
    with RunWriter.create(target, RunManifest(run_id="x"), on_note=notes.append) as w:
        w.finish()
    assert sorted(p.name for p in target.parent.iterdir()) == ["r"]
    assert notes and "left half-built by a process that died" in notes[0]
