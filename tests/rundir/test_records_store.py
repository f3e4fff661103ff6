"""Record protocol and run-directory I/O: round trips, torn lines, atomic writes, refusals."""

from __future__ import annotations

import json
import warnings

import msgspec
import orjson
import pytest
from pydantic import ValidationError

from rolleval.errors import DataError, SchemaVersionError, UsageError
from rolleval.records import (
    SCHEMA_VERSION,
    JudgementRecord,
    PromptRecord,
    RolloutRecord,
    check_schema_version,
    content_hash,
    dump_record,
    effective_rollouts,
    make_judgement,
)
from rolleval.rundir._store import (
    JsonlAppender,
    RunDir,
    TornLineWarning,
    atomic_write_json,
    read_jsonl,
    read_jsonl_columns,
)
from rolleval.writer import RunWriter


def test_records_round_trip_through_jsonl():
    prompt = [{"role": "user", "content": "1+1?"}]
    p = PromptRecord(
        problem_id="t/1",
        prompt=prompt,
        reference=["2", "two"],
        cluster="arith",
        extras={"k": 1},
        content_hash=content_hash(prompt, ["2", "two"]),
    )
    r = RolloutRecord(
        problem_id="t/1",
        index=3,
        status="ok",
        text="2",
        finish_reason="stop",
        usage={"completion_tokens": 1},
        latency_s=0.1,
        seed=7,
    )
    j = JudgementRecord(
        problem_id="t/1",
        index=3,
        status="ok",
        extracted="2",
        correct=True,
        cluster=0,
        grader="math@1",
    )
    for rec in (p, r, j):
        line = dump_record(rec)
        assert line.endswith(b"\n") and b"null" not in line
        back = type(rec).model_validate(orjson.loads(line))
        assert back == rec


def test_unextracted_is_none_not_empty_and_infra_carries_error():
    j = JudgementRecord(problem_id="a", index=0, status="ok", correct=False)
    assert j.extracted is None and j.gradable
    assert "extracted" not in orjson.loads(dump_record(j))
    r = RolloutRecord(problem_id="a", index=0, status="infra_error", error="HTTP 503")
    assert orjson.loads(dump_record(r))["error"] == "HTTP 503"
    assert not JudgementRecord(problem_id="a", index=0, status="ok", grader_error="boom").gradable


@pytest.mark.parametrize(
    "bad",
    [
        {"problem_id": "a", "index": -1, "status": "ok"},
        {"problem_id": "a", "index": 0, "status": "maybe"},
        {"problem_id": "", "index": 0, "status": "ok"},
        {"problem_id": "a", "index": 0, "status": "ok", "surprise": 1},
        {"problem_id": "a", "index": 0, "status": "ok", "score": 1.5},
    ],
)
def test_judgement_validation_rejects(bad):
    with pytest.raises(ValidationError):
        JudgementRecord.model_validate(bad)


def test_content_hash_is_canonical_and_sensitive():
    m = [{"role": "user", "content": "x"}]
    assert content_hash(m, "1") == content_hash([{"content": "x", "role": "user"}], "1")
    assert content_hash(m, "1") != content_hash(m, "2")
    assert content_hash(m, "1") != content_hash([{"role": "user", "content": "x "}], "1")


def test_schema_version_check_names_both_versions(tmp_path):
    check_schema_version(SCHEMA_VERSION, path=tmp_path)
    with pytest.raises(SchemaVersionError, match=rf"version 99 .*reads version {SCHEMA_VERSION}"):
        check_schema_version(99, path=tmp_path / "manifest.json")


def test_effective_rollouts_first_ok_wins_and_retries_supersede_failures():
    recs = [
        {"problem_id": "a", "index": 0, "status": "infra_error", "attempt": 1},
        {"problem_id": "a", "index": 0, "status": "ok", "text": "first", "attempt": 2},
        {"problem_id": "a", "index": 0, "status": "ok", "text": "dup", "attempt": 3},
        {"problem_id": "a", "index": 1, "status": "timeout", "attempt": 1},
        {"problem_id": "a", "index": 1, "status": "infra_error", "attempt": 2},
    ]
    chosen, dups = effective_rollouts([RolloutRecord.model_validate(r) for r in recs])
    assert chosen[("a", 0)].text == "first"
    assert chosen[("a", 1)].attempt == 2
    assert dups == 1


def test_make_judgement_copies_status_and_drops_nones():
    rollout = RolloutRecord(problem_id="a", index=2, status="infra_error", error="x")
    rec = make_judgement(rollout, None, "g@1")
    assert rec == JudgementRecord(problem_id="a", index=2, status="infra_error", grader="g@1")
    assert orjson.loads(dump_record(rec)) == {
        "problem_id": "a",
        "index": 2,
        "status": "infra_error",
        "grader": "g@1",
    }


# ---------------------------------------------------------------- JSONL reading


