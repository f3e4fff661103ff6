"""The three record streams of a task: prompts, rollouts, judgements.

* :class:`PromptRecord`, one per problem: what was asked and what counts as right;
* :class:`RolloutRecord`, one per rollout attempt: what the model answered, or why it did not;
* :class:`JudgementRecord`, one per rollout: what the grader made of the answer.

On disk every record is one JSON object per line (:func:`dump_record`); keys whose value is
``None`` (and empty ``metrics``/``extras``) are dropped, and read back as their defaults.

Statuses keep three kinds of failure apart, and no reported number mixes them:

* model failures: a gradable answer that is wrong (``correct = False``) or that holds no
  answer (``extracted = None``: counted as wrong *and* reported as ``n_unextracted``);
* harness failures: the rollout never produced text (``status`` ``infra_error`` or
  ``timeout``), or the grader crashed (``grader_error``); excluded from the ``judged``
  denominator and reported apart;
* ``skipped``: deliberately not requested (e.g. a ``--limit`` change); never counted.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from .._sanitize import redact
from ._base import RecordPart, StreamRecord

__all__ = [
    "GRADABLE_STATUS",
    "ROLLOUT_STATUSES",
    "JudgementRecord",
    "Message",
    "OptionScore",
    "PromptRecord",
    "RolloutRecord",
    "RolloutStatus",
    "Usage",
    "canonical_json",
    "content_hash",
    "dump_record",
    "make_judgement",
]

RolloutStatus = Literal["ok", "timeout", "infra_error", "skipped"]
ROLLOUT_STATUSES: tuple[str, ...] = ("ok", "timeout", "infra_error", "skipped")
#: The only rollout status whose text is graded.
GRADABLE_STATUS = "ok"


class Message(RecordPart):
    """One chat message as sent."""

    role: str
    content: str


class Usage(RecordPart):
    """Token usage as the server reported it (``None`` = not reported)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    """Tokens of the thought, when the server counts them (``completion_tokens_details.
    reasoning_tokens`` or ``reasoning_tokens``); part of ``completion_tokens``."""


class OptionScore(RecordPart):
    """One option of a log-likelihood task, as scored: the sum of its continuation's token
    log-probabilities given its context (``type: loglik``)."""

    text: str
    """The option as the task shows it (the choice text)."""
    logprob: float
    """Sum of the log-probabilities of the option's continuation tokens, in nats."""
    tokens: int = Field(ge=1)
    """How many tokens the continuation spans."""
    chars: int = Field(ge=1)
    """How many characters the continuation has (leading space included)."""


class PromptRecord(StreamRecord):
    """One problem: the prompt as sent and the reference it is judged against."""

    problem_id: str = Field(min_length=1)
    """Stable identifier taken from the data (never random, never a row counter of a shuffled file)."""
    prompt: list[Message] | str | None = None
    """Chat messages (chat API) or the raw text (completions API), exactly as sent. Always
    written by rolleval; ``None`` only in runs imported from a source that does not store
    the prompt (e.g. TraceLens trial files)."""
    reference: str | list[str] | None = None
    """Gold answer, or a list of accepted aliases; ``None`` when ``reference_kind`` is ``procedure``."""
    reference_kind: Literal["answer", "procedure"] = "answer"
    """``procedure``: correctness is decided by a program or judge, not by comparing to a string."""
    cluster: str | None = None
    """Cluster key for clustered standard errors (e.g. the MMLU subject); ``None`` = singleton."""
    extras: dict[str, Any] = Field(default_factory=dict)
    """Task-specific facts, e.g. ``{"permutation": [2, 0, 3, 1]}`` for shuffled choices."""
    content_hash: str | None = None
    """``sha256`` of the canonical JSON of ``{"prompt": ..., "reference": ...}`` (:func:`content_hash`).
    Always written by rolleval; ``None`` only in runs imported without it, which ``compare``
    then aligns by problem id alone."""

    @classmethod
    def build(
        cls,
        problem_id: str,
        prompt: list[dict[str, Any]] | list[Message] | str,
        reference: str | list[str] | None,
        *,
        cluster: str | None = None,
        extras: dict[str, Any] | None = None,
        reference_kind: Literal["answer", "procedure"] = "answer",
    ) -> PromptRecord:
        """A prompt record with its ``content_hash`` computed from ``prompt`` and ``reference``."""
        return cls(
            problem_id=problem_id,
            prompt=prompt,  # type: ignore[arg-type]
            reference=reference,
            reference_kind=reference_kind,
            cluster=cluster,
            extras=extras or {},
            content_hash=content_hash(prompt, reference),
        )


