"""A run written by the previous rolleval (schema 1: ``measurement.n``) upgrades on read and
resumes with the current one; an old config file that says ``n:`` still runs.

``tests/data/run-schema1`` was made by ``make.py`` with rolleval before the rename (its
README says which commit); these tests resume copies of it against a real server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import assert_run_valid, run_cli, run_config, write_run_yaml
from rolleval import run_eval
from rolleval.errors import UsageError
from rolleval.records import SCHEMA_VERSION
from rolleval.rundir._store import RunDir
from rolleval.testing import OpenAIServer

OLD = Path(__file__).parents[1] / "data" / "run-schema1"


def _responder(request):
    # make.py's: right unless the seed is a multiple of 3
    content = request["messages"][-1]["content"]
    a, b = map(int, re.search(r"What is (\d+)\+(\d+)\?", content).groups())
    ans = a + b if request["seed"] % 3 else a + b + 1
    return f"The answer is \\boxed{{{ans}}}.", "stop"


@pytest.fixture
def old_run(tmp_path, monkeypatch):
    """A copy of the schema-1 run (and its data file) as the working directory: the task's
    relative data path resolves as when the run was made."""
    work = tmp_path / "old"
    shutil.copytree(OLD, work, ignore=shutil.ignore_patterns("*.py", "*.md"))
    monkeypatch.chdir(work)
    return work / "run"


def _manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def test_the_stored_manifest_is_schema_1_and_reads_as_the_current_schema(old_run):
    stored = _manifest(old_run)
    assert stored["schema_version"] == 1 and stored["measurement"]["n"] == 2
    assert "n_rollouts" not in stored["measurement"]
    info = RunDir.open(old_run).info
    assert info.schema_version == SCHEMA_VERSION
    assert info.measurement is not None and info.measurement["n_rollouts"] == 2
    assert "n" not in info.measurement


def test_an_old_run_resumes_without_a_config_change(old_run):
    before = _manifest(old_run)
    with OpenAIServer(responder=_responder) as srv:
        # the settings make.py used; the server's port differs (throughput may change)
        cfg = run_config(srv, "sums.jsonl", n_rollouts=2, seed=5)
        out = run_eval(cfg, old_run, resume=True, progress=False)
        assert srv.completion_requests == 2  # the two rollouts that failed, and only they
    assert out.failed == 0 and out.completed == 2
    after = _manifest(old_run)
    assert after["schema_version"] == SCHEMA_VERSION and after["run_id"] == before["run_id"]
    expected = {("n_rollouts" if k == "n" else k): v for k, v in before["measurement"].items()}
    assert after["measurement"] == expected
    assert [s["status"] for s in after["segments"]] == ["completed", "completed"]
    rollouts = (old_run / "tasks" / "sums" / "rollouts.jsonl").read_text().splitlines()
    assert len(rollouts) == 8  # 6 first attempts + 2 second attempts
    assert sum(json.loads(r)["attempt"] == 2 for r in rollouts) == 2
    assert_run_valid(old_run)


def test_an_old_run_still_refuses_a_changed_rollout_count(old_run):
    before = (old_run / "manifest.json").read_bytes()
    with OpenAIServer(responder=_responder) as srv:
        cfg = run_config(srv, "sums.jsonl", n_rollouts=3, seed=5)
        with pytest.raises(UsageError, match=r"config changed \(n_rollouts: 2 -> 3\)"):
            run_eval(cfg, old_run, resume=True, progress=False)
        assert srv.completion_requests == 0
    assert (old_run / "manifest.json").read_bytes() == before


def _yaml(path: Path, srv: OpenAIServer, **count: int) -> Path:
    return write_run_yaml(
        path, srv, "sums.jsonl", **count, seed=5, max_retries=0, grading_workers=0
    )


def test_an_old_config_file_runs_and_resumes_from_the_cli(tmp_path):
    """A YAML config that says ``n: 2`` (the old name) runs 2 rollouts per problem, with a
    note on stderr, and resumes its run without a config change."""
    shutil.copy(OLD / "sums.jsonl", tmp_path / "sums.jsonl")
    with OpenAIServer(responder=_responder) as srv:
        config = _yaml(tmp_path / "run.yaml", srv, n=2)
        args = ("run", "--config", str(config), "--out", str(tmp_path / "run"), "--no-progress")
        res = run_cli(*args)
        assert res.returncode == 0, res.stderr
        assert srv.completion_requests == 6  # 3 problems x 2
        note = f"rolleval: warning: {config}: 'n' is the old name of 'n_rollouts'; rename it"
        assert note in res.stderr and "Traceback" not in res.stderr
        assert _manifest(tmp_path / "run")["measurement"]["n_rollouts"] == 2
        res = run_cli(*args, "--resume")
        assert res.returncode == 0, res.stderr
        assert srv.completion_requests == 6  # nothing left to do, and no config change


def test_both_names_of_the_rollout_count_are_refused(tmp_path):
    shutil.copy(OLD / "sums.jsonl", tmp_path / "sums.jsonl")
    with OpenAIServer(responder=_responder) as srv:
        config = _yaml(tmp_path / "run.yaml", srv, n=2, n_rollouts=4)
        res = run_cli("run", "--config", str(config), "--out", str(tmp_path / "run"))
        assert srv.path_counts == {}
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"rolleval: error: {config}: both 'n' and 'n_rollouts' are set; 'n' is the old name "
        "of 'n_rollouts', keep only n_rollouts: 4"
    ]
    assert not (tmp_path / "run").exists()
