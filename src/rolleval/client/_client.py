"""The async client: one request per rollout, bounded concurrency, retries, failover."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
from collections.abc import Awaitable, Mapping, Sequence
from time import monotonic, perf_counter
from typing import Any, TypeVar, cast

import httpx
import orjson

from .._sanitize import check_api_key, redact, redact_value, register_secret
from ..errors import UsageError
from ._completion import Completion
from ._config import EndpointConfig, SamplingParams
from ._errors import Failure, body_excerpt, failure_from_exception, failure_from_status

__all__ = ["Client", "complete_sync", "read_api_key"]

_T = TypeVar("_T")

#: Exceptions one attempt may raise; all become a :class:`Failure`, none reaches the caller.
_ATTEMPT_ERRORS = (asyncio.TimeoutError, httpx.HTTPError, OSError)

if sys.version_info >= (3, 11):

    async def _with_deadline(aw: Awaitable[_T], timeout_s: float) -> _T:
        async with asyncio.timeout(timeout_s):
            return await aw

else:  # pragma: no cover - Python 3.10
    _with_deadline = asyncio.wait_for


class _Endpoint:
    """Per-endpoint routing state."""

    __slots__ = ("base_url", "connect_failures", "down_until", "in_flight", "models_url", "url")

    def __init__(self, base_url: str, path: str) -> None:
        self.base_url = base_url
        self.url = base_url + path
        self.models_url = base_url + "/models"
        self.in_flight = 0
        self.down_until = 0.0
        self.connect_failures = 0


class Client:
    """Async client for OpenAI-compatible endpoints (vLLM, SGLang, llama.cpp, hosted APIs).

    One request per rollout by default. At most ``config.concurrency`` requests are in
    flight, spread over ``config.base_urls`` by least-in-flight (ties round robin); an
    endpoint that refuses connections is avoided for a backoff period, and the retry goes to
    another endpoint at once.

    Retried (up to ``max_retries`` times, exponential backoff with full jitter): connection
    errors, dropped connections, attempt timeouts, HTTP 408/429/5xx (a ``Retry-After`` or
    ``retry-after-ms`` header replaces the jittered delay, capped at ``backoff_max_s``), and
    200 responses whose body is not readable (not JSON, no ``choices``): such a body never
    reached us as a completion, so re-sending cannot duplicate one, and truncation by a
    proxy or an overloaded server is typically transient. A 200 with ``choices`` is complete
    and is never re-sent, even when a choice is unusable (content of the wrong type, or
    nothing at all in it): with the same seed it would most likely come back the same, at
    full generation cost. A choice with null or empty content but a finish reason or a
    thought is a completed rollout (:meth:`_parse_choice`).
    Other 4xx fail at once. Every outcome is a :class:`Completion`; ``complete`` raises only
    :class:`~rolleval.errors.UsageError` for a wrong call, never an httpx exception.

    ``transport`` is the test seam (any ``httpx.AsyncBaseTransport``). Use as
    ``async with Client(config) as client: ...`` or call :meth:`aclose`.
    """

    def __init__(
        self, config: EndpointConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if not isinstance(config, EndpointConfig):
            raise UsageError(f"config must be an EndpointConfig, got {type(config).__name__}")
        self._config = config
        self._chat = config.api == "chat"
        path = "/chat/completions" if self._chat else "/completions"
        self._endpoints = tuple(_Endpoint(url, path) for url in config.base_urls)
        self._rr = 0
        self._sem = asyncio.Semaphore(config.concurrency)
        self._rng = random.Random()
        self._key: str | None = None
        self._http = httpx.AsyncClient(
            transport=transport,
            limits=httpx.Limits(
                max_connections=config.concurrency,
                max_keepalive_connections=config.concurrency,
            ),
            timeout=httpx.Timeout(config.timeout_s),
            headers={"content-type": "application/json", "accept": "application/json"},
        )

    @property
    def config(self) -> EndpointConfig:
        return self._config

    def __repr__(self) -> str:
        c = self._config
        return f"Client(base_urls={c.base_urls!r}, model={c.model!r}, api={c.api!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    # -- public requests ---------------------------------------------------------------

    async def complete(
        self,
        prompt: Sequence[Mapping[str, Any]] | str,
        sampling: SamplingParams,
        *,
        seed: int | None,
    ) -> Completion:
        """One rollout: one request (plus retries). ``prompt`` is a list of chat messages,
        or a string (sent as one user message with ``api="chat"``)."""
        payload = self._payload(prompt, sampling, seed, None)
        return (await self._run(payload, 1))[0]

    async def complete_n(
        self,
        prompt: Sequence[Mapping[str, Any]] | str,
        sampling: SamplingParams,
        *,
        seeds: Sequence[int],
    ) -> list[Completion]:
        """``len(seeds)`` rollouts of one prompt, in the order of ``seeds``.

        Default: one request per seed, run concurrently. With ``config.server_n``: one
        request with ``n=len(seeds)`` and ``seed=seeds[0]`` (the server derives the other
        choices); a choice the server did not return becomes an ``infra_error``.
        """
        seeds = list(seeds)
        if not seeds:
            return []
        if self._config.server_n and len(seeds) > 1:
            payload = self._payload(prompt, sampling, seeds[0], len(seeds))
            return await self._run(payload, len(seeds))
        payloads = [self._payload(prompt, sampling, seed, None) for seed in seeds]
        results = await asyncio.gather(*(self._run(p, 1) for p in payloads))
        return [r[0] for r in results]

    async def models(self) -> list[dict[str, Any]]:
        """``GET /models`` of every endpoint, in ``base_urls`` order, for provenance.

        One attempt each, no retries. Each item is ``{"endpoint": url, "models": [...]}``
        (the ``data`` list as served) or ``{"endpoint": url, "error": "..."}``, with
        ``"unreachable": True`` when no connection could be made (refused, no such host).
        """
        self._update_auth()
        return list(await asyncio.gather(*(self._models_of(ep) for ep in self._endpoints)))

    # -- request building --------------------------------------------------------------

    def _payload(
        self, prompt: Any, sampling: SamplingParams, seed: int | None, n: int | None
    ) -> bytes:
        if not isinstance(sampling, SamplingParams):
            raise UsageError(f"sampling must be a SamplingParams, got {type(sampling).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise UsageError(f"seed must be an integer or None, got {seed!r}")
        body: dict[str, Any] = {"model": self._config.model}
        if self._chat:
            body["messages"] = _messages(prompt)
        elif isinstance(prompt, str):
            body["prompt"] = prompt
        else:
            raise UsageError(
                f"api='completions' takes a string prompt, got {type(prompt).__name__}"
            )
        body.update(sampling._body_fields)  # type: ignore[attr-defined]
        if seed is not None:
            body["seed"] = seed
        if n is not None:
            body["n"] = n
        return orjson.dumps(body)

    def _update_auth(self) -> None:
        """Read the API key from its environment variable (every request: it may rotate)."""
        name = self._config.api_key_env
        if name is None:
            return
        key = read_api_key(name)
        if key != self._key:
            self._http.headers["authorization"] = "Bearer " + key
            self._key = key

    # -- the retry loop ----------------------------------------------------------------

    async def echo(
        self,
        prompt: str,
        *,
        top_logprobs: int = 1,
        extra_body: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any] | None, Completion]:
        """The prompt's own token log-probs: one ``/completions`` request with ``echo``,
        ``logprobs: top_logprobs``, ``max_tokens: 1`` and temperature 0 (plus retries),
        whatever ``config.api`` is; ``extra_body`` fields are added to the request (they
        may not replace these). Returns the 200 body (``None`` on failure) and the outcome."""
        if not isinstance(prompt, str) or not prompt:
            raise UsageError("echo takes a non-empty string prompt")
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or top_logprobs < 1:
            raise UsageError(f"top_logprobs must be an integer >= 1, got {top_logprobs!r}")
        body: dict[str, Any] = dict(extra_body or {})
        body.update(
            {
                "model": self._config.model,
                "prompt": prompt,
                "max_tokens": 1,
                "temperature": 0.0,
                "echo": True,
                "logprobs": top_logprobs,
            }
        )
        raw: list[dict[str, Any]] = []
        (completion,) = await self._run(orjson.dumps(body), 1, path="/completions", raw=raw)
        return (raw[0] if raw else None), completion

    async def _run(
        self,
        payload: bytes,
        n: int,
        *,
        path: str | None = None,
        raw: list[dict[str, Any]] | None = None,
    ) -> list[Completion]:
        """Send ``payload`` (to ``path`` under the base URL when given, else the API's
        path) with retries; with ``raw``, the 200 body is appended to it."""
        self._update_auth()
        max_retries = self._config.max_retries
        retries = 0
        avoid: _Endpoint | None = None
        started = 0.0
        while True:
            async with self._sem:
                ep = self._pick(avoid)
                if not retries:
                    started = perf_counter()
                ep.in_flight += 1
                try:
                    result = await self._attempt(ep, payload, path)
                finally:
                    ep.in_flight -= 1
            if not isinstance(result, Failure):
                if raw is not None:
                    raw.append(result)
                chat = self._chat if path is None else path.endswith("/chat/completions")
                return self._completions(
                    result, n, perf_counter() - started, retries, ep, chat=chat
                )
            if not result.retryable or retries >= max_retries:
                failed = self._failed(result, perf_counter() - started, retries, ep)
                return [failed] * n
            delay = self._delay(result, retries, ep)
            retries += 1
            avoid = ep
            if delay > 0:
                await asyncio.sleep(delay)

    async def _attempt(
        self, ep: _Endpoint, payload: bytes, path: str | None = None
    ) -> dict[str, Any] | Failure:
        """One request; the parsed body of a 200 with ``choices``, or why not."""
        url = ep.url if path is None else ep.base_url + path
        try:
            response = await _with_deadline(
                self._http.post(url, content=payload), self._config.timeout_s
            )
        except _ATTEMPT_ERRORS as exc:
            failure = failure_from_exception(exc, self._config.timeout_s)
            if failure.kind == "connect" or isinstance(exc, httpx.ConnectTimeout):
                self._mark_down(ep)
            return failure
        ep.connect_failures = 0
        content = response.content
        if response.status_code != 200:
            return failure_from_status(response.status_code, response.headers, content)
        data = _loads_lenient(content)
        if data is _NOT_JSON:
            return Failure(
                "malformed", f"malformed response: body is not JSON: {body_excerpt(content)}", True
            )
        choices = data.get("choices") if type(data) is dict else None
        if type(choices) is not list or not choices:
            return Failure(
                "malformed",
                f"malformed response: no choices in 200 body: {body_excerpt(content)}",
                True,
            )
        return cast("dict[str, Any]", data)

    def _pick(self, avoid: _Endpoint | None) -> _Endpoint:
        """Least in flight among endpoints not marked down, skipping ``avoid`` if possible."""
        eps = self._endpoints
        count = len(eps)
        if count == 1:
            return eps[0]
        now = monotonic()
        start = self._rr
        self._rr = (start + 1) % count
        best = eps[start]
        best_key = (best is avoid, best.down_until > now, best.in_flight)
        for i in range(1, count):
            ep = eps[(start + i) % count]
            key = (ep is avoid, ep.down_until > now, ep.in_flight)
            if key < best_key:
                best, best_key = ep, key
        return best

    def _mark_down(self, ep: _Endpoint) -> None:
        cfg = self._config
        ep.connect_failures += 1
        pause = min(cfg.backoff_max_s, cfg.backoff_base_s * 2.0 ** min(ep.connect_failures, 30))
        ep.down_until = monotonic() + pause

    def _delay(self, failure: Failure, retries: int, ep: _Endpoint) -> float:
        cfg = self._config
        if failure.retry_after_s is not None:
            return min(failure.retry_after_s, cfg.backoff_max_s)
        if failure.kind == "connect":
            now = monotonic()
            if any(other is not ep and other.down_until <= now for other in self._endpoints):
                return 0.0  # fail over at once
        return self._rng.uniform(
            0.0, min(cfg.backoff_max_s, cfg.backoff_base_s * 2.0 ** min(retries, 30))
        )

    # -- outcomes ----------------------------------------------------------------------

    def _completions(
        self,
        data: dict[str, Any],
        n: int,
        latency: float,
        retries: int,
        ep: _Endpoint,
        *,
        chat: bool,
    ) -> list[Completion]:
        model = data.get("model")
        model = redact(model) if type(model) is str else None
        fingerprint = data.get("system_fingerprint")
        fingerprint = redact(fingerprint) if type(fingerprint) is str else None
        prompt_tokens = completion_tokens = reasoning_tokens = None
        usage = data.get("usage")
        if type(usage) is dict:
            prompt_tokens = _int_or_none(usage.get("prompt_tokens"))
            if n == 1:
                completion_tokens = _int_or_none(usage.get("completion_tokens"))
                reasoning_tokens = _reasoning_tokens(usage)
        choices = data["choices"]
        if n == 1:
            by_index = {0: choices[0]}
        else:
            by_index = {}
            for pos, choice in enumerate(choices):
                index = choice.get("index", pos) if type(choice) is dict else pos
                by_index.setdefault(index, choice)
        out = []
        for i in range(n):
            choice = by_index.get(i)
            text = reasoning = finish = None
            error: str | None
            if choice is None:
                error = (
                    f"malformed response: server returned {len(choices)} of {n} choices "
                    f"(no choice with index {i}; does this server honour n? see server_n)"
                )
            else:
                text, reasoning, finish, error = self._parse_choice(choice, i, chat)
            out.append(
                Completion(
                    status="ok" if error is None else "infra_error",
                    text=text,
                    finish_reason=finish,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    reasoning=reasoning,
                    reasoning_tokens=reasoning_tokens,
                    latency_s=latency,
                    error=self._redact(error) if error is not None else None,
                    retries=retries,
                    model=model,
                    system_fingerprint=fingerprint,
                    endpoint=ep.base_url,
                )
            )
        return out

    def _parse_choice(
        self, choice: Any, i: int, chat: bool
    ) -> tuple[str | None, str | None, str | None, str | None]:
        """``(text, reasoning, finish_reason, error)`` of one choice.

        Classified by the finish reason and which fields are present, never by the text
        alone (``docs/contract.md``, "Reasoning models"): a choice with a finish reason or a
        thought is a completed rollout even when its text is null or empty (a budget run
        out mid-thought is a truncated answer, not an outage); it is malformed only with
        no message at all, a text of the wrong type, or nothing in it (no text, no
        thought, no finish reason). ``text`` and ``reasoning`` are as the server sent them
        (``None`` for a null or absent field); both are ``None`` when ``error`` is set.
        """
        if type(choice) is not dict:
            return None, None, None, f"malformed response: choices[{i}] is not an object"
        finish = choice.get("finish_reason")
        finish = redact(finish) if type(finish) is str else None
        reasoning: Any = None
        if chat:
            message = choice.get("message")
            if type(message) is not dict:
                return None, None, finish, f"malformed response: no choices[{i}].message"
            text = message.get("content")
            where = f"choices[{i}].message.content"
            reasoning = _thought_of(message)
        else:
            text = choice.get("text")
            where = f"choices[{i}].text"
        if text is not None and type(text) is not str:
            return (
                None,
                None,
                finish,
                f"malformed response: {where} is {type(text).__name__}, not a string",
            )
        if text is None and reasoning is None and finish is None:
            return None, None, None, f"malformed response: no {where} and no finish_reason"
        return (
            redact(text) if text is not None else None,
            redact(reasoning) if reasoning is not None else None,
            finish,
            None,
        )

    def _failed(self, failure: Failure, latency: float, retries: int, ep: _Endpoint) -> Completion:
        message = failure.message
        if retries:
            if failure.retryable:
                message += f" (gave up after {retries + 1} attempts)"
            else:
                message += f" (attempt {retries + 1})"
        return Completion(
            status="timeout" if failure.kind == "timeout" else "infra_error",
            text=None,
            finish_reason=None,
            prompt_tokens=None,
            completion_tokens=None,
            latency_s=latency,
            error=self._redact(message),
            retries=retries,
            model=None,
            system_fingerprint=None,
            endpoint=ep.base_url,
        )

    @staticmethod
    def _redact(message: str) -> str:
        return redact(message)

    async def _models_of(self, ep: _Endpoint) -> dict[str, Any]:
        timeout = self._config.timeout_s
        try:
            async with self._sem:
                response = await _with_deadline(self._http.get(ep.models_url), timeout)
        except _ATTEMPT_ERRORS as exc:
            failure = failure_from_exception(exc, timeout)
            out: dict[str, Any] = {"endpoint": ep.base_url, "error": self._redact(failure.message)}
            if failure.kind == "connect":  # nothing listens there: no request can succeed
                out["unreachable"] = True
            return out
        if response.status_code != 200:
            failure = failure_from_status(response.status_code, response.headers, response.content)
            return {"endpoint": ep.base_url, "error": self._redact(failure.message)}
        data = _loads_lenient(response.content)
        models = data.get("data") if type(data) is dict else None
        if type(models) is not list:
            excerpt = body_excerpt(response.content)
            return {
                "endpoint": ep.base_url,
                "error": f"malformed response: no data list: {excerpt}",
            }
        return {"endpoint": ep.base_url, "models": redact_value(models)}


def complete_sync(
    config: EndpointConfig,
    prompt: Sequence[Mapping[str, Any]] | str,
    sampling: SamplingParams,
    *,
    seed: int | None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Completion:
    """Blocking one-off :meth:`Client.complete` (opens and closes a client; not for loops).

    Must not be called from a running event loop; there, ``await client.complete(...)``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UsageError("complete_sync called inside a running event loop; await Client.complete")

    async def _one() -> Completion:
        async with Client(config, transport=transport) as client:
            return await client.complete(prompt, sampling, seed=seed)

    return asyncio.run(_one())