class RolloutRecord(StreamRecord):
    """One attempt at one rollout. A retried rollout (resume) appends a new attempt."""

    problem_id: str = Field(min_length=1)
    index: int = Field(ge=0)
    """Rollout index within the problem, 0-based; the canonical order of rollouts."""
    status: RolloutStatus
    text: str | None = None
    """Raw generated text (the answer, with any inline thought), as the server sent it;
    ``None`` unless ``status`` is ``ok``, and for an ``ok`` rollout whose server sent
    ``null`` (a reasoning model out of budget mid-thought)."""
    finish_reason: str | None = None
    """As the server reported it; ``length`` means truncated at ``max_tokens``."""
    usage: Usage | None = None
    latency_s: float | None = None
    seed: int | None = None
    """Sampling seed sent with the request (derived from run seed, problem id and index)."""
    error: str | None = None
    """Why an ``infra_error`` or ``timeout`` happened (last error after retries)."""
    attempt: int = Field(default=1, ge=1)
    """1 for the first request of this rollout; a resume that re-requests it writes 2, 3, ..."""
    retries: int = Field(default=0, ge=0)
    """Transport-level retries spent inside this attempt."""
    model: str | None = None
    """The ``model`` field of the response."""
    system_fingerprint: str | None = None
    endpoint: str | None = None
    """Base URL that answered (runs can spread over several endpoints)."""
    options: list[OptionScore] | None = None
    """Log-likelihood tasks only: every option's score, in the task's option order (the
    prediction); ``text`` is then the option with the highest log-prob."""
    reasoning: str | None = None
    """The thought, as the server sent it apart from the answer (``message.reasoning`` or
    ``message.reasoning_content``); ``None`` when it sent none. Never graded."""

    @property
    def key(self) -> tuple[str, int]:
        """``(problem_id, index)``: which rollout this attempt belongs to."""
        return (self.problem_id, self.index)

    def grader_input(self) -> str:
        """What the grader judges: the text, or for a log-likelihood rollout the JSON list of
        its option scores (:class:`OptionScore` fields)."""
        if self.options is not None:
            return orjson.dumps([o.model_dump() for o in self.options]).decode()
        return self.text or ""