def test_read_jsonl_ignores_torn_last_line_with_warning(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3, "b')
    with pytest.warns(TornLineWarning, match=r"j.jsonl:3: ignoring a torn last line"):
        c = read_jsonl(p)
    assert [r["a"] for r in c.records] == [1, 2]
    assert c.torn_line == 3


def test_read_jsonl_accepts_complete_last_line_without_newline(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2}')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = read_jsonl(p)
    assert [r["a"] for r in c.records] == [1, 2] and c.torn_line is None


def test_read_jsonl_corrupt_middle_line_is_an_error_naming_file_and_line(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(DataError, match=r"j.jsonl:2: line is not valid JSON"):
        read_jsonl(p)
    p.write_bytes(b'{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"j.jsonl:2: line is not a JSON object"):
        read_jsonl(p)


def test_read_jsonl_skips_blank_lines_keeping_line_numbers(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(b'{"a": 1}\n\n{"a": 3}\n')
    c = read_jsonl(p)
    assert c.lines == [1, 3]


def test_appender_moves_torn_tail_aside_and_never_glues(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2, "tor')
    with JsonlAppender(p) as app:
        assert app.recovered_torn_bytes == len(b'{"a": 2, "tor')
        app.write(b'{"a": 3}\n')
    assert p.read_bytes() == b'{"a": 1}\n{"a": 3}\n'
    assert (tmp_path / "r.jsonl.torn").read_bytes() == b'{"a": 2, "tor\n'


def test_appender_completes_a_whole_record_missing_its_newline(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}')
    with JsonlAppender(p) as app:
        app.write(b'{"a": 2}\n')
    assert p.read_bytes() == b'{"a": 1}\n{"a": 2}\n'


def test_atomic_write_leaves_no_temp_files(tmp_path):
    target = tmp_path / "x.json"
    atomic_write_json(target, {"b": 1, "a": [1, 2]})
    assert json.loads(target.read_text()) == {"a": [1, 2], "b": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


# ---------------------------------------------------------------- run directory


def test_a_new_run_refuses_an_existing_nonempty_directory(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "keep.txt").write_text("precious")
    with pytest.raises(UsageError, match=r"run directory exists; pass --resume"):
        RunWriter.create(d, {"run_id": "x"}).finish()
    assert (d / "keep.txt").read_text() == "precious"
    assert not (d / "manifest.json").exists()


def test_run_dir_open_checks_format_and_version(tmp_path):
    with pytest.raises(DataError, match="no such directory"):
        RunDir.open(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"manifest\.json missing"):
        RunDir.open(tmp_path / "empty")
    run = RunWriter.create(tmp_path / "r", {"run_id": "x", "rolleval_version": "0.0.1"}).finish()
    assert RunDir.open(run.path).manifest["run_id"] == "x"
    data = json.loads((run.path / "manifest.json").read_text())
    (run.path / "manifest.json").write_text(json.dumps({**data, "schema_version": 7}))
    with pytest.raises(SchemaVersionError, match=r"schema version 7 \(written by rolleval 0.0.1\)"):
        RunDir.open(run.path)
    (run.path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(DataError, match="not a rolleval run manifest"):
        RunDir.open(run.path)
    (run.path / "manifest.json").write_text("{broken")
    with pytest.raises(DataError, match="run manifest is not valid JSON"):
        RunDir.open(run.path)


# ---------------------------------------------------------------- typed column reader


class _Row(msgspec.Struct):
    problem_id: str
    index: int
    correct: bool | None = None


def test_column_reader_types_fields_and_skips_others(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(
        b'{"problem_id": "a", "index": 0, "correct": true, "other": [1, 2]}\n{"problem_id": "b", "index": 3}\n'
    )
    c = read_jsonl_columns(p, _Row)
    assert c.columns == {"problem_id": ["a", "b"], "index": [0, 3], "correct": [True, None]}
    assert c.validated and c.n == 2 and c.line_of(1) == 2


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            b'{"problem_id": "b", "index": true}',
            r"j.jsonl:2: 'index': Expected `int`, got `bool`; fix it",
        ),
        (
            b'{"problem_id": "b", "index": 1, "correct": "yes"}',
            r"j.jsonl:2: 'correct': Expected `bool \| null`, got `str`",
        ),
        (b'{"index": 1}', r"j.jsonl:2: Object missing required field `problem_id`"),
        (b"[1, 2]", r"j.jsonl:2: line is not a JSON object"),
        (b'{"problem_id": "b", "ind', r"j.jsonl:2: line is not valid JSON"),
    ],
)
def test_column_reader_names_the_bad_line(tmp_path, line, message):
    p = tmp_path / "j.jsonl"
    p.write_bytes(
        b'{"problem_id": "a", "index": 0}\n' + line + b'\n{"problem_id": "c", "index": 0}\n'
    )
    with pytest.raises(DataError, match=message):
        read_jsonl_columns(p, _Row, fix="fix it")


def test_column_reader_torn_tail_and_blank_lines(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(
        b'{"problem_id": "a", "index": 0}\n\n{"problem_id": "b", "index": 1}\n{"problem_id": "c", "ind'
    )
    with pytest.warns(TornLineWarning, match=r"j.jsonl:4"):
        c = read_jsonl_columns(p, _Row)
    assert c.columns["problem_id"] == ["a", "b"] and c.lines == [1, 3] and c.torn_line == 4
    assert read_jsonl_columns(tmp_path / "none.jsonl", _Row, missing_ok=True).n == 0
    with pytest.raises(DataError, match="not found"):
        read_jsonl_columns(tmp_path / "none.jsonl", _Row)


def test_column_reader_chunks_agree_with_whole_file(tmp_path, monkeypatch):
    import rolleval.rundir._store as store

    p = tmp_path / "j.jsonl"
    p.write_bytes(
        b"".join(
            b'{"problem_id": "p%d", "index": %d, "correct": %s}\n'
            % (i, i % 7, b"true" if i % 3 else b"false")
            for i in range(500)
        )
    )
    whole = read_jsonl_columns(p, _Row)
    monkeypatch.setattr(store, "_CHUNK_BYTES", 97)
    chunked = read_jsonl_columns(p, _Row)
    assert chunked.columns == whole.columns and chunked.n == 500
