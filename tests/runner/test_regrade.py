"""`rolleval regrade`: judgements rebuilt from stored rollouts with the real math grader."""

from __future__ import annotations

import orjson
import pytest

from conftest import call_in_thread
from rolleval import regrade_run, report_run
from rolleval._cli import main
from rolleval.testing._synthetic import write_synthetic_run


def _judgements(run):
    tf = run.task("synthetic_math")
    return {
        (r["problem_id"], r["index"]): r
        for r in map(orjson.loads, tf.judgements.read_bytes().splitlines())
    }


def test_regrade_recovers_verdicts_and_reproduces_report_byte_for_byte(tmp_path):
    run = write_synthetic_run(
        tmp_path / "r",
        n_problems=25,
        n_rollouts=4,
        rng=8,
        p_infra_error=0.05,
        p_unextracted=0.1,
        clusters=3,
    )
    original = _judgements(run)
    res = regrade_run(run.path, workers=0)
    assert res.tasks["synthetic_math"]["rollouts"] == 100
    regraded = _judgements(run)
    assert set(regraded) == set(original)
    for key, old in original.items():
        new = regraded[key]
        assert new["status"] == old["status"]
        assert new.get("correct") == old.get("correct"), key
        assert new.get("extracted") == old.get("extracted"), key
        assert new.get("cluster") == old.get("cluster"), key
        assert new["grader"].startswith("math@")
    assert (run.task("synthetic_math").dir / "judgements.prev.jsonl").exists()
    assert main(["report", str(run.path)]) == 0
    first = run.report_path.read_bytes()
    assert main(["regrade", str(run.path), "--workers", "0"]) == 0
    assert run.report_path.read_bytes() == first
    assert main(["report", str(run.path)]) == 0
    assert run.report_path.read_bytes() == first


def test_regrade_in_a_process_pool_matches_in_process(tmp_path):
    a = write_synthetic_run(tmp_path / "a", n_problems=12, n_rollouts=3, rng=4, p_unextracted=0.2)
    b = write_synthetic_run(tmp_path / "b", n_problems=12, n_rollouts=3, rng=4, p_unextracted=0.2)
    regrade_run(a.path, workers=0)
    regrade_run(b.path, workers=2)
    assert _judgements(a) == _judgements(b)


@pytest.mark.parametrize("workers", [0, 1])
def test_regrade_from_a_thread_matches_the_main_thread(tmp_path, workers):
    """regrade_run from a thread other than the main thread gives the judgements of a regrade
    on the main thread (before the fix, workers=0: UsageError "must run in the main
    thread")."""
    a = write_synthetic_run(tmp_path / "a", n_problems=12, n_rollouts=3, rng=4, p_unextracted=0.2)
    b = write_synthetic_run(tmp_path / "b", n_problems=12, n_rollouts=3, rng=4, p_unextracted=0.2)
    regrade_run(a.path, workers=0)
    res = call_in_thread(regrade_run, b.path, workers=workers)
    assert res.tasks["synthetic_math"]["changed"] == 0
    judged = _judgements(b)
    assert judged == _judgements(a)
    assert not any("grader_error" in j for j in judged.values())
    assert any(j.get("correct") is True for j in judged.values())
    assert any(j.get("correct") is False and "extracted" in j for j in judged.values())


def test_regrade_changes_verdicts_when_the_grader_changes(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=10, n_rollouts=2, rng=1)
    tf = run.task("synthetic_math")
    settings = orjson.loads(tf.task_json.read_bytes())
    # a grader that only reads GSM8K "#### N" lines finds nothing in "\boxed{...}" answers
    settings["grader"] = {"type": "math", "extractors": ["gsm8k"]}
    tf.task_json.write_bytes(orjson.dumps(settings))
    res = regrade_run(run.path, workers=0)
    rep = report_run(run.path).report["tasks"]["synthetic_math"]
    assert rep["health"]["n_unextracted"]["count"] == rep["rollouts"]["gradable"] > 0
    assert res.tasks["synthetic_math"]["changed"] > 0


def test_regrade_refuses_rollouts_of_unknown_problems(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=3, n_rollouts=2)
    tf = run.task("synthetic_math")
    with open(tf.rollouts, "ab") as fh:
        fh.write(b'{"problem_id": "ghost", "index": 0, "status": "ok", "text": "1"}\n')
    before = tf.judgements.read_bytes()
    assert main(["regrade", str(run.path)]) == 2
    assert tf.judgements.read_bytes() == before


@pytest.mark.parametrize("spec", [{"type": "nope"}, "not a dict"])
def test_regrade_with_bad_grader_spec_is_input_error(tmp_path, spec):
    run = write_synthetic_run(tmp_path / "r", n_problems=2, n_rollouts=1)
    tf = run.task("synthetic_math")
    settings = orjson.loads(tf.task_json.read_bytes())
    settings["grader"] = spec
    tf.task_json.write_bytes(orjson.dumps(settings))
    assert main(["regrade", str(run.path)]) == 2
