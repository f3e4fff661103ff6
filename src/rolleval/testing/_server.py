"""A real OpenAI-compatible HTTP server for tests and benchmarks, with fault injection.

asyncio streams and a minimal HTTP/1.1 parser (keep-alive, ``Content-Length`` bodies):
small enough to read, fast enough to answer thousands of requests per second. Runs in a
background thread with its own event loop (``with OpenAIServer() as srv``) or in the
foreground (``python -m rolleval.testing.server``).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Any

import orjson

from ._faults import Fault, FaultHook, ServerRequest

__all__ = [
    "LogprobFn",
    "OpenAIServer",
    "Responder",
    "echo_logprobs",
    "echo_responder",
    "toy_logprob",
    "word_tokens",
]

#: ``responder(request_json)`` returns the text, a ``(text, finish_reason)`` pair, or a dict
#: ``{"text": ..., "finish_reason": ...}``; called once per returned choice. A dict may also
#: set ``text`` or ``finish_reason`` to ``None`` (sent as JSON ``null``), give
#: ``reasoning`` / ``reasoning_content`` (sent beside ``content`` in the chat message, as
#: reasoning parsers do) and ``usage`` (keys merged into the response's ``usage``).
Responder = Callable[[dict[str, Any]], "str | tuple[str, str] | dict[str, Any]"]

_OK = Fault.ok()
_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024


def echo_responder(request: dict[str, Any]) -> tuple[str, str]:
    """Deterministic answer: ``"echo seed=<seed>: <last prompt text>"``.

    With ``max_tokens`` it keeps that many whitespace-separated words and reports
    ``finish_reason="length"`` when it had to cut.
    """
    if isinstance(request.get("prompt"), str):
        last = request["prompt"]
    else:
        messages = request.get("messages") or [{}]
        last = messages[-1].get("content") if isinstance(messages[-1], dict) else ""
        last = last if isinstance(last, str) else ""
    text = f"echo seed={request.get('seed')}: {last}"
    max_tokens = request.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens > 0:
        words = text.split()
        if len(words) > max_tokens:
            return " ".join(words[:max_tokens]), "length"
    return text, "stop"


#: ``logprob_fn(prefix, token)``: the log-prob of word token ``token`` after the text ``prefix``.
LogprobFn = Callable[[str, str], float]

_PROBE_BIGRAMS: set[tuple[str, str]] = set()


def toy_logprob(prefix: str, token: str) -> float:
    """A toy language model over words: -0.5 nats for a word that follows its predecessor in
    one of the log-prob probe texts, -4 otherwise (so a fluent probe text scores far above
    its scrambled words, as the probe requires)."""
    if not _PROBE_BIGRAMS:
        from ..client._logprob_probe import PROBE_TEXTS

        for text in PROBE_TEXTS:
            words = text.split()
            _PROBE_BIGRAMS.update(itertools.pairwise(words))
    words = prefix.split()
    previous = words[-1] if words else ""
    return -0.5 if (previous, token.strip()) in _PROBE_BIGRAMS else -4.0


def word_tokens(text: str) -> list[str]:
    """The test server's tokenizer: each word with the whitespace before it."""
    tokens: list[str] = []
    start = 0
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        while i < len(text) and not text[i].isspace():
            i += 1
        tokens.append(text[start:i])
        start = i
    return [t for t in tokens if t]


def echo_logprobs(prompt: str, logprob_fn: LogprobFn, *, shifted: bool = False) -> dict[str, Any]:
    """The ``logprobs`` object of an echoed completion of ``prompt`` plus one generated
    token ``" ."``: tokens, token_logprobs (``None`` for the first), top_logprobs (the token
    itself and one unlikely alternative) and text_offset. ``shifted`` reproduces
    llama-cpp-python's bug: each position holds the distribution of the next one."""
    tokens = [*word_tokens(prompt), " ."]
    offsets, at = [], 0
    for t in tokens:
        offsets.append(at)
        at += len(t)
    values: list[float | None] = [None]
    top: list[dict[str, float] | None] = [None]
    for i in range(1, len(tokens)):
        j = min(i + 1, len(tokens) - 1) if shifted else i
        own = logprob_fn(prompt[: offsets[j]], tokens[j])
        values.append(-9.0 if shifted else own)
        alt = " zzz" if tokens[j] != " zzz" else " yyy"
        top.append({tokens[j]: own, alt: min(own, -7.0) - 1.0})
    return {"tokens": tokens, "token_logprobs": values, "top_logprobs": top, "text_offset": offsets}