def _messages(prompt: Any) -> list[Any]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if not isinstance(prompt, (list, tuple)) or not prompt:
        raise UsageError(
            f"prompt must be a non-empty list of chat messages or a string, got {prompt!r:.80}"
        )
    if all(type(m) is dict for m in prompt):
        return prompt if type(prompt) is list else list(prompt)
    out = []
    for m in prompt:
        if isinstance(m, Mapping):
            out.append(dict(m))
        elif hasattr(m, "model_dump"):
            out.append(m.model_dump())
        else:
            raise UsageError(f"prompt: chat message must be a mapping, got {type(m).__name__}")
    return out


def read_api_key(name: str) -> str:
    """The API key held by environment variable ``name``, surrounding whitespace stripped.

    Refused with :class:`~rolleval.errors.UsageError` (exit 2) when the variable is unset or
    empty or the key holds a control, space or non-ASCII character. The key is registered
    for redaction (:mod:`rolleval._sanitize`) before it is used anywhere.
    """
    value = os.environ.get(name)
    if not value:
        raise UsageError(
            f"api_key_env: environment variable {name} is not set or empty; "
            "export the API key there"
        )
    key = check_api_key(value, f"api_key_env: environment variable {name}")
    register_secret(key)
    return key


_NOT_JSON: Any = object()
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _loads_lenient(content: bytes) -> Any:
    """Parse a response body; ``_NOT_JSON`` if it is not JSON.

    orjson refuses valid JSON holding a lone surrogate escape (``"\\ud800"``) and invalid
    UTF-8; such a body is parsed again leniently, each lone surrogate or bad byte becoming
    U+FFFD, so the model's broken output is recorded (and graded) as what it is instead of
    being re-sent as a transport error.
    """
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        pass
    try:
        data = json.loads(content.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return _NOT_JSON
    return _replace_surrogates(data)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    return value


def _int_or_none(value: Any) -> int | None:
    return value if type(value) is int else None


#: Where servers put the thought of a reasoning model, first found wins: ``reasoning``
#: (vLLM since 0.16), ``reasoning_content`` (SGLang, llama.cpp, DeepSeek, older vLLM).
THOUGHT_FIELDS = ("reasoning", "reasoning_content")


def _thought_of(message: dict[str, Any]) -> str | None:
    """The thought of a chat message: the first of :data:`THOUGHT_FIELDS` holding a string."""
    for key in THOUGHT_FIELDS:
        value = message.get(key)
        if type(value) is str:
            return value
    return None


def _reasoning_tokens(usage: dict[str, Any]) -> int | None:
    """Reasoning tokens as the server counts them: ``completion_tokens_details.reasoning_tokens``
    (OpenAI, DeepSeek, vLLM) or top-level ``reasoning_tokens`` (SGLang); ``None`` (not
    counted) when neither is an integer, never 0 for absent."""
    details = usage.get("completion_tokens_details")
    if type(details) is dict:
        value = _int_or_none(details.get("reasoning_tokens"))
        if value is not None:
            return value
    return _int_or_none(usage.get("reasoning_tokens"))
