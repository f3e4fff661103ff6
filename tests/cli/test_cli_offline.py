"""The offline commands through the real console entry point: exit codes, messages, no tracebacks."""

from __future__ import annotations

import json

import orjson
import pytest

from conftest import run_cli as rolleval
from rolleval._cli import main
from rolleval.testing._synthetic import write_synthetic_run


def test_report_text_and_json(tmp_path):
    write_synthetic_run(tmp_path / "r", n_problems=20, n_rollouts=4, p_infra_error=0.1)
    res = rolleval("report", str(tmp_path / "r"))
    assert res.returncode == 0, res.stderr
    assert "pass@1" in res.stdout and "infra_errors" in res.stdout
    res = rolleval("report", str(tmp_path / "r"), "--format", "json", "--no-write")
    data = json.loads(res.stdout)
    assert data["tasks"]["synthetic_math"]["metrics"]["pass@1"]["denominator"] <= 20


def test_report_reproduces_stored_report_byte_for_byte(tmp_path):
    write_synthetic_run(tmp_path / "r", n_problems=30, n_rollouts=4, p_unextracted=0.1)
    assert main(["report", str(tmp_path / "r")]) == 0
    before = (tmp_path / "r" / "report.json").read_bytes()
    task_before = (tmp_path / "r" / "tasks" / "synthetic_math" / "report.json").read_bytes()
    assert main(["report", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.json").read_bytes() == before
    assert (tmp_path / "r" / "tasks" / "synthetic_math" / "report.json").read_bytes() == task_before


def test_missing_run_is_one_line_exit_2(tmp_path):
    res = rolleval("report", str(tmp_path / "nope"))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert "nope" in res.stderr and "not a run directory" in res.stderr


def test_corrupt_judgement_names_file_line_and_fix_and_keeps_files(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=5, n_rollouts=2)
    tf = run.task("synthetic_math")
    lines = tf.judgements.read_bytes().splitlines(keepends=True)
    lines[3] = (
        b'{"problem_id": "synthetic_math/000001", "index": 1, "status": "ok", "correct": "yes"}\n'
    )
    tf.judgements.write_bytes(b"".join(lines))
    before = tf.judgements.read_bytes()
    res = rolleval("report", str(run.path))
    assert res.returncode == 2
    assert (
        "judgements.jsonl:4" in res.stderr
        and "'correct': Expected `bool | null`, got `str`" in res.stderr
        and "regrade" in res.stderr
    )
    assert "Traceback" not in res.stderr
    assert tf.judgements.read_bytes() == before
    assert not (run.path / "report.json").exists()


def test_debug_shows_traceback(tmp_path):
    res = rolleval("--debug", "report", str(tmp_path / "nope"))
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_bad_flag_is_usage_error_exit_2(tmp_path):
    res = rolleval("report", str(tmp_path), "--confidence-level", "1.5")
    assert (
        res.returncode == 2 and "confidence-level" in res.stderr and "Traceback" not in res.stderr
    )


def test_show_failures_and_problem(tmp_path):
    write_synthetic_run(tmp_path / "r", n_problems=6, n_rollouts=3, p_unextracted=0.5, rng=2)
    res = rolleval("show", str(tmp_path / "r"), "--failures", "--format", "jsonl")
    assert res.returncode == 0
    items = [orjson.loads(x) for x in res.stdout.splitlines()]
    assert items and all(r["correct"] is not True for it in items for r in it["rollouts"])
    res = rolleval("show", str(tmp_path / "r"), "--problem", "synthetic_math/000002")
    assert (
        res.returncode == 0 and "synthetic_math/000002" in res.stdout and "rollout 2" in res.stdout
    )
    res = rolleval("show", str(tmp_path / "r"), "--problem", "nope")
    assert res.returncode == 2 and "no problem 'nope'" in res.stderr


def test_show_unextracted_only(tmp_path):
    write_synthetic_run(tmp_path / "r", n_problems=10, n_rollouts=4, p_unextracted=0.5, rng=4)
    res = rolleval("show", str(tmp_path / "r"), "--unextracted", "--format", "jsonl")
    items = [orjson.loads(x) for x in res.stdout.splitlines()]
    rolls = [r for it in items for r in it["rollouts"]]
    assert rolls and all(r["extracted"] is None and r["status"] == "ok" for r in rolls)


@pytest.mark.parametrize("cmd", [["report"], ["show"], ["regrade"]])
def test_commands_refuse_non_run_dirs(tmp_path, cmd):
    (tmp_path / "x").mkdir()
    res = rolleval(*cmd, str(tmp_path / "x"))
    assert res.returncode == 2 and "manifest.json missing" in res.stderr
