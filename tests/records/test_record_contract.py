"""Every byte a run directory holds validates against the record models.

Runs made by the runner (against the real test server), by ``rolleval example`` and by
``regrade`` are checked line by line; the fast columnar reader is pinned to the models.
"""

from __future__ import annotations

import typing

import msgspec
import orjson
import pytest

from conftest import assert_run_valid, run_cli, run_config, write_math_task
from rolleval import run_eval
from rolleval.errors import DataError
from rolleval.records import (
    SCHEMA_VERSION,
    JudgementRecord,
    PromptRecord,
    RolloutRecord,
    RunManifest,
    TaskSettings,
    dump_record,
)
from rolleval.rundir._store import RunDir, read_jsonl_columns
from rolleval.rundir._table import (
    UNREAD_JUDGEMENT_FIELDS,
    UNREAD_PROMPT_FIELDS,
    PromptRow,
    ScoredJudgementRow,
    load_task_table,
)
from rolleval.testing import OpenAIServer
from rolleval.testing._synthetic import write_synthetic_run


def _responder(request):
    seed = request["seed"]
    if seed % 5 == 0:
        return "no idea", "length"
    return f"so \\boxed{{{seed % 3}}}", "stop"


def test_runner_made_run_validates_line_by_line(tmp_path):
    from rolleval.testing import Fault

    data = write_math_task(tmp_path / "d.jsonl", 6)
    # the third request fails (no retries), so the resume has one rollout to request again
    with OpenAIServer(responder=_responder, faults=[None, None, Fault.http_status(503)]) as srv:
        run_eval(run_config(srv, data), tmp_path / "run", progress=False)
        srv.faults = None
        run_eval(run_config(srv, data), tmp_path / "run", resume=True, progress=False)
    counts = assert_run_valid(tmp_path / "run")
    assert counts["prompts.jsonl"] == 6
    assert counts["judgements.jsonl"] == 18
    assert counts["rollouts.jsonl"] == 19  # 18 first attempts, 1 second
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
        if name in ("output_tokens", "reasoning_tokens", "thought_chars", "answer_chars"):
            assert model_ann == int | None and ann == float | None  # counts read as float
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
    rec["index"] = "2"
    lines[2] = orjson.dumps(rec) + b"\n"
    tf.rollouts.write_bytes(b"".join(lines))
    with pytest.raises(
        DataError, match=r"rollouts\.jsonl:3: 'index': Input should be a valid integer"
    ):
        tf.read_rollouts()
    rec["index"] = True  # strict, like the columnar reader: a boolean is not an index
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


# ---------------------------------------------------------------- schema version 1 on disk

_V1_MANIFEST = {
    "config": {"model": "m", "n_rollouts": 2, "seed": 0},
    "created_at": "2026-01-01T00:00:00Z",
    "format": "rolleval-run",
    "measurement": {"model": "m", "n": 2},
    "provenance": {"endpoint": {"models": [], "models_error": None}, "server": None},
    "provenance_resumes": [],
    "rolleval_version": "0.1.0",
    "run_id": "abc",
    "schema_version": 1,
    "segments": [
        {
            "completed": 4,
            "ended_at": "2026-01-01T00:00:01Z",
            "failed": 0,
            "requested": 4,
            "seconds": 1.0,
            "started_at": "2026-01-01T00:00:00Z",
            "status": "completed",
        }
    ],
    "status": "completed",
    "tasks": ["t"],
    "throughput": {"concurrency": 8, "ks": None},
}
_V1_TASK = {
    "cluster_field": None,
    "denominator_policy": "judged",
    "description": None,
    "eval_set_hash": "0" * 64,
    "grader": {"type": "math"},
    "grader_dependencies": {"math-verify": None, "rolleval": "0.1.0"},
    "grader_identity": "math@1",
    "ks": None,
    "licence": "CC-BY",
    "n_problems": 2,
    "n_rollouts": 2,
    "name": "t",
    "problem_hashes": {"t/a": "1" * 64, "t/b": "2" * 64},
    "sampling": {
        "extra_body": {},
        "max_tokens": None,
        "stop": None,
        "temperature": 0.7,
        "top_p": None,
    },
    "score_key": "correct",
    "source": {"path": "/data.jsonl", "sha256": "3" * 64},
}
_V1_PROFILE = {
    "latency_s": {"n": 0, "p50": None, "p90": None, "p99": None},
    "note": "throughput uses the wall time of all run segments (all tasks of the run share it)",
    "response_models": [],
    "retries": 0,
    "rollouts": {"attempts": 4, "by_status": {"ok": 4}, "effective": 4},
    "rollouts_per_second": 4.0,
    "system_fingerprints": [],
    "tokens": {
        "completion_mean": None,
        "completion_total": None,
        "prompt_total": None,
        "reported_by": 0,
    },
    "wall_seconds": 1.0,
}


