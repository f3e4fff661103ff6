"""The typed fast path of the lm-eval samples reader (large files at close to parse speed).

Each samples line is decoded in C into a ``msgspec`` struct that names exactly the keys the
first line of the file has (the keys the importer maps, the task's metrics, and any other
key it had, kept unparsed), rejecting any other key, and turned straight into record line
structs (:mod:`rolleval.records._lines`), many lines per decode call. Whatever does not fit
that shape (another key, another filter or metric list, a second request, a repeated
``doc_id``, a value of another type, a line that is not JSON) goes through the generic path
of :mod:`._lmeval` line by line, so every record, error and unmapped-field count is the one
the generic path gives (``tests/test_importers_fast.py`` compares both on the same files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from hashlib import sha256
from typing import Any

import msgspec

from ...records._lines import (
    JudgementLine,
    MessageLine,
    PromptLine,
    RolloutLine,
    line_content_hash,
)
from .._batch import LineBatch
from .._io import newlines

__all__ = ["FastLines", "known_keys_line_type"]

_UNSET = msgspec.UNSET
_encode = msgspec.json.Encoder().encode


class _G0(msgspec.Struct, gc=False):
    arg_0: Any = None


class _Args(msgspec.Struct, gc=False):
    gen_args_0: _G0 | None = None


def known_keys_line_type(primary_metric: str, metrics: list[str], extra: list[str]) -> type:
    """The struct of one samples line of a file whose first line has these keys.

    ``primary_metric`` is decoded (it decides correctness); the other metrics, the hashes,
    ``doc`` and ``extra`` (keys the importer does not map) are kept as raw JSON, unparsed.
    An unknown key makes the decode fail (the line then takes the generic path).
    """
    fields: list[tuple[str, Any, Any]] = [
        ("doc_id", Any, _UNSET),
        ("doc", msgspec.Raw, _UNSET),
        ("target", Any, None),
        ("arguments", _Args | list | None, None),
        ("resps", list[list[str]], _UNSET),
        ("filtered_resps", Any, None),
        ("filter", Any, "none"),
        ("metrics", Any, None),
        ("doc_hash", msgspec.Raw, _UNSET),
        ("prompt_hash", msgspec.Raw, _UNSET),
        ("target_hash", msgspec.Raw, _UNSET),
        ("m_primary", Any, None),
    ]
    rename = {"m_primary": primary_metric}
    for i, name in enumerate(m for m in metrics if m != primary_metric):
        fields.append((f"m_{i}", msgspec.Raw, _UNSET))
        rename[f"m_{i}"] = name
    for i, name in enumerate(extra):
        fields.append((f"x_{i}", msgspec.Raw, _UNSET))
        rename[f"x_{i}"] = name
    return msgspec.defstruct(
        "SamplesLine", fields, forbid_unknown_fields=True, rename=rename, gc=False
    )


_messages = msgspec.json.Decoder(list[MessageLine])


def _prompt(arguments: Any) -> Any:
    """``_lmeval._prompt`` on the typed ``arguments`` (same results, see its docstring)."""
    first: Any = None
    if type(arguments) is _Args:
        g0 = arguments.gen_args_0
        if g0 is not None:
            first = g0.arg_0
    elif type(arguments) is list and arguments and type(arguments[0]) is list and arguments[0]:
        first = arguments[0][0]
    if type(first) is list and len(first) == 1:
        first = first[0]
    if type(first) is not str:
        return None
    if first.startswith("["):
        try:
            return _messages.decode(first)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return first
    return first


class FastLines:
    """Turns typed samples lines into record lines; ``state`` is the reader's shared state
    (seen ids, counts, unmapped fields, the take_first decision) and ``extracted`` the
    generic path's answer extraction."""

    def __init__(
        self,
        state: Any,
        line_type: type,
        metrics: list[Any],
        extra: list[str],
        extracted: Callable[[Any], str | None],
    ):
        self.state = state
        self.one: msgspec.json.Decoder[Any] = msgspec.json.Decoder(line_type)
        self.many = msgspec.json.Decoder(list[line_type])  # type: ignore[valid-type]
        self.metrics = metrics
        self.extra = [(f"x_{i}", name) for i, name in enumerate(extra)]
        self.extracted = extracted

    def decode_chunk(self, chunk: bytes) -> list[Any] | None:
        """Every line of ``chunk`` (lines joined by newlines) typed, or None when any line
        does not fit (not UTF-8, not JSON, another key or type): then go line by line."""
        if not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            rows = self.many.decode(b"[" + chunk.replace(b"\n", b",") + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        return rows if len(rows) == newlines(chunk) + 1 else None

    def decode_line(self, raw: bytes) -> Any:
        """One line typed, or None (then the generic path reads it)."""
        if not raw.isascii():
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            return self.one.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    def records(self, rows: list[Any], batch: LineBatch) -> Iterator[int]:
        """Append each row's records to ``batch``; yield the position of each row the
        generic path must read instead (after appending the rows before it).

        The common shape (one chat message, a reference, the source's hashes and ``doc``, a
        numeric score, an extracted answer) is written through byte templates that give the
        bytes the line structs encode to (same keys, same order, ``None`` left out); any
        other shape is built as line structs."""
        st = self.state
        seen = st.seen
        unseen = st.unseen
        primary = st.primary_filter
        metrics = self.metrics
        identity = st.identity
        unmapped = st.unmapped
        extracted = self.extracted
        extra = self.extra
        add_p, add_r, add_j = batch.prompts.append, batch.rollouts.append, batch.judgements.append
        p_id, p_ch, j_id, j_x, j_ok, j_score, j_cl, j_err = batch.varying()
        no_value = "lm-eval logged no value for the metric"
        encode = _encode
        replace = msgspec.structs.replace
        # every record of this task shares these values: copy a template, set the rest
        prompt_line = PromptLine(problem_id="-", reference_kind="answer")
        rollout_line = RolloutLine(problem_id="-", index=0, status="ok", attempt=1, retries=0)
        judgement_line = JudgementLine(problem_id="-", index=0, status="ok", grader=identity)
        grader = encode(identity)
        take_first = st.take_first_for(primary)
        messages = _messages.decode
        for i, row in enumerate(rows):
            resps = row.resps
            if (
                resps is _UNSET
                or len(resps) != 1
                or row.doc_id is _UNSET
                or row.metrics != metrics
                or (row.filter != primary and str(row.filter) != primary)
            ):
                yield i
                continue
            did = row.doc_id
            last = st.last_int
            if last is not None and type(did) is int and did > last:
                pid = str(did)  # greater than every doc_id so far: new
                new = True
            else:
                if unseen:  # every doc_id is checked against the set from now on
                    seen.update(unseen)
                    unseen.clear()
                st.last_int = None
                pid = did if type(did) is str else str(did)
                if not pid or pid in seen:
                    yield i
                    continue
                new = False
            texts = resps[0]
            n = len(texts)
            if n > 1:
                if not take_first:
                    yield i
                    continue
                st.left_out += n - 1
                if n > st.max_repeats:
                    st.max_repeats = n
            elif not st.max_repeats:
                st.max_repeats = 1
            if new:
                st.last_int = did
                unseen.append(pid)
            else:
                seen.add(pid)
            target = row.target
            ref = target if type(target) is str else (None if target is None else str(target))
            args = row.arguments
            g0 = args.gen_args_0 if type(args) is _Args else None
            a0 = g0.arg_0 if g0 is not None else None
            prompt: list[MessageLine] | str
            if type(a0) is list and len(a0) == 1 and type(a0[0]) is str and a0[0][:1] == "[":
                try:  # the common shape, inlined: one chat request, logged as JSON
                    prompt = messages(a0[0])
                except (msgspec.DecodeError, msgspec.ValidationError):
                    prompt = a0[0]
            else:
                prompt = _prompt(args)
            epid = encode(pid)
            dh, ph, th, doc = row.doc_hash, row.prompt_hash, row.target_hash, row.doc
            if (
                type(prompt) is list
                and len(prompt) == 1
                and ref is not None
                and dh is not _UNSET
                and ph is not _UNSET
                and th is not _UNSET
                and doc is not _UNSET
            ):  # the common shape: one chat message, a reference, every hash and doc
                m = prompt[0]
                role, content, eref = encode(m.role), encode(m.content), encode(ref)
                ch = sha256(
                    b'{"prompt":[{"content":%b,"role":%b}],"reference":%b}' % (content, role, eref)
                ).hexdigest()
                add_p(
                    b'{"problem_id":%b,"prompt":[{"role":%b,"content":%b}],"reference":%b,'
                    b'"reference_kind":"answer","extras":{"doc_hash":%b,"prompt_hash":%b,'
                    b'"target_hash":%b,"doc":%b},"content_hash":"%s"}\n'
                    % (epid, role, content, eref, dh, ph, th, doc, ch.encode())
                )
                batch.any_reference = True
            else:
                if prompt is None:
                    st.missing_prompt = True
                    ch = None
                else:
                    ch = line_content_hash(prompt, ref)
                extras = {
                    k: v
                    for k, v in (
                        ("doc_hash", dh),
                        ("prompt_hash", ph),
                        ("target_hash", th),
                        ("doc", doc),
                    )
                    if v is not _UNSET
                }
                add_p(
                    encode(
                        replace(
                            prompt_line,
                            problem_id=pid,
                            prompt=prompt,
                            reference=ref,
                            extras=extras,
                            content_hash=ch,
                        )
                    )
                    + b"\n"
                )
                if ref is not None:
                    batch.any_reference = True
            p_id.append(pid)
            p_ch.append(ch)
            if extra:
                for attr, name in extra:
                    if getattr(row, attr) is not _UNSET:
                        unmapped.add(name, "field not known to the importer")
            if n:
                add_r(
                    b'{"problem_id":%b,"index":0,"status":"ok","text":%b,"attempt":1,"retries":0}\n'
                    % (epid, encode(texts[0]))
                )
            else:
                add_r(encode(replace(rollout_line, problem_id=pid)) + b"\n")
            j_id.append(pid)
            value = row.m_primary
            tv = type(value)
            if tv is float or tv is int or tv is bool:
                v = float(value)
                filtered = row.filtered_resps
                if type(filtered) is list and filtered and type(filtered[0]) is str:
                    x = filtered[0].strip() or None
                else:
                    x = extracted(filtered or [])
                ok = v >= 1.0
                score = v if 0.0 < v < 1.0 else None
                if x is not None and score is None:
                    add_j(
                        b'{"problem_id":%b,"index":0,"status":"ok","extracted":%b,"correct":%b,'
                        b'"cluster":0,"grader":%b}\n'
                        % (epid, encode(x), b"true" if ok else b"false", grader)
                    )
                else:
                    add_j(
                        encode(
                            replace(
                                judgement_line,
                                problem_id=pid,
                                extracted=x,
                                correct=ok,
                                score=score,
                                cluster=None if x is None else 0,
                            )
                        )
                        + b"\n"
                    )
                j_x.append(x)
                j_ok.append(ok)
                j_score.append(score)
                j_cl.append(None if x is None else 0)
                j_err.append(None)
            else:
                unmapped.add("metric value", "missing or not a number")
                add_j(
                    encode(replace(judgement_line, problem_id=pid, grader_error=no_value)) + b"\n"
                )
                j_x.append(None)
                j_ok.append(None)
                j_score.append(None)
                j_cl.append(None)
                j_err.append(no_value)
