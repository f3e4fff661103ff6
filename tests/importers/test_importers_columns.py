"""The lm-eval importer's column path gives the generic path's records, chunk by chunk.

``rolleval._importers.lmeval._strict`` converts a chunk of samples lines of the common shape
with no Python code per line (a strict msgspec decoder and ``map`` calls over its rows). On
generated lines it must give exactly the records the generic path builds line by line
(``_samples._Samples.line``: orjson, pydantic records), take a chunk only for the reasons it
documents, and never take a chunk holding a line that is not valid JSON (the generic path
then reads it, and reports what is wrong). tests/importers/test_importers_fast.py compares whole
imports on every path; here the task.json writer is checked against atomic_write_json too.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rolleval._importers import _write
from rolleval._importers._base import ImportedTask
from rolleval._importers.lmeval import _samples
from rolleval._importers.lmeval import _strict as _lmeval_strict
from rolleval.records._lines import encode_lines, line_of

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(members=st.dictionaries(_text, st.one_of(st.none(), _text), max_size=12))
def test_task_json_from_columns_is_atomic_write_json_of_the_dict(members):
    ids, hashes = list(members), list(members.values())
    dumped = {"name": "t", "n_problems": 3, "zeta": {"problem_hashes": {}}, "alpha": [1]}
    want = orjson.dumps(
        {**dumped, "problem_hashes": {k: v for k, v in members.items() if v is not None}},
        option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE,
    )
    order = sorted(range(len(ids)), key=ids.__getitem__)
    assert b"".join(_write._task_json(dumped, ids, hashes, order)) == want


# --- whole chunks of samples lines ------------------------------------------------------

SPEC = _lmeval_strict.StrictSpec(
    "exact_match", ("exact_match", "f1"), "last-word", True, "lm-eval:t:exact_match[last-word]@1"
)
_PATH = Path("samples_t_2026-01-01T00-00-00.000000.jsonl")
_RESULTS = {
    "configs": {
        "t": {"filter_list": [{"name": "last-word", "filter": [{"function": "take_first"}]}]}
    },
    "versions": {"t": 1},
}


def _line(i, content, target, texts, answer, value, doc, role="user", extra_key=None):
    line = {
        "doc_id": i,
        "doc": doc,
        "target": target,
        "arguments": {
            "gen_args_0": {
                "arg_0": [json.dumps([{"role": role, "content": content}])],
                "arg_1": {"until": ["\n"]},
            }
        },
        "resps": [texts],
        "filtered_resps": [answer],
        "filter": "last-word",
        "metrics": ["exact_match", "f1"],
        "doc_hash": "a" * 64,
        "prompt_hash": "b" * 64,
        "target_hash": "c" * 64,
        "exact_match": value,
        "f1": 0.5,
    }
    if extra_key:
        line[extra_key] = 1
    return line


_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=8,
)
_lines = st.lists(
    st.builds(
        lambda content, target, texts, answer, value, doc, ascii_: (
            content,
            target,
            texts,
            answer,
            value,
            doc,
            ascii_,
        ),
        _text,
        _text,
        st.lists(_text, min_size=1, max_size=3),
        _text,
        st.sampled_from([0.0, 1.0, 0, 1, 0.5, 2.0, -1.0, 1e-300]),
        _json_values,
        st.booleans(),
    ),
    min_size=1,
    max_size=6,
)


def _chunk(rows, start=0):
    return "\n".join(
        json.dumps(_line(start + k, *row[:-1]), ensure_ascii=row[-1]) for k, row in enumerate(rows)
    ).encode()


_columns = _lmeval_strict.StrictChunks(SPEC).convert


def _generic(chunk: bytes) -> tuple:
    """What the generic path makes of ``chunk``'s lines, after a first line of the same
    shape (doc_id -1: it fixes the filter, the metric and the column path's spec), in the
    layout of the column path's output (prompt lines re-dumped: the column path copies the
    source's own JSON of ``doc`` and the hashes verbatim, spacing included)."""
    task = ImportedTask(name="t", prompts=[], rollouts=[], judgements=[], settings={})
    reader = _samples._Samples(_PATH, _RESULTS, None, task)
    first = _line(-1, "q", "red", ["red"], "red", 1.0, {})
    reader.line(1, first)
    assert reader.strict(first) == SPEC
    prompts, rollouts, judgements = [], [], []
    for number, raw in enumerate(chunk.split(b"\n"), start=2):
        records = reader.line(number, orjson.loads(raw))
        assert records is not None  # every generated line has the primary filter
        p, rs, js = records
        prompts.append(encode_lines([line_of(p)]))  # as the stream's writer encodes them
        rollouts.append(encode_lines([line_of(r) for r in rs]))
        judgements.append(encode_lines([line_of(j) for j in js]))
    ids = [orjson.loads(p)["problem_id"] for p in prompts]
    return (
        [orjson.dumps(orjson.loads(p)) for p in prompts],
        b"".join(rollouts),
        b"".join(judgements),
        "\n".join(ids),
        "\n".join(orjson.loads(p)["content_hash"] for p in prompts),
        bytes(orjson.loads(j)["correct"] for j in judgements),
        int(ids[0]),
        int(ids[-1]),
        reader.left_out,
        reader.max_repeats,
    )


def _comparable(packed) -> tuple:
    prompts = [orjson.dumps(orjson.loads(p)) for p in packed[0].splitlines()]
    return (prompts, *packed[1:])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_lines)
