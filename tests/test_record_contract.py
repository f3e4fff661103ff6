"""Every byte a run directory holds validates against the record models.

Runs made by the runner (against the real test server), by ``rolleval example`` and by
``regrade`` are checked line by line; the fast columnar reader is pinned to the models.
"""

from __future__ import annotations

import json
import typing

import msgspec
import orjson
import pytest

from conftest import assert_run_valid, run_cli
from rolleval import build_config, run_eval
from rolleval.errors import DataError
from rolleval.records import (
    JudgementRecord,
    PromptRecord,
    RunManifest,
    TaskSettings,
    dump_record,
)
from rolleval.store import RunDir, read_jsonl_columns
from rolleval.synthetic import write_synthetic_run
from rolleval.table import (
    UNREAD_JUDGEMENT_FIELDS,
    UNREAD_PROMPT_FIELDS,
    PromptRow,
    ScoredJudgementRow,
    load_task_table,
)
from rolleval.testing import OpenAIServer


def _responder(request):
    seed = request["seed"]
    if seed % 5 == 0:
        return "no idea", "length"
    return f"so \\boxed{{{seed % 3}}}", "stop"


def _data(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"Q{i}?", "answer": str(i % 3)}) + "\n"
            for i in range(6)
        )
    )
    return path


def _config(server, data, **over):
    cfg = {
        "model": server.model,
        "endpoints": [server.base_url],
        "tasks": [
            {
                "name": "t",
                "path": str(data),
                "type": "math",
                "id_field": "id",
                "question_field": "question",
                "answer_field": "answer",
            }
        ],
        "n": 3,
        "grading_workers": 0,
        "max_retries": 0,
        "timeout_s": 5,
    }
    cfg.update(over)
    return build_config(cfg)


def test_runner_made_run_validates_line_by_line(tmp_path):
    data = _data(tmp_path)
    fail = {7}

    def faults(req):
        from rolleval.testing import Fault

        return Fault.http_status(503) if req.seed % 11 in fail else None

    with OpenAIServer(responder=_responder, faults=faults) as srv:
        run_eval(_config(srv, data), tmp_path / "run", progress=False)
        srv.faults = None
        run_eval(_config(srv, data), tmp_path / "run", resume=True, progress=False)
    counts = assert_run_valid(tmp_path / "run")
    assert counts["prompts.jsonl"] == 6
    assert counts["judgements.jsonl"] == 18
    assert counts["rollouts.jsonl"] >= 18
    assert counts["manifest.json"] == counts["profile.json"] == counts["task.json"] == 1
    manifest = RunDir.open(tmp_path / "run").info
    assert [s.status for s in manifest.segments] == ["completed", "completed"]
    assert len(manifest.provenance_resumes) == 1
    # the lock was released: an empty lock file
    assert (tmp_path / "run" / ".rolleval.lock").read_bytes() == b""


def test_example_and_regraded_runs_validate_line_by_line(tmp_path):
    res = run_cli("example", str(tmp_path / "ex"), "--problems", "30", "--rollouts", "4")
    assert res.returncode == 0, res.stderr
    counts = assert_run_valid(tmp_path / "ex")
    assert counts["judgements.jsonl"] == counts["rollouts.jsonl"] == 120
    res = run_cli("regrade", str(tmp_path / "ex"), "--workers", "0")
    assert res.returncode == 0, res.stderr
    counts = assert_run_valid(tmp_path / "ex")
    assert counts["judgements.prev.jsonl"] == counts["judgements.jsonl"] == 120
    assert counts["report.json"] == 2  # run level and task level


def test_synthetic_run_with_injected_faults_validates(tmp_path):
    write_synthetic_run(
        tmp_path / "s",
        n_problems=40,
        n_rollouts=4,
        p_infra_error=0.1,
        p_grader_error=0.05,
        p_unextracted=0.1,
        p_truncated=0.1,
        duplicates=5,
        clusters=3,
    )
    counts = assert_run_valid(tmp_path / "s")
    assert counts["judgements.jsonl"] == 165


def test_every_writer_path_refuses_hand_built_dicts(tmp_path):
    from rolleval.writer import RunWriter

    with RunWriter.create(tmp_path / "r", RunManifest(run_id="x")) as w:
        with pytest.raises(TypeError, match="takes TaskSettings"):
            w.add_task({"name": "t"}, [])  # type: ignore[arg-type]
        t = w.add_task(TaskSettings(name="t", n_rollouts=1), [])
        with pytest.raises(TypeError, match="takes RolloutRecord"):
            t.add_rollout({"problem_id": "a", "index": 0, "status": "ok"})  # type: ignore[arg-type]
        w.finish()


# ---------------------------------------------------------------- the columnar reader


def _fields(struct: type[msgspec.Struct]) -> set[str]:
    return set(struct.__struct_fields__)


