"""Typed, validated configuration for :class:`rolleval.client.Client`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import orjson

from ..errors import UsageError

__all__ = ["EndpointConfig", "SamplingParams"]

#: Body keys the client owns; ``extra_body`` may not set them.
RESERVED_BODY_KEYS = frozenset({"model", "messages", "prompt", "seed", "n", "stream"})


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to send requests.

    All ``base_urls`` must serve the same model; each is a URL ending in ``/v1`` (the
    client appends ``/chat/completions``, ``/completions`` or ``/models``). Requests are
    spread over them by least-in-flight, ties broken round robin.

    The API key is never stored: ``api_key_env`` names the environment variable that holds
    it, read at request time and sent as ``Authorization: Bearer <key>``.
    """

    base_urls: tuple[str, ...]
    """One or more base URLs serving the same model, e.g. ``("http://127.0.0.1:8000/v1",)``."""
    model: str
    """The ``model`` field sent with every request."""
    api: Literal["chat", "completions"] = "chat"
    """``chat``: ``POST /chat/completions`` with ``messages``; ``completions``: ``POST /completions`` with ``prompt``."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    timeout_s: float = 120.0
    """Deadline of one attempt (connect to last byte); a retry starts a fresh deadline."""
    max_retries: int = 5
    """Retries after the first attempt (so at most ``max_retries + 1`` requests per rollout)."""
    backoff_base_s: float = 0.5
    """Backoff before retry ``k`` (0-based) is uniform in ``[0, min(backoff_max_s, backoff_base_s * 2**k)]``."""
    backoff_max_s: float = 30.0
    """Cap of the backoff and of a server's ``Retry-After``."""
    concurrency: int = 8
    """Requests in flight at once, across all endpoints."""
    server_n: bool = False
    """Ask for all of :meth:`Client.complete_n`'s rollouts in one request (``n=len(seeds)``);
    only for servers that honour ``n`` (llama.cpp's server does not). The number of returned
    choices is checked."""

    def __post_init__(self) -> None:
        urls = self.base_urls
        if isinstance(urls, str):
            urls = (urls,)
        try:
            urls = tuple(urls)
        except TypeError:
            raise UsageError(
                f"base_urls must be a sequence of URLs, got {type(self.base_urls).__name__}"
            ) from None
        if not urls:
            raise UsageError("base_urls must hold at least one URL, got none")
        cleaned = []
        for url in urls:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise UsageError(
                    f"base_urls: {url!r} is not an http(s) URL; give e.g. 'http://127.0.0.1:8000/v1'"
                )
            cleaned.append(url.rstrip("/"))
        if len(set(cleaned)) != len(cleaned):
            raise UsageError(f"base_urls: duplicate URL in {tuple(cleaned)!r}")
        object.__setattr__(self, "base_urls", tuple(cleaned))
        if not isinstance(self.model, str) or not self.model:
            raise UsageError(f"model must be a non-empty string, got {self.model!r}")
        if self.api not in ("chat", "completions"):
            raise UsageError(f"api must be 'chat' or 'completions', got {self.api!r}")
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not self.api_key_env
        ):
            raise UsageError("api_key_env must be the NAME of an environment variable, or None")
        _positive("timeout_s", self.timeout_s)
        _non_negative("backoff_base_s", self.backoff_base_s)
        _non_negative("backoff_max_s", self.backoff_max_s)
        _int_at_least("max_retries", self.max_retries, 0)
        _int_at_least("concurrency", self.concurrency, 1)
        if not isinstance(self.server_n, bool):
            raise UsageError(f"server_n must be True or False, got {self.server_n!r}")


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters; ``None`` ones are left out of the request body."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    """Stop strings; a single string is taken as a one-element tuple."""
    reasoning_effort: str | None = None
    """Sent as ``reasoning_effort`` (OpenAI, vLLM, SGLang, llama.cpp); ``None``: not sent."""
    extra_body: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """Merged into the JSON body as given (e.g. ``{"top_k": 20}``); may override the fields
    above but not ``model``, ``messages``, ``prompt``, ``seed``, ``n`` or ``stream``."""

    def __post_init__(self) -> None:
        if self.temperature is not None:
            _non_negative("temperature", self.temperature)
        if self.top_p is not None:
            _number("top_p", self.top_p)
            if not 0.0 < self.top_p <= 1.0:
                raise UsageError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.max_tokens is not None:
            _int_at_least("max_tokens", self.max_tokens, 1)
        stop = self.stop
        if stop is not None:
            stop = (stop,) if isinstance(stop, str) else tuple(stop)
            if not all(isinstance(s, str) and s for s in stop):
                raise UsageError(f"stop must hold non-empty strings, got {self.stop!r}")
            object.__setattr__(self, "stop", stop)
        if not isinstance(self.extra_body, Mapping):
            raise UsageError(f"extra_body must be a mapping, got {type(self.extra_body).__name__}")
        extra = dict(self.extra_body)
        bad = sorted(RESERVED_BODY_KEYS.intersection(extra))
        if bad:
            raise UsageError(
                f"extra_body may not set {', '.join(bad)}: the client sets them "
                "(model/seed from the config and call, n from server_n)"
            )
        try:
            orjson.dumps(extra)
        except TypeError as exc:
            raise UsageError(f"extra_body is not JSON-serialisable: {exc}") from exc
        object.__setattr__(self, "extra_body", MappingProxyType(extra))
        fields: dict[str, Any] = {}
        for name in ("temperature", "top_p", "max_tokens"):
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        if stop is not None:
            fields["stop"] = list(stop)
        if self.reasoning_effort is not None:
            if not isinstance(self.reasoning_effort, str) or not self.reasoning_effort:
                raise UsageError(
                    f"reasoning_effort must be a non-empty string, got {self.reasoning_effort!r}"
                )
            fields["reasoning_effort"] = self.reasoning_effort
        fields.update(extra)
        # Precomputed once: the body fields every request with these params carries.
        object.__setattr__(self, "_body_fields", fields)

    def body_fields(self) -> dict[str, Any]:
        """The JSON body fields these parameters add (a fresh dict)."""
        return dict(self._body_fields)  # type: ignore[attr-defined]


def _number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value!r}")


def _positive(name: str, value: object) -> None:
    _number(name, value)
    if value <= 0:  # type: ignore[operator]
        raise UsageError(f"{name} must be > 0, got {value!r}")


def _non_negative(name: str, value: object) -> None:
    _number(name, value)
    if value < 0:  # type: ignore[operator]
        raise UsageError(f"{name} must be >= 0, got {value!r}")


def _int_at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UsageError(f"{name} must be an integer >= {low}, got {value!r}")
