"""The record line structs (``rolleval.records._lines``) are a serializer of the record
models, not a second format: same fields in the same order, same bytes on disk, same
content hash. A field added, renamed or reordered in one and not the other fails here."""

from __future__ import annotations

import msgspec
import orjson
import pytest
from pydantic import BaseModel

from rolleval.records import (
    JudgementRecord,
    Message,
    OptionScore,
    PromptRecord,
    RolloutRecord,
    RunManifest,
    TaskSettings,
    Usage,
    content_hash,
    dump_record,
)
from rolleval.records._lines import (
    JudgementLine,
    MessageLine,
    OptionScoreLine,
    PromptLine,
    RolloutLine,
    UsageLine,
    encode_lines,
    line_content_hash,
    line_of,
)
from rolleval.writer import RunWriter

PAIRS: list[tuple[type[BaseModel], type[msgspec.Struct]]] = [
    (PromptRecord, PromptLine),
    (RolloutRecord, RolloutLine),
    (JudgementRecord, JudgementLine),
    (Message, MessageLine),
    (Usage, UsageLine),
    (OptionScore, OptionScoreLine),
]

# every code point a JSON string can hold (no lone surrogates), and awkward ones up front
EVERY_CHAR = '"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é漢🙂' + "".join(
    chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000
)


@pytest.mark.parametrize(("model", "struct"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_line_struct_has_the_models_fields_in_order(model, struct):
    assert list(struct.__struct_fields__) == list(model.model_fields)


@pytest.mark.parametrize(("model", "struct"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_line_struct_leaves_out_exactly_what_dump_record_leaves_out(model, struct):
    """A field is optional in the struct (left out when it equals its default) exactly when
    dump_record leaves it out: its model default is None, or it is an empty metrics/extras."""
    info = {f.name: f for f in msgspec.structs.fields(struct)}
    for name, field in model.model_fields.items():
        f = info[name]
        if field.is_required():
            assert f.required, name
        elif field.default is None:
            assert f.default is None, name
        elif name in ("metrics", "extras"):
            assert f.default_factory is dict, name
        else:  # a non-None default (reference_kind, attempt, retries) is always written
            assert f.required, name


def _records() -> list[BaseModel]:
    text = EVERY_CHAR[:3000] + EVERY_CHAR[-500:]
    return [
        PromptRecord.build("p1", "plain text prompt", "42"),
        PromptRecord.build(
            "p2",
            [{"role": "system", "content": text}, {"role": "user", "content": "Q?"}],
            ["a", "b", text],
            cluster="physics",
            extras={"doc": {"x": [1, 2.5, None, True], "t": text}, "permutation": [2, 0, 1]},
            reference_kind="procedure",
        ),
        PromptRecord(problem_id="p3", prompt=None, reference=None, content_hash=None),
        RolloutRecord(problem_id="p1", index=0, status="ok", text="x"),
        RolloutRecord(
            problem_id="p2",
            index=3,
            status="ok",
            text=text,
            finish_reason="length",
            usage=Usage(prompt_tokens=12, completion_tokens=None),
            latency_s=0.125,
            seed=2**40,
            attempt=2,
            retries=3,
            model="m",
            system_fingerprint="fp",
            endpoint="http://127.0.0.1:1/v1",
            options=[OptionScore(text="A", logprob=-1e-7, tokens=1, chars=2)],
        ),
        RolloutRecord(problem_id="p3", index=1, status="infra_error", error="HTTP 503"),
        JudgementRecord(problem_id="p1", index=0, status="ok", correct=True, extracted="42"),
        JudgementRecord(
            problem_id="p2",
            index=3,
            status="ok",
            finish_reason="length",
            output_tokens=7,
            extracted=text,
            correct=False,
            score=0.375,
            cluster=1,
            metrics={"output_chars": 412.0, "f1": 1e-20},
            grader="g@1",
            grader_error=None,
            judge_raw=text,
            grader_usage=Usage(prompt_tokens=3, completion_tokens=4),
        ),
        JudgementRecord(problem_id="p3", index=1, status="timeout", grader_error="boom"),
    ]


@pytest.mark.parametrize("record", _records(), ids=lambda r: f"{type(r).__name__}")
def test_line_struct_writes_the_bytes_dump_record_writes(record):
    line = line_of(record)
    assert encode_lines([line]) == dump_record(record)
    # and the line reads back as the same record
    assert type(record).model_validate_json(encode_lines([line])) == record


def test_structs_built_directly_read_back_as_valid_records():
    """What an importer builds on its hot path (no model involved) validates as a record."""
    msgs = [MessageLine(role="user", content="Q: 1+1?\nA:")]
    p = PromptLine(
        problem_id="7",
        prompt=msgs,
        reference="2",
        reference_kind="answer",
        extras={"doc": msgspec.Raw(b'{"q": "1+1", "a": 2}')},
        content_hash=line_content_hash(msgs, "2"),
    )
    r = RolloutLine(problem_id="7", index=0, status="ok", text="2", attempt=1, retries=0)
    j = JudgementLine(problem_id="7", index=0, status="ok", extracted="2", correct=True, cluster=0)
    data = encode_lines([p]) + encode_lines([r]) + encode_lines([j])
    pl, rl, jl = data.splitlines()
    prompt = PromptRecord.model_validate_json(pl)
    assert prompt.extras == {"doc": {"q": "1+1", "a": 2}}
    assert prompt.content_hash == content_hash([{"role": "user", "content": "Q: 1+1?\nA:"}], "2")
    assert RolloutRecord.model_validate_json(rl) == RolloutRecord(
        problem_id="7", index=0, status="ok", text="2"
    )
    assert JudgementRecord.model_validate_json(jl).correct is True


def test_msgspec_and_orjson_escape_every_code_point_alike():
    """The premise of line_content_hash: both encoders write every string the same way."""
    assert msgspec.json.encode(EVERY_CHAR) == orjson.dumps(EVERY_CHAR)


@pytest.mark.parametrize(
    ("prompt", "reference"),
    [
        ("plain", "ref"),
        ("plain", None),
        ("", ""),
        ([{"role": "user", "content": "Q"}], "A"),
        ([{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}], ["a", "b"]),
        ([], None),
        ([{"role": "user", "content": EVERY_CHAR}], EVERY_CHAR[::-1]),
        (EVERY_CHAR, [EVERY_CHAR, "x"]),
    ],
    ids=[
        "text",
        "no-reference",
        "empty",
        "chat",
        "two-messages",
        "no-messages",
        "every-char",
        "list-ref",
    ],
)
def test_line_content_hash_equals_content_hash(prompt, reference):
    lines = [MessageLine(**m) for m in prompt] if isinstance(prompt, list) else prompt
    assert line_content_hash(lines, reference) == content_hash(prompt, reference)


def test_add_lines_takes_line_structs_only(tmp_path):
    with RunWriter.create(tmp_path / "r", RunManifest(run_id="x"), command="import") as w:
        t = w.add_task(TaskSettings(name="t"), [])
        rec = PromptRecord.build("p", "q", "a")
        with pytest.raises(TypeError, match="PromptLine"):
            t.add_lines([rec], [], [])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="JudgementLine"):
            t.add_lines([], [], [rec.model_dump()])  # type: ignore[list-item]
        t.add_lines([line_of(rec)], [], [])
        t.close()
        assert t.files.prompts.read_bytes() == dump_record(rec)
        w.finish()