def test_the_column_path_gives_the_generic_paths_records(rows):
    chunk = _chunk(rows)
    got = _columns(chunk)
    if got is not None:
        assert _comparable(got) == _generic(chunk)
    else:
        # refused only for what the column path leaves to the generic path: a partial score
        # (the judgement carries it), an answer empty after strip (no cluster), or a line
        # that is not JSON (an infinite float in doc, which the generic path refuses)
        assert any(0 < r[4] < 1 or not r[3].strip() for r in rows) or "Infinity" in chunk.decode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_lines, st.data())
def test_the_column_path_never_takes_a_broken_line(rows, data):
    """Cut, doubled or replaced bytes anywhere: either the column path refuses the chunk, or
    every line is still valid JSON of which the generic path makes the same records."""
    chunk = bytearray(_chunk(rows))
    at = data.draw(st.integers(0, len(chunk) - 1))
    how = data.draw(st.sampled_from(["cut", "double", "replace", "insert"]))
    if how == "cut":
        del chunk[at]
    elif how == "double":
        chunk.insert(at, chunk[at])
    else:
        byte = data.draw(st.sampled_from(b'{}[]",:\\ 0a-.eu\t\x01'))
        if how == "replace":
            chunk[at] = byte
        else:
            chunk.insert(at, byte)
    chunk = bytes(chunk)
    got = _columns(chunk)
    if got is None:
        return
    for line in chunk.split(b"\n"):
        orjson.loads(line)  # valid JSON, or the test fails here
    assert _comparable(got) == _generic(chunk)


def test_the_column_path_refuses_what_the_generic_path_reads_otherwise():
    base = dict(content="q", target="red", texts=["red"], answer="red", value=1.0, doc={})
    ok = json.dumps(_line(1, **base))
    assert _columns(ok.encode()) is not None
    refused = [
        json.dumps(_line(1, **base, extra_key="surprise")),  # a key the first line lacks
        ok.replace('"doc_id": 1', '"doc_id": 1.0'),  # not an integer
        ok.replace('"doc_id": 1', '"doc_id": "1"'),
        ok.replace('"target": "red"', '"target": 7'),
        ok.replace('"exact_match": 1.0', '"exact_match": true'),
        ok.replace('"exact_match": 1.0', '"exact_match": null'),
        ok.replace('"exact_match": 1.0', '"exact_match": 1e999'),  # out of range
        ok.replace('"filter": "last-word"', '"filter": "strict"'),
        ok.replace('["exact_match", "f1"]', '["f1", "exact_match"]'),
        ok.replace('"resps": [["red"]]', '"resps": [["red"], ["blue"]]'),
        ok.replace('"resps": [["red"]]', '"resps": [[]]'),
        ok.replace('"filtered_resps": ["red"]', '"filtered_resps": ["red", "blue"]'),
        ok.replace('"doc_hash": "', '"doc_hash": "', 1).replace("}", "}}", 1),  # broken JSON
        ok.replace('"doc": {}', '"doc": {"a": 1,}'),  # invalid JSON inside a copied value
        ok.replace('"doc": {}', '"doc": [1 2]'),
        ok.replace('"doc": {}', '"doc": "\\ud800"'),  # a lone surrogate
        ok + "x",
        ok.replace('{"gen_args_0"', '{"gen_args_1": {}, "gen_args_0"'),  # a second request
        ok.replace('"target": "red"', '"target": 7, "target": "red"'),  # a repeat, one not str
        ok.replace('\\"content\\": \\"q\\"', '\\"content\\": null'),
        ok.replace('[{\\"role', ' [{\\"role'),  # not logged as a chat request
    ]
    for line in refused:
        assert line != ok
        assert _columns(line.encode()) is None, line
    # another key beside arg_0 is ignored, and a repeated key takes its last value, as the
    # generic path (orjson) reads them
    for same in (
        ok.replace('"arg_1"', '"other": [1, {"x": null}], "arg_1"'),
        ok.replace('"target": "red"', '"target": "blue", "target": "red"'),
    ):
        got = _columns(same.encode())
        assert got is not None and _comparable(got) == _generic(same.encode())
    # a key beside the mapped ones on the first line is required on every line
    with_extra = _lmeval_strict.StrictChunks(dataclasses.replace(SPEC, extra=("surprise",))).convert
    assert with_extra(ok.encode()) is None
    surprise = json.dumps(_line(1, **base, extra_key="surprise")).encode()
    assert with_extra(surprise) == _columns(ok.encode())  # and not kept
    # a chunk of two lines whose ids do not increase: the generic path checks them
    two = (json.dumps(_line(2, **base)) + "\n" + json.dumps(_line(2, **base))).encode()
    assert _columns(two) is None