def test_judgement_row_covers_every_judgement_field():
    """Fails when a field is added to JudgementRecord and not to the row (or the unread list)."""
    model = set(JudgementRecord.model_fields)
    row = _fields(ScoredJudgementRow)
    assert row <= model, f"row fields not in the model: {row - model}"
    assert model == row | UNREAD_JUDGEMENT_FIELDS, (
        f"read by neither: {model - row - UNREAD_JUDGEMENT_FIELDS}; "
        f"listed as unread but read: {row & UNREAD_JUDGEMENT_FIELDS}"
    )


def test_prompt_row_covers_every_prompt_field():
    model = set(PromptRecord.model_fields)
    row = _fields(PromptRow)
    assert row <= model and model == row | UNREAD_PROMPT_FIELDS


def test_row_and_model_agree_on_every_value(tmp_path):
    """A record with every field set decodes to the same values through both readers."""
    full = JudgementRecord(
        problem_id="a",
        index=3,
        status="ok",
        finish_reason="length",
        output_tokens=17,
        extracted="42",
        correct=True,
        score=0.5,
        cluster=1,
        metrics={"chars": 9.0},
        grader="g@1",
        grader_error=None,
        judge_raw="raw",
    )
    failed = JudgementRecord(problem_id="b", index=0, status="ok", grader_error="boom")
    path = tmp_path / "j.jsonl"
    path.write_bytes(dump_record(full) + dump_record(failed))
    cols = read_jsonl_columns(path, ScoredJudgementRow)
    for i, rec in enumerate((full, failed)):
        for name in cols.columns:
            want = getattr(rec, name)
            if name == "metrics" and not want:
                want = None  # empty metrics are not written
            assert cols.columns[name][i] == want, name


def test_row_field_types_accept_what_the_model_declares():
    """Each row field's type is the model's type (modulo int accepted as float)."""
    hints = typing.get_type_hints(ScoredJudgementRow)
    for name, ann in hints.items():
        model_ann = JudgementRecord.model_fields[name].annotation
        if name == "output_tokens":
            assert model_ann == int | None and ann == float | None  # tokens read as float
        elif name == "status":
            assert ann is str  # the Literal is checked by the table, naming the line
        elif name == "metrics":
            assert (
                model_ann == dict[str, float] and ann == dict[str, float] | None
            )  # {} not written
        else:
            assert ann == model_ann, name


def test_table_and_typed_reader_agree_on_the_effective_judgement(tmp_path):
    run = write_synthetic_run(tmp_path / "s", n_problems=30, n_rollouts=4, duplicates=25)
    tf = run.task("synthetic_math")
    typed = tf.read_judgements()
    assert typed.duplicates == 25
    table = load_task_table(tf)
    assert table.n_duplicate_judgements == 25
    for p, j, c in zip(table.r_problem, table.r_index, table.r_correct):
        rec = typed.effective[(table.problem_ids[p], int(j))]
        assert bool(c) == (rec.gradable and rec.correct is True)


# ---------------------------------------------------------------- typed readers


def test_typed_reader_names_file_line_and_field(tmp_path):
    run = write_synthetic_run(tmp_path / "s", n_problems=3, n_rollouts=2)
    tf = run.task("synthetic_math")
    lines = tf.rollouts.read_bytes().splitlines(keepends=True)
    rec = orjson.loads(lines[2])
    rec["index"] = "two"
    lines[2] = orjson.dumps(rec) + b"\n"
    tf.rollouts.write_bytes(b"".join(lines))
    with pytest.raises(
        DataError, match=r"rollouts\.jsonl:3: 'index': Input should be a valid integer"
    ):
        tf.read_rollouts()
    lines[2] = b'{"problem_id": \n'
    tf.rollouts.write_bytes(b"".join(lines))
    with pytest.raises(DataError, match=r"rollouts\.jsonl:3: line is not valid JSON"):
        tf.read_rollouts()
    lines[2] = b'{"problem_id": "x", "index": 0, "status": "ok", "surprise": 1}\n'
    tf.rollouts.write_bytes(b"".join(lines))
    with pytest.raises(DataError, match=r"rollouts\.jsonl:3: 'surprise': unknown field"):
        tf.read_rollouts()


def test_task_settings_read_back_equal_to_what_was_written(tmp_path):
    run = write_synthetic_run(tmp_path / "s", n_problems=3, n_rollouts=2)
    tf = run.task("synthetic_math")
    assert tf.read_task() == orjson.loads(tf.task_json.read_bytes())
    assert tf.read_settings().n_rollouts == 2


def test_baseline_file_validates_against_its_model(tmp_path):
    from rolleval.records import BaselineFile

    write_synthetic_run(tmp_path / "s", n_problems=12, n_rollouts=4, p_infra_error=0.1)
    res = run_cli("baseline", "save", str(tmp_path / "s"), "--out", str(tmp_path / "b.json"))
    assert res.returncode == 0, res.stderr
    doc = BaselineFile.model_validate(orjson.loads((tmp_path / "b.json").read_bytes()))
    task = doc.tasks["synthetic_math"]
    assert len(task.ids) == len(task.n) == len(task.c) == 12
    assert all(len(v) == 12 for v in task.values.values())
