"""Classification of failed attempts: the boundary where httpx exceptions stop.

Nothing here is raised to callers. Each failed attempt becomes a :class:`Failure` (kind,
one-line message, whether a retry may help, and any ``Retry-After``); the client turns the
last one into a ``timeout`` or ``infra_error`` :class:`~rolleval.client.Completion`.

==========================  =========  ==========================================
cause                       retried?   kind
==========================  =========  ==========================================
attempt deadline exceeded   yes        ``timeout`` (final status ``timeout``)
connect error (refused...)  yes        ``connect`` (retried on another endpoint)
read/write error, dropped   yes        ``network``
HTTP 408, 429, 5xx          yes        ``http`` (``Retry-After`` honoured)
other HTTP 4xx, 1xx, 3xx    no         ``rejected``
200, body unreadable        yes        ``malformed`` (not JSON, no ``choices``)
200, choice unusable        no         ``unusable`` (e.g. content not a string)
==========================  =========  ==========================================
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import NamedTuple

import httpx

from .._sanitize import redact, redact_tail

__all__: list[str] = []

#: How much of an error response body goes into a message.
BODY_EXCERPT_CHARS = 300
#: How many bytes of a body are read (and redacted) to make the excerpt.
BODY_SCAN_BYTES = 64 * 1024


class Failure(NamedTuple):
    """Why one attempt did not produce a usable response."""

    kind: str
    message: str
    retryable: bool
    retry_after_s: float | None = None


def failure_from_exception(exc: BaseException, timeout_s: float) -> Failure:
    """Map an exception raised by one attempt to a :class:`Failure`.

    Only ``asyncio.TimeoutError``, ``httpx.HTTPError`` and ``OSError`` are expected here;
    anything else is a bug and is not caught by the caller.
    """
    name = type(exc).__name__
    detail = redact(str(exc)).strip()
    what = f"{name}: {detail}" if detail else name
    if isinstance(exc, (asyncio.TimeoutError, httpx.TimeoutException)):
        return Failure("timeout", f"timeout: no response within {timeout_s:g} s ({name})", True)
    if isinstance(exc, httpx.ConnectError):
        return Failure("connect", f"connection error: {what}", True)
    if isinstance(exc, httpx.RemoteProtocolError):
        return Failure("network", f"connection dropped: {what}", True)
    if isinstance(exc, (httpx.NetworkError, OSError)):
        return Failure("network", f"network error: {what}", True)
    return Failure("rejected", f"request failed: {what}", False)


def failure_from_status(status: int, headers: httpx.Headers, body: bytes) -> Failure:
    """Map a non-200 response to a :class:`Failure`; the message has status and body excerpt."""
    message = f"HTTP {status}: {body_excerpt(body)}"
    if status in (408, 429) or 500 <= status <= 599:
        return Failure("http", message, True, retry_after_s(headers))
    return Failure("rejected", message, False)


def body_excerpt(body: bytes, limit: int = BODY_EXCERPT_CHARS) -> str:
    """The body as one line of at most ``limit`` characters, secrets redacted first.

    Redaction runs on the decoded body (its first :data:`BODY_SCAN_BYTES`) before any
    whitespace folding or cut, so a key that straddles the cut is never kept in part.
    """
    text = body[:BODY_SCAN_BYTES].decode("utf-8", "replace")
    text = redact_tail(text) if len(body) > BODY_SCAN_BYTES else redact(text)
    text = " ".join(text.split())
    if not text:
        return "(empty body)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def retry_after_s(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``
    (delta-seconds or HTTP-date); ``None`` if absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value is not None:
        seconds = _seconds(value)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
