"""The outcome of one rollout request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..records import OptionScore, RolloutRecord, Usage

__all__ = ["Completion"]


@dataclass(frozen=True, slots=True)
class Completion:
    """One rollout's outcome, field for field what a :class:`~rolleval.records.RolloutRecord`
    stores (see :meth:`to_record`).

    ``status`` is ``ok`` when the server answered 200 with a completed choice; then
    ``text`` is its text (possibly empty, or ``None`` when the server sent ``null``: a
    reasoning model out of budget mid-thought) and ``error`` is ``None``. Otherwise ``text`` is
    ``None`` and ``error`` says why, from the last attempt: ``timeout`` when that attempt ran
    out of time, ``infra_error`` for everything else (HTTP errors, dropped connections,
    malformed 200 responses).
    """

    status: Literal["ok", "timeout", "infra_error"]
    text: str | None
    finish_reason: str | None
    """As the server reported it (``stop``, ``length``...); ``None`` if absent."""
    prompt_tokens: int | None
    completion_tokens: int | None
    """From ``usage`` when the server reports it. With ``server_n`` and ``n > 1`` it is
    ``None``: the server reports one total for all choices, which cannot be split."""
    latency_s: float
    """Wall time from the start of the first attempt to the end of the last one, retries and
    backoff included (the wait for a free concurrency slot before the first attempt is not)."""
    error: str | None
    retries: int
    """Retries spent (attempts minus one), malformed-200 retries included."""
    model: str | None
    """The ``model`` field of the response (``None`` if no 200 response was read)."""
    system_fingerprint: str | None
    endpoint: str
    """Base URL of the endpoint that answered (the last one tried, on failure)."""
    options: tuple[OptionScore, ...] | None = None
    """Log-likelihood rollouts only: every option's score (``text`` is the best option)."""
    reasoning: str | None = None
    """The thought, when the server sent it apart from the answer (``message.reasoning`` or
    ``message.reasoning_content``); ``None`` when it sent none."""
    reasoning_tokens: int | None = None
    """Reasoning tokens as the server counted them (``None``: not counted; never 0 for
    absent). ``None`` with ``server_n`` and ``n > 1``, like ``completion_tokens``."""

    @property
    def ok(self) -> bool:
        """True when ``status`` is ``ok``."""
        return self.status == "ok"

    def to_record(
        self, problem_id: str, index: int, *, seed: int | None, attempt: int = 1
    ) -> RolloutRecord:
        """The :class:`~rolleval.records.RolloutRecord` for this outcome."""
        usage = None
        if (
            self.prompt_tokens is not None
            or self.completion_tokens is not None
            or self.reasoning_tokens is not None
        ):
            usage = Usage(
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                reasoning_tokens=self.reasoning_tokens,
            )
        return RolloutRecord(
            problem_id=problem_id,
            index=index,
            status=self.status,
            text=self.text,
            reasoning=self.reasoning,
            finish_reason=self.finish_reason,
            usage=usage,
            latency_s=self.latency_s,
            seed=seed,
            error=self.error,
            attempt=attempt,
            retries=self.retries,
            model=self.model,
            system_fingerprint=self.system_fingerprint,
            endpoint=self.endpoint,
            options=list(self.options) if self.options is not None else None,
        )
