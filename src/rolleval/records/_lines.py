"""A fast serializer of the three record streams, for writers of millions of records.

:class:`PromptLine`, :class:`RolloutLine` and :class:`JudgementLine` are ``msgspec`` structs
that mirror :class:`~._streams.PromptRecord`, :class:`~._streams.RolloutRecord` and
:class:`~._streams.JudgementRecord` field for field, in the same order, and encode to the
same line :func:`~._streams.dump_record` writes (``None`` values and empty
``metrics``/``extras`` left out, every other default written). They are not a second record
format: the pydantic models stay the one definition, and ``tests/records/test_record_lines.py``
fails when a field is added, renamed or reordered in one and not the other, and checks that
both give the same bytes. A writer that builds its values itself (an importer streaming a
1 GB file) uses them to skip per-record validation on its hot path; the lines it writes are
still records the pydantic models read back (``tests/records/test_record_contract.py``).

:func:`line_content_hash` is :func:`~._streams.content_hash` for a prompt given as
:class:`MessageLine` s or text: the same canonical bytes, built without a dict per record.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, overload

import msgspec

if TYPE_CHECKING:
    from ._streams import JudgementRecord, PromptRecord, RolloutRecord

__all__ = [
    "JudgementLine",
    "MessageLine",
    "OptionScoreLine",
    "PromptLine",
    "RolloutLine",
    "UsageLine",
    "encode_lines",
    "line_content_hash",
    "line_of",
]


class MessageLine(msgspec.Struct, gc=False, frozen=True):
    """:class:`~._streams.Message`."""

    role: str
    content: str


class UsageLine(msgspec.Struct, gc=False, frozen=True, omit_defaults=True):
    """:class:`~._streams.Usage`."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None


class OptionScoreLine(msgspec.Struct, gc=False, frozen=True):
    """:class:`~._streams.OptionScore`."""

    text: str
    logprob: float
    tokens: int
    chars: int


# ``kw_only``: fields whose pydantic default is not ``None`` (``reference_kind``, ``attempt``,
# ``retries``) are required here, so ``omit_defaults`` leaves out exactly what
# ``dump_record`` leaves out (``None`` and the empty ``extras``/``metrics``).


class PromptLine(msgspec.Struct, gc=False, kw_only=True, omit_defaults=True):
    """:class:`~._streams.PromptRecord` as one line."""

    problem_id: str
    prompt: list[MessageLine] | str | None = None
    reference: str | list[str] | None = None
    reference_kind: str
    cluster: str | None = None
    extras: dict[str, Any] = {}
    content_hash: str | None = None


class RolloutLine(msgspec.Struct, gc=False, kw_only=True, omit_defaults=True):
    """:class:`~._streams.RolloutRecord` as one line."""

    problem_id: str
    index: int
    status: str
    text: str | None = None
    finish_reason: str | None = None
    usage: UsageLine | None = None
    latency_s: float | None = None
    seed: int | None = None
    error: str | None = None
    attempt: int
    retries: int
    model: str | None = None
    system_fingerprint: str | None = None
    endpoint: str | None = None
    options: list[OptionScoreLine] | None = None
    reasoning: str | None = None


class JudgementLine(msgspec.Struct, gc=False, kw_only=True, omit_defaults=True):
    """:class:`~._streams.JudgementRecord` as one line."""

    problem_id: str
    index: int
    status: str
    finish_reason: str | None = None
    output_tokens: int | None = None
    extracted: str | None = None
    correct: bool | None = None
    score: float | None = None
    cluster: int | None = None
    metrics: dict[str, float] = {}
    grader: str | None = None
    grader_error: str | None = None
    judge_raw: str | None = None
    grader_usage: UsageLine | None = None
    reasoning_tokens: int | None = None
    thought_chars: int | None = None
    answer_chars: int | None = None
    in_thought: bool | None = None


_encoder = msgspec.json.Encoder()
_encode = _encoder.encode


def encode_lines(records: list[Any]) -> bytes:
    """One JSONL line (newline-terminated) per record struct, in one call."""
    return _encoder.encode_lines(records)


def line_content_hash(prompt: list[MessageLine] | str | None, reference: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``{"prompt": prompt, "reference": reference}``,
    byte for byte what :func:`~._streams.content_hash` hashes for the same values.

    msgspec escapes every string exactly as orjson does (both write UTF-8 and escape only
    ``"``, ``\\`` and control characters, the same way; ``tests/records/test_record_lines.py``
    checks every code point), so building the sorted-key JSON from encoded parts gives the
    same bytes.
    """
    if type(prompt) is list:
        body = b",".join(
            [b'{"content":%b,"role":%b}' % (_encode(m.content), _encode(m.role)) for m in prompt]
        )
        p = b"[" + body + b"]"
    else:
        p = _encode(prompt)
    return hashlib.sha256(b'{"prompt":%b,"reference":%b}' % (p, _encode(reference))).hexdigest()


@overload
def line_of(record: PromptRecord) -> PromptLine: ...
@overload
def line_of(record: RolloutRecord) -> RolloutLine: ...
@overload
def line_of(record: JudgementRecord) -> JudgementLine: ...
def line_of(record: Any) -> PromptLine | RolloutLine | JudgementLine:
    """The line struct of a (validated) pydantic stream record: the same line on disk."""
    from ._streams import JudgementRecord, PromptRecord, RolloutRecord

    kind: dict[type, type[PromptLine | RolloutLine | JudgementLine]] = {
        PromptRecord: PromptLine,
        RolloutRecord: RolloutLine,
        JudgementRecord: JudgementLine,
    }
    line: PromptLine | RolloutLine | JudgementLine = msgspec.convert(
        record.model_dump(), kind[type(record)]
    )
    return line