class JudgementRecord(StreamRecord):
    """The grader's judgement on one rollout. Every rollout gets one, failed ones included."""

    problem_id: str = Field(min_length=1)
    index: int = Field(ge=0)
    status: RolloutStatus
    """Copied from the judged rollout, so a report needs only this stream."""
    finish_reason: str | None = None
    output_tokens: int | None = None
    extracted: str | None = None
    """The answer the extractor found; ``None`` = nothing extracted (never ``""`` or ``-1``)."""
    correct: bool | None = None
    """``None`` when not judged (status not ``ok``, or ``grader_error``)."""
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    """Optional graded score in [0, 1]; ``correct`` remains the pass/fail judgement."""
    cluster: int | None = None
    """Answer cluster for maj@n: the lowest rollout index among this problem's rollouts whose
    answers the grader judges equivalent. ``None`` when nothing was extracted."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """Named per-rollout metrics (e.g. ``{"output_chars": 412}``)."""
    grader: str | None = None
    """Grader identity and version, ``"<id>@<version>"``."""
    grader_error: str | None = None
    """Set when grading crashed or timed out: a harness failure, never a wrong answer."""
    judge_raw: str | None = None
    """Raw output of an LLM or service grader."""
    grader_usage: Usage | None = None
    """Tokens an LLM judge spent on this rollout (apart from the candidate's ``usage``)."""
    reasoning_tokens: int | None = None
    """The rollout's ``usage.reasoning_tokens`` (``None``: the server did not count them)."""
    thought_chars: int | None = Field(default=None, ge=0)
    """Characters of the thought (the separate field plus any inline thought);
    ``None``: the rollout holds no thought."""
    answer_chars: int | None = Field(default=None, ge=0)
    """Characters of the text the grader saw (after the thought); set with ``thought_chars``."""
    in_thought: bool | None = None
    """``True`` when the text ended inside the thought (no answer after it): with
    ``finish_reason`` ``length``, truncated while thinking. ``None`` otherwise."""

    @property
    def key(self) -> tuple[str, int]:
        """``(problem_id, index)``: which rollout this judgement belongs to."""
        return (self.problem_id, self.index)

    @property
    def gradable(self) -> bool:
        """True when the rollout is gradable: completed (status ``ok``) and graded without a
        grader error (``docs/contract.md``, "Notation and counts")."""
        return self.status == GRADABLE_STATUS and self.grader_error is None


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON bytes: sorted keys, no whitespace, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def content_hash(prompt: Any, reference: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``{"prompt": prompt, "reference": reference}``.

    Two problems with the same hash were asked the same way and judged against the same
    answer; ``compare`` matches problems across runs by this hash.
    """
    if isinstance(prompt, list):
        prompt = [m.model_dump() if isinstance(m, BaseModel) else m for m in prompt]
    return hashlib.sha256(canonical_json({"prompt": prompt, "reference": reference})).hexdigest()


_DROP_EMPTY = ("metrics", "extras")


def dump_record(record: BaseModel) -> bytes:
    """One JSONL line (with trailing newline) for a record; ``None`` values and empty
    ``metrics``/``extras`` are dropped. Serialised by pydantic's compiled core (compact
    JSON, UTF-8)."""
    if not isinstance(record, BaseModel):
        raise TypeError(f"dump_record takes a record model, got {type(record).__name__}")
    empty = {k for k in _DROP_EMPTY if k in type(record).model_fields and not getattr(record, k)}
    return (
        record.__pydantic_serializer__.to_json(record, exclude_none=True, exclude=empty or None)
        + b"\n"
    )


def _redacted(text: Any) -> Any:
    return redact(text) if isinstance(text, str) else text


def make_judgement(
    rollout: RolloutRecord, judgement: Any, grader: str | None, split: Any = None
) -> JudgementRecord:
    """The judgement record for a rollout and the grader's judgement on it.

    ``judgement`` is ``None`` for rollouts that were not graded (status other than ``ok``);
    otherwise an object with ``extracted``, ``correct``, ``cluster``, ``score``,
    ``grader_error`` and ``metrics`` attributes (:class:`rolleval.grading.Judgement`).
    ``split`` is the rollout's :class:`rolleval.grading.ThoughtSplit` (thought health).
    Every registered secret is redacted from ``extracted``, ``grader_error`` and
    ``judge_raw`` (:mod:`rolleval._sanitize`): graders store text that model-written code or
    a judge produced.
    """
    usage = rollout.usage
    fields: dict[str, Any] = {
        "problem_id": rollout.problem_id,
        "index": rollout.index,
        "status": rollout.status,
        "finish_reason": rollout.finish_reason,
        "output_tokens": usage.completion_tokens if usage is not None else None,
        "grader": grader,
        "reasoning_tokens": usage.reasoning_tokens if usage is not None else None,
    }
    if split is not None and split.thought_chars is not None:
        fields.update(
            thought_chars=split.thought_chars,
            answer_chars=split.answer_chars,
            in_thought=True if split.in_thought else None,
        )
    if judgement is not None:
        fields.update(
            extracted=_redacted(judgement.extracted),
            correct=judgement.correct,
            cluster=judgement.cluster,
            score=judgement.score,
            grader_error=_redacted(judgement.grader_error),
            metrics=dict(judgement.metrics) if judgement.metrics else {},
            judge_raw=_redacted(judgement.judge_raw),
            grader_usage=Usage(**judgement.grader_usage)
            if getattr(judgement, "grader_usage", None)
            else None,
        )
    return JudgementRecord(**fields)
