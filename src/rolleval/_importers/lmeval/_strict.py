"""The column path of the lm-eval samples reader: a chunk of uniform lines, whole.

Most samples files repeat one shape on every line: an integer ``doc_id`` that keeps
increasing, one chat request logged as JSON, a string ``target``, the source's three hashes
and ``doc``, one repeat list, a string ``filtered_resps`` and a 0/1 score. A chunk of such
lines is converted with no Python code run per line: a strict typed msgspec decoder (every
key of the file's first line required but its later metrics, every other key refused, every
value of the one type this path handles) and ``map`` calls over its rows, one byte template per record stream.

A chunk that does not fit, in any line, gives None and is read line by line by the generic
path of :mod:`._samples` instead, so records, errors and the import summary never depend on
which path read a line (``tests/importers/test_importers_fast.py`` compares both on the same files,
``tests/importers/test_importers_columns.py`` on generated chunks).

:class:`StrictSpec` is plain data, so a worker process builds the same converter
(:mod:`._parallel`); :func:`apply` is the one step that touches the reader's state (the
doc_ids seen so far and the repeat counts), run in the reading process in file order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from hashlib import sha256
from itertools import chain, pairwise, repeat
from operator import attrgetter, itemgetter, methodcaller
from typing import Any, Literal, NamedTuple

import msgspec

from ...records._lines import MessageLine
from .._batch import LineBatch
from .._io import newlines

__all__ = [
    "LINE_KEYS",
    "Packed",
    "StrictChunks",
    "StrictOut",
    "StrictSpec",
    "apply",
    "pack",
    "strict_spec",
]

LINE_KEYS = (  # the keys of a samples line the importer maps (beside the metrics)
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
)


@dataclass(frozen=True)
class StrictSpec:
    """What every line of a column-path chunk must hold, fixed by the file's first line."""

    primary_metric: str
    metrics: tuple[str, ...]
    filter: str
    take_first: bool
    grader: str
    extra: tuple[str, ...] = ()
    """The first line's keys beside the ones the importer maps and the metrics: required on
    every line, kept by neither path, each counted as unmapped once per line (:func:`apply`)."""


def strict_spec(
    first_line: dict[str, Any],
    metrics: list[str],
    primary_filter: Any,
    take_first: bool | None,
    identity: str | None,
) -> StrictSpec | None:
    """The spec of a file whose first line has every key of the common shape (and maybe
    others), or None (then the generic path reads it, line by line)."""
    common = set(LINE_KEYS) | set(metrics)
    if type(primary_filter) is not str or identity is None or not common <= set(first_line):
        return None
    extra = tuple(sorted(set(first_line) - common))
    return StrictSpec(metrics[0], tuple(metrics), primary_filter, bool(take_first), identity, extra)


class _G0(msgspec.Struct, gc=False):
    arg_0: tuple[str]


