"""What the test server does with one request: answer, fail, stall or hang up."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

__all__ = ["Fault", "ServerRequest", "fail_first"]


@dataclass(frozen=True)
class ServerRequest:
    """One completion request as the test server received it (for fault hooks and asserts)."""

    index: int
    """0-based arrival order among this server's valid completion requests."""
    method: str
    path: str
    headers: Mapping[str, str]
    """Header names lower-cased."""
    json: Any
    """The parsed JSON body."""

    @property
    def seed(self) -> Any:
        return self.json.get("seed") if isinstance(self.json, dict) else None

    @property
    def prompt_text(self) -> str:
        """The prompt as one string: the ``prompt`` field, or all message contents joined."""
        body = self.json if isinstance(self.json, dict) else {}
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            return prompt
        messages = body.get("messages") or []
        return "\n".join(
            m["content"]
            for m in messages
            if isinstance(m, dict) and isinstance(m.get("content"), str)
        )


@dataclass(frozen=True)
class Fault:
    """One scripted reaction; build with the class methods. ``delay_s`` sleeps first."""

    kind: Literal["ok", "status", "body", "no_content", "drop", "echo_headers", "lone_surrogate"]
    label: str
    """Key in :attr:`OpenAIServer.fault_counts`."""
    status: int = 200
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    reset: bool = False

    @classmethod
    def ok(cls, *, delay_s: float = 0.0) -> Fault:
        """Answer normally."""
        return cls("ok", "ok", delay_s=delay_s)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Sleep ``seconds``, then answer normally (to trigger client timeouts)."""
        return cls("ok", "delay", delay_s=seconds)

    @classmethod
    def http_status(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        message: str | None = None,
        delay_s: float = 0.0,
    ) -> Fault:
        """An OpenAI-style JSON error with this status (``Retry-After`` header if given)."""
        text = message or f"injected HTTP {status}"
        body = orjson.dumps({"error": {"message": text, "type": "injected", "code": status}})
        headers = () if retry_after is None else (("retry-after", f"{retry_after}"),)
        return cls(
            "status", f"http_{status}", status=status, body=body, headers=headers, delay_s=delay_s
        )

    @classmethod
    def raw(
        cls, body: bytes | str | dict[str, Any], *, status: int = 200, label: str = "raw"
    ) -> Fault:
        """Send exactly this body (a dict is JSON-encoded) with this status."""
        if isinstance(body, dict):
            body = orjson.dumps(body)
        elif isinstance(body, str):
            body = body.encode()
        return cls("body", label, status=status, body=body)

    @classmethod
    def malformed(cls) -> Fault:
        """200 whose body is not JSON (a truncated object)."""
        return cls.raw(b'{"id": "cmpl-0", "choices": [{"index": 0, "mess', label="malformed")

    @classmethod
    def no_choices(cls) -> Fault:
        """200 JSON without ``choices`` (e.g. an error object passed through a proxy)."""
        return cls.raw({"error": {"message": "upstream overloaded"}}, label="no_choices")

    @classmethod
    def no_content(cls) -> Fault:
        """200 with a normal body whose choices carry ``content``/``text`` ``null``."""
        return cls("no_content", "no_content")

    @classmethod
    def echo_headers(cls, status: int = 401) -> Fault:
        """A JSON error with this status whose body repeats every request header, as a debug
        proxy might (the ``Authorization`` header included: for secret-leak tests)."""
        return cls("echo_headers", f"echo_headers_{status}", status=status)

    @classmethod
    def lone_surrogate(cls) -> Fault:
        """200 with a normal body whose text ends in the JSON escape ``\\ud800`` (a lone
        surrogate: valid JSON, but no valid Unicode string; strict parsers refuse it)."""
        return cls("lone_surrogate", "lone_surrogate")

    @classmethod
    def drop(cls, *, reset: bool = False, delay_s: float = 0.0) -> Fault:
        """Close the connection without answering (``reset``: abort with RST)."""
        return cls("drop", "reset" if reset else "drop", reset=reset, delay_s=delay_s)


FaultHook = Callable[[ServerRequest], "Fault | None"]


def fail_first(
    n: int, fault: Fault, *, key: Callable[[ServerRequest], Hashable] | None = None
) -> FaultHook:
    """A fault hook applying ``fault`` to the first ``n`` requests, then answering normally.

    With ``key`` (e.g. ``lambda r: r.seed``) the count is kept per key, so each rollout
    fails ``n`` times whatever the arrival order.
    """
    seen: Counter[Hashable] = Counter()

    def hook(request: ServerRequest) -> Fault | None:
        k = None if key is None else key(request)
        seen[k] += 1
        return fault if seen[k] <= n else None

    return hook