def test_files_written_by_the_first_schema_1_writers_read_as_the_current_schema(tmp_path):
    """The JSON files as rolleval 0.1.0's runner wrote them (nulls kept, no versions in
    task.json / profile.json, judgement keys in the old order) read back unchanged, but for
    the version (lifted to 3), the manifest's ``measurement.n`` (now ``n_rollouts``) and
    task.json's ``thinking`` (``"none"``: its texts were graded whole)."""
    from rolleval import report_run
    from rolleval.records import Profile

    run = tmp_path / "old"
    task = run / "tasks" / "t"
    task.mkdir(parents=True)
    (run / "manifest.json").write_bytes(orjson.dumps(_V1_MANIFEST))
    (task / "task.json").write_bytes(orjson.dumps(_V1_TASK))
    (task / "profile.json").write_bytes(orjson.dumps(_V1_PROFILE))
    prompts = [
        {
            "problem_id": "t/a",
            "prompt": [{"role": "user", "content": "a"}],
            "reference": "1",
            "content_hash": "1" * 64,
        },
        {
            "problem_id": "t/b",
            "prompt": "b",
            "reference": ["2", "two"],
            "cluster": "x",
            "extras": {"k": 1},
            "content_hash": "2" * 64,
        },
    ]
    (task / "prompts.jsonl").write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in prompts))
    judgements = [
        {
            "problem_id": pid,
            "index": j,
            "status": "ok",
            "finish_reason": "stop",
            "output_tokens": 3,
            "grader": "math@1",
            "extracted": "1",
            "correct": pid == "t/a",
            "cluster": 0,
        }
        for pid in ("t/a", "t/b")
        for j in range(2)
    ]
    (task / "judgements.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in judgements))
    rd = RunDir.open(run)
    assert rd.info.segments[0].completed == 4 and rd.task_names() == ["t"]
    assert rd.info.schema_version == SCHEMA_VERSION and rd.info.measurement == {
        "model": "m",
        "n_rollouts": 2,
    }
    tf = rd.task("t")
    # every key, nulls included, as stored; the version lifted to the current one
    assert tf.read_task() == {**_V1_TASK, "schema_version": SCHEMA_VERSION, "thinking": "none"}
    assert tf.read_settings().schema_version == SCHEMA_VERSION
    assert Profile.model_validate(_V1_PROFILE).rollouts.effective == 4
    assert tf.read_prompts().by_id["t/b"].reference == ["2", "two"]
    assert len(tf.read_judgements().effective) == 4
    rep = report_run(run, write=False).report
    assert rep["tasks"]["t"]["metrics"]["pass@1"]["value"] == 0.5


def test_an_importer_builds_a_complete_run_from_records_alone(tmp_path):
    """What an importer does: records in, a run directory every command reads out."""
    from rolleval import report_run, show_records
    from rolleval.records import RunSummary
    from rolleval.writer import RunWriter

    prompts = [PromptRecord.build(f"t/{i}", f"Q{i}", str(i)) for i in range(4)]
    rollouts = [
        RolloutRecord(problem_id=f"t/{i}", index=j, status="ok", text=f"\\boxed{{{i * j}}}")
        for i in range(4)
        for j in range(2)
    ]
    verdicts = [
        JudgementRecord(
            problem_id=r.problem_id,
            index=r.index,
            status="ok",
            extracted=r.text[7:-1],
            correct=r.text[7:-1] == r.problem_id[2:],
            cluster=0,
            grader="imported@1",
        )
        for r in rollouts
    ]
    manifest = RunManifest(run_id="imported-1", config=RunSummary(model="other-harness"))
    settings = TaskSettings(
        name="t",
        n_rollouts=2,
        grader={"type": "math"},
        grader_identity="imported@1",
        problem_hashes={p.problem_id: p.content_hash for p in prompts},
    )
    with RunWriter.create(tmp_path / "imp", manifest, command="import") as w:
        t = w.add_task(settings, prompts)
        t.add_rollouts(rollouts)
        t.add_judgements(verdicts)
        w.finish()
    rep = report_run(tmp_path / "imp").report
    # rollout j of problem i answers i*j: problem 0 is right twice, problems 1-3 once (j=1)
    assert rep["tasks"]["t"]["metrics"]["pass@1"]["value"] == pytest.approx((1 + 3 * 0.5) / 4)
    assert rep["model"] == "other-harness"
    assert show_records(tmp_path / "imp", problem="t/1")[0]["rollouts"][1]["correct"] is True
    counts = assert_run_valid(tmp_path / "imp")
    assert counts["rollouts.jsonl"] == counts["judgements.jsonl"] == 8


def test_the_manifest_view_is_read_only(tmp_path):
    """Changes go through RunDir.info and the writer; a write to the dict view fails loudly."""
    run = write_synthetic_run(tmp_path / "s", n_problems=2, n_rollouts=1)
    with pytest.raises(TypeError):
        run.manifest["status"] = "running"  # type: ignore[index]
    assert RunDir.open(run.path).manifest["status"] == "completed"