class _Args(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    gen_args_0: _G0


class StrictOut(NamedTuple):
    """A chunk's records: the three streams' lines (as lists of bytes objects, joined by
    the writer) and the report's varying columns."""

    prompts: list[bytes]
    rollouts: list[bytes]
    judgements: list[bytes]
    problem_ids: list[str]
    content_hashes: list[str]
    correct: list[bool]
    first_id: int
    last_id: int
    left_out: int
    max_repeats: int

    @classmethod
    def unpack(cls, packed: Packed) -> StrictOut:
        """The records of a :data:`Packed` chunk, as lists the reader appends."""
        p, r, j, ids, hashes, ok, first, last, left, most = packed
        return cls(
            [p] if p else [],
            [r] if r else [],
            [j] if j else [],
            ids.split("\n"),
            hashes.split("\n"),
            list(map(_BOOL.__getitem__, ok)),
            first,
            last,
            left,
            most,
        )


Packed = tuple[bytes, bytes, bytes, str, str, bytes, int, int, int, int]
"""A chunk's records in a few large objects (cheap to send between processes): the three
streams' lines, the problem ids and the content hashes joined by newlines, the judgements as
bytes (0/1), the first and last doc_id, the repeats left out and the most repeats of a
line. Every judgement of the column path has an extracted answer (in its line); the report
reads only that there is one, as it does reading the file (``presence`` in
:func:`rolleval.rundir._table.load_task_table`)."""


def pack(chunks: list[Packed]) -> Packed | None:
    """The records of consecutive chunks as one, or None when their ids do not increase
    from one chunk to the next (then they are applied one at a time)."""
    if not all(b[6] > a[7] for a, b in pairwise(chunks)):
        return None
    if len(chunks) == 1:
        return chunks[0]
    return (
        b"".join([c[0] for c in chunks]),
        b"".join([c[1] for c in chunks]),
        b"".join([c[2] for c in chunks]),
        "\n".join([c[3] for c in chunks]),
        "\n".join([c[4] for c in chunks]),
        b"".join([c[5] for c in chunks]),
        chunks[0][6],
        chunks[-1][7],
        sum(c[8] for c in chunks),
        max(c[9] for c in chunks),
    )


def _rows(parts: Sequence[bytes], *columns: Iterable[bytes]) -> list[Iterable[bytes]]:
    """The pieces of a line template (its constant ``parts``, the values go between them)
    filled in with each row of ``columns``, as iterables to ``zip``."""
    assert len(parts) == len(columns) + 1
    pieces: list[Iterable[bytes]] = [repeat(parts[0])]
    for column, part in zip(columns, parts[1:]):
        pieces += (column, repeat(part))
    return pieces


def _fill(parts: Sequence[bytes], *columns: Iterable[bytes]) -> bytes:
    """The template filled in for every row, all rows joined: one ``join`` over the pieces,
    no formatting per row."""
    return b"".join(chain.from_iterable(zip(*_rows(parts, *columns))))


_JOIN = b"".join


_messages = msgspec.json.Decoder(tuple[MessageLine]).decode
_encode = msgspec.json.Encoder().encode
_first = itemgetter(0)
_doc_id = attrgetter("doc_id")
_arg_0 = attrgetter("arguments.gen_args_0.arg_0")
_is_chat = methodcaller("startswith", "[")
_hexdigest = methodcaller("hexdigest")
_TF = (b"false", b"true")
_BOOL = (False, True)
# the canonical JSON :func:`rolleval.records._lines.line_content_hash` hashes, for one
# message and a string reference (sorted keys)
_HASHED = b'{"prompt":[{"content":%b,"role":%b}],"reference":%b}'.split(b"%b")
# the record lines, ``%b`` marking a value (:func:`_fill`)
_PROMPT = (
    b'{"problem_id":"%b","prompt":[{"role":%b,"content":%b}],"reference":%b,'
    b'"reference_kind":"answer","extras":{"doc_hash":%b,"prompt_hash":%b,'
    b'"target_hash":%b,"doc":%b},"content_hash":"%b"}\n'
).split(b"%b")
_ROLLOUT = (
    b'{"problem_id":"%b","index":0,"status":"ok","text":%b,"attempt":1,"retries":0}\n'
).split(b"%b")
_JUDGEMENT = b'{"problem_id":"%b","index":0,"status":"ok","extracted":%b,"correct":%b,'.split(b"%b")


class StrictChunks:
    """Converts chunks of lines (joined by newlines) of one file, given its spec, to
    :data:`Packed` records (``pack`` merges those of neighbouring chunks, ``unpack`` gives
    the lists :func:`apply` appends). The per-line work runs as ``map`` calls over the
    rows msgspec decoded."""

    pack = staticmethod(pack)
    unpack = staticmethod(StrictOut.unpack)

    @staticmethod
    def span(packed: Packed) -> tuple[int, int]:
        """The first and last doc_id of a chunk's records."""
        return packed[6], packed[7]

    @staticmethod
    def split(packed: Packed) -> tuple[tuple[bytes, bytes, bytes], Packed]:
        """The three streams' lines, and the rest (the report's columns) without them."""
        return packed[:3], (b"", b"", b"", *packed[3:])

    def __init__(self, spec: StrictSpec):
        self.spec = spec
        fields: list[tuple[str, Any, Any]] = [
            ("doc_id", int, msgspec.NODEFAULT),
            ("doc", msgspec.Raw, msgspec.NODEFAULT),
            ("target", str, msgspec.NODEFAULT),
            ("arguments", _Args, msgspec.NODEFAULT),
            ("resps", tuple[list[str]], msgspec.NODEFAULT),
            ("filtered_resps", tuple[str], msgspec.NODEFAULT),  # take_first's one answer
            # the decoder itself checks the filter and the metric list, in C
            ("filter", Literal[spec.filter], msgspec.NODEFAULT),
            ("metrics", tuple[tuple(Literal[m] for m in spec.metrics)], msgspec.NODEFAULT),  # type: ignore[misc]
            ("doc_hash", msgspec.Raw, msgspec.NODEFAULT),
            ("prompt_hash", msgspec.Raw, msgspec.NODEFAULT),
            ("target_hash", msgspec.Raw, msgspec.NODEFAULT),
            ("m_primary", float, msgspec.NODEFAULT),
        ]
        rename = {"m_primary": spec.primary_metric}
        for i, name in enumerate(spec.extra):
            fields.append((f"x_{i}", msgspec.Raw, msgspec.NODEFAULT))  # required, not kept
            rename[f"x_{i}"] = name
        for i, name in enumerate(m for m in spec.metrics if m != spec.primary_metric):
            fields.append((f"m_{i}", msgspec.Raw, msgspec.UNSET))  # kept by neither path
            rename[f"m_{i}"] = name
        row = msgspec.defstruct(
            "StrictLine", fields, forbid_unknown_fields=True, rename=rename, gc=False
        )
        self._decode = msgspec.json.Decoder(list[row]).decode  # type: ignore[valid-type]
        self._grader = _encode(spec.grader)
        self._judgement = [
            *_JUDGEMENT[:-1],
            _JUDGEMENT[-1] + b'"cluster":0,"grader":' + self._grader + b"}\n",
        ]

    def convert(self, chunk: bytes) -> Packed | None:
        """The records of every line of ``chunk``, or None when any line does not fit."""
        if not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            rows = self._decode(b"[" + chunk.replace(b"\n", b",") + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        n = len(rows)
        if not n or n != newlines(chunk) + 1:
            return None
        a0 = list(map(_first, map(_arg_0, rows)))
        dids = list(map(_doc_id, rows))
        if not all(map(int.__lt__, dids, dids[1:])):
            return None  # not increasing: the generic path checks each id against the set
        if not all(map(_is_chat, a0)):
            return None
        try:
            prompts = list(map(_messages, a0))
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None  # not one chat message: the generic path keeps the text
        messages = list(map(_first, prompts))
        contents = list(map(_encode, map(attrgetter("content"), messages)))
        roles = list(map(_encode, map(attrgetter("role"), messages)))
        refs = list(map(_encode, map(attrgetter("target"), rows)))
        texts = list(map(_first, map(attrgetter("resps"), rows)))
        counts = list(map(len, texts))
        max_repeats = max(counts)
        if min(counts) < 1 or (max_repeats > 1 and not self.spec.take_first):
            return None
        extracted = list(map(str.strip, map(_first, map(attrgetter("filtered_resps"), rows))))
        if not all(extracted):
            return None  # an empty answer: no cluster, another judgement line
        values = list(map(attrgetter("m_primary"), rows))
        if any(0.0 < v < 1.0 for v in set(values)):
            return None  # a partial score: the judgement carries it
        correct = list(map((1.0).__le__, values))
        hashes = "\n".join(
            map(_hexdigest, map(sha256, map(_JOIN, zip(*_rows(_HASHED, contents, roles, refs)))))
        )
        ids = "\n".join(map(str, dids))
        id_bytes = ids.encode().split(b"\n")
        prompt_lines = _fill(
            _PROMPT,
            id_bytes,
            roles,
            contents,
            refs,
            map(attrgetter("doc_hash"), rows),
            map(attrgetter("prompt_hash"), rows),
            map(attrgetter("target_hash"), rows),
            map(attrgetter("doc"), rows),
            hashes.encode().split(b"\n"),
        )
        rollout_lines = _fill(_ROLLOUT, id_bytes, map(_encode, map(_first, texts)))
        judgement_lines = _fill(
            self._judgement, id_bytes, map(_encode, extracted), map(_TF.__getitem__, correct)
        )
        return (
            prompt_lines,
            rollout_lines,
            judgement_lines,
            ids,
            hashes,
            bytes(correct),
            dids[0],
            dids[-1],
            sum(counts) - n,
            max_repeats,
        )


def apply(state: Any, out: StrictOut, batch: LineBatch) -> bool:
    """Append ``out`` to ``batch`` if its doc_ids are new, updating the reader's ``state``
    as the generic path would for the same lines; False (nothing appended) when an id was seen
    before: the generic path then reads the chunk and reports the duplicate."""
    ids = out.problem_ids
    last = state.last_int
    if last is not None and out.first_id > last:
        state.last_int = out.last_id  # every id greater than all so far: new
        state.unseen.extend(ids)
    else:
        seen = state.seen
        if state.unseen:
            seen.update(state.unseen)
            state.unseen.clear()
        state.last_int = None  # every id is checked against the set from now on
        if not seen.isdisjoint(ids):
            return False
        seen.update(ids)
    state.left_out += out.left_out
    if out.max_repeats > state.max_repeats:
        state.max_repeats = out.max_repeats
    n = len(ids)
    for key in state.extra:  # on every line of the chunk, as the generic path counts it
        state.unmapped.add(key, "field not known to the importer", n)
    batch.prompts.extend(out.prompts)
    batch.rollouts.extend(out.rollouts)
    batch.judgements.extend(out.judgements)
    batch.any_reference = True
    p_id, p_ch, j_id, j_x, j_ok, j_score, j_cl, j_err = batch.varying()
    p_id.extend(ids)
    p_ch.extend(out.content_hashes)
    j_id.extend(ids)
    j_x.extend(repeat(True, n))  # an answer is there (its text is in the judgement line)
    j_ok.extend(out.correct)
    j_score.extend(repeat(None, n))
    j_cl.extend(repeat(0, n))
    j_err.extend(repeat(None, n))
    return True
