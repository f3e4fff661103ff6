"""The broken inputs the hardening issue listed, one test each: exit 2 (never 5), one line
naming the file, nothing on disk changed, and no request spent on a run that cannot report."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rolleval.testing import OpenAIServer
from rolleval.testing._synthetic import write_synthetic_run

from .conftest import run_cli, sum_responder, write_math_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    write_synthetic_run(root / "base", n_problems=20, n_rollouts=4, rng=3)
    write_synthetic_run(root / "cand", n_problems=20, n_rollouts=4, rng=3, shift=-0.05)
    return root


def _gate(runs: Path, policy_text: str, tmp_path: Path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text, encoding="utf-8")
    res = run_cli(
        "gate", str(runs / "cand"), "--baseline", str(runs / "base"), "--policy", str(policy)
    )
    return res, policy


def _one_line_naming(res, name: str) -> None:
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and name in err, err


@pytest.mark.parametrize(
    "policy_text",
    [
        "metrics: [pass@1]\n",
        "metrics: 3\n",
        "metrics: {pass@1: {threshold: '0.02'}}\n",
        "alpha: '0.05'\nmetrics: {pass@1: {threshold: 0.02}}\n",
        "health: {infra_error_rate: {max: '0.02'}}\n",
        "health: {unextracted_rate: {max_increase: [1]}}\n",
        "metrics: {pass@1: {threshold: 0.02}}\nmetrics: {pass@1: {threshold: 0.5}}\n",
        "tasks: 7\nmetrics: {pass@1: {threshold: 0.02}}\n",
    ],
    ids=[
        "metrics_list",
        "metrics_int",
        "threshold_string",
        "alpha_string",
        "max_string",
        "max_increase_list",
        "duplicate_key",
        "tasks_int",
    ],
)
def test_policy_with_wrong_types_is_exit_2_naming_the_file(runs, tmp_path, policy_text) -> None:
    res, policy = _gate(runs, policy_text, tmp_path)
    _one_line_naming(res, policy.name)


def test_policy_task_missing_from_runs_names_the_policy_file(runs, tmp_path) -> None:
    res, policy = _gate(runs, "tasks: [nope]\nmetrics: {pass@1: {threshold: 0.02}}\n", tmp_path)
    _one_line_naming(res, policy.name)
    assert "'nope'" in res.stderr.decode()


def test_policy_non_utf8_is_exit_2(runs, tmp_path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_bytes("# caf\u00e9\nmetrics: {pass@1: {threshold: 0.02}}\n".encode("latin-1"))
    res = run_cli(
        "gate", str(runs / "cand"), "--baseline", str(runs / "base"), "--policy", str(policy)
    )
    _one_line_naming(res, policy.name)


def test_policy_tasks_as_a_string_is_a_one_item_list(runs, tmp_path) -> None:
    as_list, _ = _gate(
        runs, "tasks: [synthetic_math]\nmetrics: {pass@1: {threshold: 0.02}}\n", tmp_path
    )
    as_string, _ = _gate(
        runs, "tasks: synthetic_math\nmetrics: {pass@1: {threshold: 0.02}}\n", tmp_path
    )
    assert as_list.returncode in (0, 1, 3), as_list.stderr
    assert (as_string.returncode, as_string.stdout) == (as_list.returncode, as_list.stdout)
    assert b"synthetic_math" in as_string.stdout


#: This file's run settings (3 problems): 4 rollouts, grading in this process.
SETTINGS = {"n_rollouts": 4, "grading_workers": 0}


def test_non_utf8_config_is_exit_2(tmp_path) -> None:
    with OpenAIServer() as server:
        config = write_math_run(tmp_path, server, 3, SETTINGS)
        config.write_bytes(config.read_bytes() + "# r\u00e9sum\u00e9\n".encode("latin-1"))
        res = run_cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
        assert server.path_counts == {}
    _one_line_naming(res, config.name)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["config", "flag"])
def test_ks_above_n_is_refused_before_the_first_request(tmp_path, where) -> None:
    with OpenAIServer(responder=sum_responder) as server:
        if where == "config":
            config = write_math_run(tmp_path, server, 3, SETTINGS, ks=[1, 8])
            args = ["--config", str(config)]
        else:
            config = write_math_run(tmp_path, server, 3, SETTINGS)
            args = ["--config", str(config), "--k", "1", "--k", "8"]
        res = run_cli("run", *args, "--out", str(tmp_path / "out"))
        assert server.path_counts == {}
    assert res.returncode == 2 and b"ks: k=8 is greater than n_rollouts=4" in res.stderr, res.stderr
    assert res.stderr.count(b"\n") == 1
    assert not (tmp_path / "out").exists()


def test_show_on_a_string_index_is_exit_2_naming_the_line(tmp_path) -> None:
    run = write_synthetic_run(tmp_path / "r", n_problems=4, n_rollouts=2)
    tf = run.task("synthetic_math")
    lines = tf.judgements.read_bytes().splitlines(keepends=True)
    rec = orjson.loads(lines[2])
    rec["index"] = str(rec["index"])
    lines[2] = orjson.dumps(rec) + b"\n"
    tf.judgements.write_bytes(b"".join(lines))
    before = {p: p.read_bytes() for p in run.path.rglob("*") if p.is_file()}
    res = run_cli("show", str(run.path))
    _one_line_naming(res, "judgements.jsonl:3")
    assert {p: p.read_bytes() for p in run.path.rglob("*") if p.is_file()} == before


def test_duplicate_key_in_config_is_refused(tmp_path) -> None:
    with OpenAIServer() as server:
        config = write_math_run(tmp_path, server, 3, SETTINGS)
        config.write_text(config.read_text() + "n_rollouts: 16\n", encoding="utf-8")
        res = run_cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
        assert server.path_counts == {}
    _one_line_naming(res, config.name)
    assert b"'n_rollouts' is given twice" in res.stderr