async def _cancel_the_rest() -> None:
    """Cancel and await every other task of the loop: a connection still being accepted
    when serving stopped is one, and its accept closes the socket when cancelled."""
    pending = asyncio.all_tasks() - {asyncio.current_task()}
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


class OpenAIServer:
    """OpenAI-protocol test server on ``host`` (default 127.0.0.1) and a free port.

    Serves ``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/completions``;
    routes go by path suffix, so ``srv.url + "/other/v1"`` is a second base URL for the
    same server (handy to test load spreading against one set of counters).
    Answers come from ``responder``; ``faults`` decides per valid completion request what
    happens instead: a sequence is indexed by arrival order (past its end: answer normally),
    a callable gets the :class:`ServerRequest` and returns a :class:`Fault` or ``None``.
    Both may be reassigned while the server runs.

    Requests for another model get 404, malformed ones 400, and with ``api_key`` set a
    missing or wrong ``Authorization: Bearer`` gets 401, all before ``faults`` is asked.
    ``echo_headers=True`` plays a leaky proxy: those 401 bodies repeat the request headers,
    and ``GET /models`` answers 200 with a debug page of the request headers (not a model
    list).
    ``honour_n=False`` answers one choice whatever ``n`` asks (like llama.cpp's server).

    ``/v1/completions`` with ``echo`` and ``logprobs`` echoes the prompt with per-token
    log-probs (:func:`echo_logprobs`, word tokens scored by ``logprob_fn``, default
    :func:`toy_logprob`). ``prompt_logprobs`` says how: ``"ok"``, ``"none"`` (no log-probs,
    like llama.cpp's server) or ``"shifted"`` (like llama-cpp-python's server).

    Counters for assertions (read them after the client is done): ``path_counts`` (requests
    per path), ``fault_counts`` (per :attr:`Fault.label`, ``"ok"`` for normal answers),
    ``in_flight`` and ``max_in_flight`` (completion requests being handled),
    ``connections`` (accepted), ``requests`` (the last ``record`` :class:`ServerRequest`).
    """

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        faults: Sequence[Fault | None] | FaultHook | None = None,
        model: str = "rolleval-test",
        system_fingerprint: str | None = "fp_rolleval_test",
        api_key: str | None = None,
        honour_n: bool = True,
        echo_headers: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        record: int = 10_000,
        logprob_fn: LogprobFn | None = None,
        prompt_logprobs: str = "ok",
    ) -> None:
        self.responder: Responder = responder or echo_responder
        self.logprob_fn: LogprobFn = logprob_fn or toy_logprob
        if prompt_logprobs not in ("ok", "none", "shifted"):
            raise ValueError("prompt_logprobs must be 'ok', 'none' or 'shifted'")
        self.prompt_logprobs = prompt_logprobs
        self.faults = faults
        self.model = model
        self.system_fingerprint = system_fingerprint
        self.api_key = api_key
        self.honour_n = honour_n
        self.echo_headers = echo_headers
        self.host = host
        self.port = port
        self.requests: deque[ServerRequest] = deque(maxlen=record)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.reset_counters()

    def __repr__(self) -> str:
        return f"OpenAIServer(base_url={self.base_url!r}, model={self.model!r})"

    # -- counters ----------------------------------------------------------------------

    def reset_counters(self) -> None:
        """Zero all counters and forget recorded requests (the arrival index restarts)."""
        self.path_counts: Counter[str] = Counter()
        self.fault_counts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0
        self.requests.clear()
        self._index = 0

    @property
    def completion_requests(self) -> int:
        """Completion requests received (chat and text, valid or not, any path prefix)."""
        return sum(n for path, n in self.path_counts.items() if path.endswith("/completions"))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the client's base URL."""
        return self.url + "/v1"

    # -- background-thread mode --------------------------------------------------------

    def start(self) -> OpenAIServer:
        """Serve from a daemon thread; returns once the port is bound."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        ready = threading.Event()
        errors: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._thread_main,
            args=(ready, errors),
            name="rolleval-openai-server",
            daemon=True,
        )
        self._thread.start()
        ready.wait()
        if errors:
            self._thread.join()
            self._thread = None
            raise errors[0]
        return self

    def stop(self) -> None:
        """Close the listener and every connection, then join the thread."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None:
            return
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        thread.join()
        self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _thread_main(self, ready: threading.Event, errors: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self.serve(ready=ready.set))
        except BaseException as exc:
            errors.append(exc)
        finally:
            ready.set()
            loop.run_until_complete(_cancel_the_rest())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    # -- serving -----------------------------------------------------------------------

    async def serve(self, *, ready: Callable[[], object] | None = None) -> None:
        """Serve until :meth:`stop` (thread mode) or cancellation; ``ready()`` once bound."""
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._accept, self.host, self.port, limit=_MAX_HEAD)
        try:
            self.port = server.sockets[0].getsockname()[1]
            if ready is not None:
                ready()
            await self._stop.wait()
        finally:
            # A connection accepted just before the stop builds its transport on a later turn
            # of the loop, which fails once the server is closed (Python 3.11 then leaves the
            # socket open): two turns let every accept already queued build it first.
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Register a new connection at once, before its handler first runs, so that a stop
        in between still closes it (a handler task that never ran cannot close its socket)."""
        if self._stop is not None and self._stop.is_set():
            writer.transport.abort()  # accepted as the server stopped: never served
            return
        task = asyncio.get_running_loop().create_task(self._handle(reader, writer))
        self._tasks.add(task)
        self._writers.add(writer)
        self.connections += 1
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            keep_alive = True
            while keep_alive:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break
                except asyncio.LimitOverrunError:
                    writer.write(_response(431, _error_body("headers too large"), keep_alive=False))
                    break
                keep_alive = await self._request(head, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # only stop() cancels handlers; ending quietly keeps asyncio from logging it
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _request(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Read and answer one request; whether to keep the connection open."""
        lines = head[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            writer.write(_response(400, _error_body("bad request line"), keep_alive=False))
            return False
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        if "transfer-encoding" in headers:
            writer.write(
                _response(501, _error_body("chunked bodies not supported"), keep_alive=False)
            )
            return False
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY:
            writer.write(_response(400, _error_body("bad content-length"), keep_alive=False))
            return False
        body = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0]
        self.path_counts[path] += 1
        if path.endswith("/models"):
            if method != "GET":
                return await _send(writer, 405, _error_body("use GET"), keep_alive)
            if self.echo_headers:
                return await _send(writer, 200, _echo_body(200, headers), keep_alive)
            return await _send(writer, 200, self._models_body(), keep_alive)
        if path.endswith("/chat/completions"):
            chat = True
        elif path.endswith("/completions"):
            chat = False
        else:
            return await _send(writer, 404, _error_body(f"no route {path}"), keep_alive)
        if method != "POST":
            return await _send(writer, 405, _error_body("use POST"), keep_alive)
        rejected = self._check(chat, headers, body)
        if isinstance(rejected, tuple):
            if rejected[0] == 401 and self.echo_headers:
                return await _send(writer, 401, _echo_body(401, headers), keep_alive)
            return await _send(writer, rejected[0], _error_body(rejected[1]), keep_alive)
        request = ServerRequest(self._index, method, path, headers, rejected)
        self._index += 1
        self.requests.append(request)
        try:
            fault = self._fault_for(request)
        except Exception as exc:  # a broken hook is the test's bug: say so in a 500
            self.fault_counts["hook_error"] += 1
            return await _send(writer, 500, _error_body(f"faults hook failed: {exc!r}"), keep_alive)
        self.fault_counts[fault.label] += 1
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight
        try:
            if fault.delay_s > 0:
                await asyncio.sleep(fault.delay_s)
            if fault.kind == "drop":
                if fault.reset:
                    writer.transport.abort()
                return False
            if fault.kind in ("status", "body"):
                assert fault.body is not None
                return await _send(writer, fault.status, fault.body, keep_alive, fault.headers)
            if fault.kind == "echo_headers":
                return await _send(
                    writer, fault.status, _echo_body(fault.status, headers), keep_alive
                )
            try:
                answer = self._answer(
                    chat, request, fault.kind == "no_content", fault.kind == "lone_surrogate"
                )
            except Exception as exc:  # a broken responder is the test's bug: say so in a 500
                self.fault_counts["responder_error"] += 1
                return await _send(
                    writer, 500, _error_body(f"responder failed: {exc!r}"), keep_alive
                )
            return await _send(writer, 200, answer, keep_alive)
        finally:
            self.in_flight -= 1

    def _check(self, chat: bool, headers: dict[str, str], body: bytes) -> Any:
        """The parsed body, or ``(status, message)`` for a request to reject."""
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, "invalid or missing API key"
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            return 400, "body is not JSON"
        if not isinstance(data, dict):
            return 400, "body is not a JSON object"
        if data.get("model") != self.model:
            return 404, f"The model `{data.get('model')}` does not exist."
        if chat:
            messages = data.get("messages")
            if not isinstance(messages, list) or not messages:
                return 400, "messages must be a non-empty list"
        elif not isinstance(data.get("prompt"), str):
            return 400, "prompt must be a string"
        n = data.get("n", 1)
        if not isinstance(n, int) or n < 1:
            return 400, "n must be a positive integer"
        return data

    def _fault_for(self, request: ServerRequest) -> Fault:
        faults = self.faults
        if faults is None:
            return _OK
        if callable(faults):
            fault = faults(request)
        else:
            fault = faults[request.index] if request.index < len(faults) else None
        return _OK if fault is None else fault

    def _answer(
        self, chat: bool, request: ServerRequest, no_content: bool, surrogate: bool = False
    ) -> bytes:
        data = request.json
        n = data.get("n", 1) if self.honour_n else 1
        choices = []
        completion_tokens = 0
        extra_usage: dict[str, Any] = {}
        for i in range(n):
            result = self.responder(data)
            if isinstance(result, str):
                text, finish = result, "stop"
            elif isinstance(result, tuple):
                text, finish = result
            else:
                text, finish = result["text"], result.get("finish_reason", "stop")
                extra_usage.update(result.get("usage") or {})
            completion_tokens += len((text or "").split())
            if no_content or text is None:
                content = None
            else:
                content = text + (_SURROGATE_MARK if surrogate else "")
            if chat:
                message: dict[str, Any] = {"role": "assistant", "content": content}
                if isinstance(result, dict):
                    for key in ("reasoning", "reasoning_content"):
                        if key in result:
                            message[key] = result[key]
                            completion_tokens += len((result[key] or "").split())
                choice = {"index": i, "message": message, "finish_reason": finish}
            else:
                choice = {"index": i, "text": content, "finish_reason": finish, "logprobs": None}
                if data.get("echo") and data.get("logprobs") is not None:
                    choice["text"] = data["prompt"] + " ."
                    choice["finish_reason"] = "length"
                    if self.prompt_logprobs != "none":
                        choice["logprobs"] = echo_logprobs(
                            data["prompt"],
                            self.logprob_fn,
                            shifted=self.prompt_logprobs == "shifted",
                        )
            choices.append(choice)
        if chat:
            prompt_text = " ".join(
                m.get("content") or "" for m in data["messages"] if isinstance(m, dict)
            )
        else:
            prompt_text = data["prompt"]
        prompt_tokens = len(str(prompt_text).split())
        body = {
            "id": f"cmpl-{request.index}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                **extra_usage,
            },
        }
        if self.system_fingerprint is not None:
            body["system_fingerprint"] = self.system_fingerprint
        encoded = orjson.dumps(body)
        if surrogate:
            encoded = encoded.replace(_SURROGATE_MARK.encode(), b"\\ud800")
        return encoded

    def _models_body(self) -> bytes:
        return orjson.dumps(
            {
                "object": "list",
                "data": [
                    {"id": self.model, "object": "model", "created": 0, "owned_by": "rolleval"}
                ],
            }
        )


_REASONS = {s.value: s.phrase for s in HTTPStatus}
#: Placeholder appended to the answer text for the lone-surrogate fault, then replaced by a
#: raw ``\ud800`` escape in the encoded body.
_SURROGATE_MARK = "@@rolleval-lone-surrogate@@"


def _echo_body(status: int, headers: dict[str, str]) -> bytes:
    """A leaky proxy's debug page: the request headers, once as text and once as JSON."""
    listing = "; ".join(f"{name}: {value}" for name, value in headers.items())
    return orjson.dumps(
        {
            "error": {"message": f"HTTP {status}: request headers were {listing}"},
            "debug": {"request_headers": headers},
        }
    )


def _error_body(message: str) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error"}})


def _response(
    status: int,
    body: bytes,
    *,
    keep_alive: bool = True,
    headers: tuple[tuple[str, str], ...] = (),
) -> bytes:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"connection: {'keep-alive' if keep_alive else 'close'}\r\n"
    )
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    return (head + "\r\n").encode("latin-1") + body


async def _send(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    keep_alive: bool,
    headers: tuple[tuple[str, str], ...] = (),
) -> bool:
    writer.write(_response(status, body, keep_alive=keep_alive, headers=headers))
    await writer.drain()
    return keep_alive
