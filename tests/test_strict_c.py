"""The lm-eval importer's C extension gives the bytes of its Python code.

``rolleval._importers.lmeval._strict_c`` is optional (built where a C compiler is; see setup.py):
its SHA-256 must equal hashlib's, its JSON strings msgspec's, its indented map orjson's,
and its conversion of a chunk of samples lines the Python column path's, whenever it takes
the chunk; it must never take a chunk that is not valid JSON of the common shape (the line
paths then read it, and report what is wrong). tests/test_importers_fast.py compares whole
imports on every path.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rolleval._importers import _write
from rolleval._importers.lmeval import _strict as _lmeval_strict

C = _lmeval_strict._strict_c
_ASCII_SPACE = "".join(chr(c) for c in range(128) if chr(c).isspace())
COMPILER = shutil.which("cc") or shutil.which("gcc")


def test_the_extension_is_built_where_a_compiler_is():
    """setup.py builds it as an optional extension: a machine with a C compiler must have
    it (else the import-speed target silently depends on the Python column path)."""
    assert C is not None or COMPILER is None


needs_c = pytest.mark.skipif(C is None, reason="built without a C compiler")
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_sha256_is_hashlib(data):
    assert C.sha256_hex(data) == hashlib.sha256(data).hexdigest()


@needs_c
def test_json_strings_are_escaped_as_msgspec_escapes_them():
    everything = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c < 0xE000)
    assert C.json_str(everything) == msgspec.json.encode(everything)
    assert C.json_str("\U0001f642\x7f\u2028") == msgspec.json.encode("\U0001f642\x7f\u2028")


@settings(max_examples=200, deadline=None)
@given(
    members=st.dictionaries(_text, st.one_of(st.none(), _text), max_size=12),
    use_c=st.booleans(),
)
def test_task_json_from_columns_is_atomic_write_json_of_the_dict(members, use_c):
    real = _write._strict_c
    if use_c and real is None:
        return
    _write._strict_c = real if use_c else None
    try:
        ids, hashes = list(members), list(members.values())
        dumped = {"name": "t", "n_problems": 3, "zeta": {"problem_hashes": {}}, "alpha": [1]}
        want = orjson.dumps(
            {**dumped, "problem_hashes": {k: v for k, v in members.items() if v is not None}},
            option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE,
        )
        order = sorted(range(len(ids)), key=ids.__getitem__)
        assert b"".join(_write._task_json(dumped, ids, hashes, order)) == want
    finally:
        _write._strict_c = real


# --- whole chunks of samples lines ------------------------------------------------------

SPEC = _lmeval_strict.StrictSpec(
    "exact_match", ("exact_match", "f1"), "last-word", True, "lm-eval:t:exact_match[x]@1"
)


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


def _python(chunk: bytes):
    real = _lmeval_strict._strict_c
    _lmeval_strict._strict_c = None
    try:
        return _lmeval_strict.StrictChunks(SPEC).convert(chunk)
    finally:
        _lmeval_strict._strict_c = real


@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_lines)
def test_c_takes_a_chunk_only_as_the_python_code_does(rows):
    chunk = _chunk(rows)
    got = _lmeval_strict.StrictChunks(SPEC).convert(chunk)
    want = _python(chunk)
    if got is not None:
        assert got == want
    else:
        # refused: a partial score, an answer empty after strip, or one that, stripped of
        # ASCII white space, starts or ends with a non-ASCII character (it might be Unicode
        # white space: the line paths strip it), or what the Python code refuses too
        assert want is None or any(
            0 < r[4] < 1
            or not r[3].strip()
            or ord(r[3].strip(_ASCII_SPACE)[0]) > 127
            or ord(r[3].strip(_ASCII_SPACE)[-1]) > 127
            for r in rows
        )


@needs_c
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_lines, st.data())
def test_c_never_takes_a_broken_line(rows, data):
    """Cut, doubled or replaced bytes anywhere: either the C code refuses the chunk, or every
    line is still valid JSON that the Python column path converts to the same bytes."""
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
    got = _lmeval_strict.StrictChunks(SPEC).convert(chunk)
    if got is None:
        return
    for line in chunk.split(b"\n"):
        orjson.loads(line)  # valid JSON, or the test fails here
    assert got == _python(chunk)


@needs_c
def test_c_refuses_what_the_decoders_would_read_otherwise():
    base = dict(content="q", target="red", texts=["red"], answer="red", value=1.0, doc={})
    ok = json.dumps(_line(1, **base))
    assert C is not None and _lmeval_strict.StrictChunks(SPEC).convert(ok.encode()) is not None
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
        ok.replace('"doc": {}', '"doc": {"a": 1,}'),  # invalid JSON inside a skipped value
        ok.replace('"doc": {}', '"doc": [1 2]'),
        ok.replace('"doc": {}', '"doc": "\\ud800"'),  # a lone surrogate
        ok + "x",
        ok.replace('{"gen_args_0"', '{"gen_args_1": {}, "gen_args_0"'),  # a second request
        ok.replace('"target": "red"', '"target": "red", "target": "red"'),  # a repeated key
        ok.replace('\\"content\\": \\"q\\"', '\\"content\\": null'),
        ok.replace('[{\\"role', ' [{\\"role'),  # not logged as a chat request
    ]
    for line in refused:
        assert line != ok
        assert _lmeval_strict.StrictChunks(SPEC).convert(line.encode()) is None, line
    # another key beside arg_0 is ignored, as msgspec ignores it
    beside = ok.replace('"arg_1"', '"other": [1, {"x": null}], "arg_1"')
    assert _lmeval_strict.StrictChunks(SPEC).convert(beside.encode()) == _python(beside.encode())
    assert _python(beside.encode()) is not None
    # a chunk of two lines whose ids do not increase: the line path checks them
    two = (json.dumps(_line(2, **base)) + "\n" + json.dumps(_line(2, **base))).encode()
    assert _lmeval_strict.StrictChunks(SPEC).convert(two) is None


@pytest.mark.skipif(COMPILER is None, reason="no C compiler")
def test_the_extensions_own_sha256_where_openssl_is_missing(tmp_path):
    """setup.py builds with libcrypto's SHA-256 where OpenSSL's headers are, else with the
    extension's own FIPS 180-4 code: build that variant here and check it too."""
    import importlib.util
    import subprocess
    import sysconfig
    from pathlib import Path

    source = Path(_lmeval_strict.__file__).with_name("_strict_c.c")
    target = tmp_path / ("_strict_c" + sysconfig.get_config_var("EXT_SUFFIX"))
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        [COMPILER, "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(target)],
        check=True,
        capture_output=True,
    )
    spec = importlib.util.spec_from_file_location("_strict_c", target)
    own = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(own)
    for n in (0, 1, 55, 56, 63, 64, 65, 119, 1000, 100_000):
        data = bytes(range(256)) * (n // 256) + bytes(range(n % 256))
        assert own.sha256_hex(data) == hashlib.sha256(data).hexdigest(), n
    chunk = _chunk([("q\u00e9", "red", ["red", "x"], " red ", 1.0, {"a": [1]}, False)] * 3)
    spec_args = _lmeval_strict.StrictChunks(SPEC)._c_spec
    assert own.convert_chunk(chunk, *spec_args) == _python(chunk) is not None
