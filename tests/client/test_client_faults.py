"""rolleval.client under injected faults, against the real local test server: retries,
Retry-After, timeouts, malformed answers, dropped connections, concurrency, several
endpoints and server-side n. Backoffs are milliseconds so the file stays fast."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from conftest import complete as _complete
from conftest import make_config
from rolleval.client import Client, Completion, EndpointConfig, SamplingParams
from rolleval.client._errors import retry_after_s
from rolleval.testing import Fault, OpenAIServer, ServerRequest, fail_first

MODEL = "rolleval-test"
CHAT = "/v1/chat/completions"


#: every test here sends "hi" with seed 1 (the echo server answers "echo seed=1: hi")
complete = functools.partial(_complete, prompt="hi", seed=1)


def complete_many(config: EndpointConfig, seeds: list[int]) -> list[Completion]:
    async def go() -> list[Completion]:
        async with Client(config) as client:
            return await client.complete_n("hi", SamplingParams(), seeds=seeds)

    return asyncio.run(go())


# -- retried statuses ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 429, 408])
def test_transient_status_is_retried_until_success(
    openai_server: OpenAIServer, status: int
) -> None:
    openai_server.faults = [Fault.http_status(status), Fault.http_status(status)]
    done = complete(make_config(openai_server.base_url))
    assert done.status == "ok" and done.text == "echo seed=1: hi"
    assert done.retries == 2
    assert openai_server.path_counts[CHAT] == 3
    assert openai_server.fault_counts == {f"http_{status}": 2, "ok": 1}


def test_exhausted_retries_give_infra_error_with_the_last_reason(
    openai_server: OpenAIServer,
) -> None:
    openai_server.faults = lambda request: Fault.http_status(503, message="overloaded")
    done = complete(make_config(openai_server.base_url, max_retries=2))
    assert done.status == "infra_error" and done.text is None
    assert done.retries == 2
    assert done.error is not None
    assert done.error.startswith("HTTP 503: ")
    assert "overloaded" in done.error and "gave up after 3 attempts" in done.error
    assert openai_server.path_counts[CHAT] == 3


def test_no_retries_when_max_retries_is_zero(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.http_status(500)]
    done = complete(make_config(openai_server.base_url, max_retries=0))
    assert done.status == "infra_error" and done.retries == 0
    assert openai_server.path_counts[CHAT] == 1


def test_retry_after_is_honoured(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.http_status(429, retry_after=0.3)]
    done = complete(make_config(openai_server.base_url, backoff_max_s=5.0))
    assert done.status == "ok" and done.retries == 1
    assert done.latency_s >= 0.28  # waited as told, although the jittered backoff is tiny


def test_retry_after_is_capped_by_backoff_max(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.http_status(503, retry_after=3600)]
    done = complete(make_config(openai_server.base_url, backoff_max_s=0.01))
    assert done.status == "ok" and done.retries == 1
    assert done.latency_s < 5.0


def test_retry_after_parsing() -> None:
    future = datetime.now(timezone.utc) + timedelta(seconds=30)
    assert retry_after_s(httpx.Headers({"retry-after": "2"})) == 2.0
    assert retry_after_s(httpx.Headers({"retry-after": "0.25"})) == 0.25
    assert retry_after_s(httpx.Headers({"retry-after-ms": "150", "retry-after": "9"})) == 0.15
    assert (
        25
        < retry_after_s(httpx.Headers({"retry-after": format_datetime(future, usegmt=True)}))
        <= 30
    )  # type: ignore[operator]
    assert retry_after_s(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after_s(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_s(httpx.Headers({"retry-after": "-3"})) == 0.0
    assert retry_after_s(httpx.Headers({})) is None


# -- not retried ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_fail_at_once(openai_server: OpenAIServer, status: int) -> None:
    openai_server.faults = [Fault.http_status(status, message="maximum context length is 4096")]
    done = complete(make_config(openai_server.base_url))
    assert done.status == "infra_error" and done.retries == 0
    assert done.error is not None
    assert done.error.startswith(f"HTTP {status}: ")
    assert "maximum context length is 4096" in done.error
    assert openai_server.path_counts[CHAT] == 1


def test_error_body_is_trimmed(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.http_status(400, message="x" * 5000)]
    done = complete(make_config(openai_server.base_url))
    assert done.error is not None and len(done.error) < 400 and done.error.endswith("…")


def test_wrong_model_is_not_retried(openai_server: OpenAIServer) -> None:
    done = complete(make_config(openai_server.base_url, model="other-model"))
    assert done.status == "infra_error" and done.retries == 0
    assert done.error is not None and "HTTP 404" in done.error and "other-model" in done.error


# -- timeouts ---------------------------------------------------------------------------------


def test_timeout_after_all_retries_is_status_timeout(openai_server: OpenAIServer) -> None:
    openai_server.faults = lambda request: Fault.delay(2.0)
    done = complete(make_config(openai_server.base_url, timeout_s=0.1, max_retries=1))
    assert done.status == "timeout" and done.text is None
    assert done.retries == 1
    assert done.error is not None and done.error.startswith("timeout: no response within 0.1 s")
    assert openai_server.path_counts[CHAT] == 2


def test_timeout_then_success(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.delay(2.0)]
    done = complete(make_config(openai_server.base_url, timeout_s=0.2))
    assert done.status == "ok" and done.retries == 1
    assert openai_server.path_counts[CHAT] == 2


def test_last_failure_decides_the_status(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.delay(2.0), Fault.http_status(503)]
    done = complete(make_config(openai_server.base_url, timeout_s=0.2, max_retries=1))
    assert done.status == "infra_error"
    assert done.error is not None and done.error.startswith("HTTP 503")


# -- malformed 200s ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (Fault.malformed(), "malformed response: body is not JSON"),
        (Fault.no_choices(), "malformed response: no choices in 200 body"),
        (Fault.raw({"choices": []}), "malformed response: no choices in 200 body"),
        (Fault.raw("[1, 2]"), "malformed response: no choices in 200 body"),
    ],
)
def test_unreadable_200_is_retried_and_counted(
    openai_server: OpenAIServer, fault: Fault, reason: str
) -> None:
    openai_server.faults = [fault]
    done = complete(make_config(openai_server.base_url))
    assert done.status == "ok" and done.retries == 1
    assert openai_server.path_counts[CHAT] == 2

    openai_server.reset_counters()
    openai_server.faults = lambda request: fault
    done = complete(make_config(openai_server.base_url, max_retries=1))
    assert done.status == "infra_error" and done.retries == 1
    assert done.error is not None and done.error.startswith(reason)


@pytest.mark.parametrize(
    ("api", "fault", "reason"),
    [
        (
            "chat",
            Fault.raw(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]}
            ),
            "malformed response: no choices[0].message.content and no finish_reason",
        ),
        (
            "completions",
            Fault.raw({"choices": [{"index": 0, "text": None}]}),
            "malformed response: no choices[0].text and no finish_reason",
        ),
        (
            "chat",
            Fault.raw({"choices": [{"message": {"content": ["a", "b"]}}]}),
            "malformed response: choices[0].message.content is list, not a string",
        ),
        (
            "chat",
            Fault.raw({"choices": [{"text": "x"}]}),
            "malformed response: no choices[0].message",
        ),
        ("chat", Fault.raw({"choices": ["x"]}), "malformed response: choices[0] is not an object"),
    ],
)
def test_unusable_choice_is_infra_error_and_not_resent(
    openai_server: OpenAIServer, api: str, fault: Fault, reason: str
) -> None:
    openai_server.faults = [fault]
    done = complete(make_config(openai_server.base_url, api=api))
    assert done.status == "infra_error" and done.text is None
    assert done.error is not None and done.error.startswith(reason)
    assert done.retries == 0
    assert openai_server.completion_requests == 1


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_null_content_with_finish_reason_is_completed(
    openai_server: OpenAIServer, api: str
) -> None:
    """Null content with a finish reason is a completed rollout with no answer (issue 19),
    never a malformed response: its finish reason and usage are kept."""
    openai_server.faults = [Fault.no_content()]
    done = complete(make_config(openai_server.base_url, api=api))
    assert done.status == "ok" and done.text is None and done.error is None
    assert done.finish_reason == "stop" and done.completion_tokens is not None
    assert done.model == MODEL


# -- dropped connections -----------------------------------------------------------------------


def test_dropped_connections_are_retried(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.drop(), Fault.drop(reset=True)]
    done = complete(make_config(openai_server.base_url))
    assert done.status == "ok" and done.retries == 2
    assert openai_server.fault_counts == {"drop": 1, "reset": 1, "ok": 1}


def test_always_dropped_gives_infra_error(openai_server: OpenAIServer) -> None:
    openai_server.faults = lambda request: Fault.drop()
    done = complete(make_config(openai_server.base_url, max_retries=2))
    assert done.status == "infra_error" and done.retries == 2
    assert done.error is not None and done.error.startswith(
        "connection dropped: RemoteProtocolError"
    )


def test_refused_connection_gives_infra_error(dead_base_url: str) -> None:
    done = complete(make_config(dead_base_url, max_retries=1))
    assert done.status == "infra_error" and done.retries == 1
    assert done.error is not None and done.error.startswith("connection error: ConnectError")
    assert done.endpoint == dead_base_url


# -- completed answers are never re-sent -------------------------------------------------------


def test_each_rollout_gets_exactly_one_answer_under_faults(openai_server: OpenAIServer) -> None:
    faults = [Fault.http_status(503), Fault.drop(), Fault.malformed(), Fault.http_status(429)]

    def hook(request: ServerRequest) -> Fault | None:
        # Each seed fails once with its own fault, then is answered.
        first = sum(1 for r in openai_server.requests if r.seed == request.seed) == 1
        return faults[request.seed % len(faults)] if first else None

    openai_server.faults = hook
    seeds = list(range(40))
    results = complete_many(make_config(openai_server.base_url, concurrency=8), seeds)
    assert [r.status for r in results] == ["ok"] * 40
    assert [r.text for r in results] == [f"echo seed={s}: hi" for s in seeds]
    assert all(r.retries == 1 for r in results)
    assert openai_server.fault_counts["ok"] == 40
    per_seed = Counter(r.seed for r in openai_server.requests)
    assert set(per_seed.values()) == {2}


def test_fail_first_per_key(openai_server: OpenAIServer) -> None:
    openai_server.faults = fail_first(2, Fault.http_status(500), key=lambda r: r.seed)
    results = complete_many(make_config(openai_server.base_url), [1, 2, 3])
    assert [r.retries for r in results] == [2, 2, 2]
    assert openai_server.fault_counts == {"http_500": 6, "ok": 3}


# -- concurrency and endpoints ----------------------------------------------------------------


def test_concurrency_bound_is_respected(openai_server: OpenAIServer) -> None:
    openai_server.faults = lambda request: Fault.delay(0.05)
    results = complete_many(make_config(openai_server.base_url, concurrency=3), list(range(12)))
    assert all(r.ok for r in results)
    assert openai_server.max_in_flight == 3


def test_concurrency_bound_spans_all_endpoints(openai_server: OpenAIServer) -> None:
    # Two base URLs served by one server: its in-flight counter sees both.
    openai_server.faults = lambda request: Fault.delay(0.05)
    second = openai_server.url + "/second/v1"
    config = make_config(openai_server.base_url, second, concurrency=4)
    results = complete_many(config, list(range(16)))
    assert all(r.ok for r in results)
    assert openai_server.max_in_flight == 4
    endpoints = Counter(r.endpoint for r in results)
    assert min(endpoints[openai_server.base_url], endpoints[second]) >= 4  # least in flight


def test_load_is_shared_between_endpoints(openai_server_factory: Any) -> None:
    a, b = openai_server_factory(), openai_server_factory()
    results = complete_many(make_config(a.base_url, b.base_url, concurrency=4), list(range(20)))
    assert all(r.ok for r in results)
    assert a.path_counts[CHAT] > 0 and b.path_counts[CHAT] > 0
    assert a.path_counts[CHAT] + b.path_counts[CHAT] == 20
    assert {r.endpoint for r in results} == {a.base_url, b.base_url}


def test_refused_endpoint_fails_over(openai_server: OpenAIServer, dead_base_url: str) -> None:
    config = make_config(
        dead_base_url, openai_server.base_url, concurrency=2, backoff_base_s=1.0, backoff_max_s=5.0
    )
    results = complete_many(config, list(range(10)))
    assert all(r.ok for r in results)
    assert {r.endpoint for r in results} == {openai_server.base_url}
    assert openai_server.path_counts[CHAT] == 10
    # Only requests sent before the refusal was seen retried; the endpoint is then avoided.
    assert 1 <= sum(r.retries for r in results) <= 2


def test_retry_goes_to_another_endpoint(openai_server_factory: Any) -> None:
    a = openai_server_factory(faults=lambda request: Fault.http_status(503))
    b = openai_server_factory()
    results = complete_many(make_config(a.base_url, b.base_url, concurrency=1), [1, 2, 3, 4])
    assert all(r.ok and r.endpoint == b.base_url for r in results)
    assert b.path_counts[CHAT] == 4
    assert sum(r.retries for r in results) == a.path_counts[CHAT]


# -- server-side n ------------------------------------------------------------------------------


def test_server_n_sends_one_request(openai_server: OpenAIServer) -> None:
    results = complete_many(make_config(openai_server.base_url, server_n=True), [7, 8, 9, 10])
    assert [r.status for r in results] == ["ok"] * 4
    assert openai_server.path_counts[CHAT] == 1
    body = openai_server.requests[0].json
    assert body["n"] == 4 and body["seed"] == 7
    assert all(r.prompt_tokens == 1 and r.completion_tokens is None for r in results)


def test_server_n_missing_choices_are_infra_errors(openai_server_factory: Any) -> None:
    server = openai_server_factory(honour_n=False)  # like llama.cpp: ignores n
    results = complete_many(make_config(server.base_url, server_n=True), [1, 2, 3])
    assert [r.status for r in results] == ["ok", "infra_error", "infra_error"]
    assert results[1].error is not None
    assert "server returned 1 of 3 choices" in results[1].error
    assert server.path_counts[CHAT] == 1


def test_server_n_matches_choices_by_index(openai_server: OpenAIServer) -> None:
    body = {
        "choices": [
            {"index": 1, "message": {"content": "second"}, "finish_reason": "stop"},
            {"index": 0, "message": {"content": "first"}, "finish_reason": "length"},
        ]
    }
    openai_server.faults = [Fault.raw(body)]
    results = complete_many(make_config(openai_server.base_url, server_n=True), [1, 2])
    assert [(r.text, r.finish_reason) for r in results] == [("first", "length"), ("second", "stop")]


def test_server_n_failure_applies_to_all(openai_server: OpenAIServer) -> None:
    openai_server.faults = lambda request: Fault.http_status(400)
    results = complete_many(make_config(openai_server.base_url, server_n=True), [1, 2])
    assert [r.status for r in results] == ["infra_error", "infra_error"]
    assert openai_server.path_counts[CHAT] == 1


def test_server_n_with_one_seed_is_a_plain_request(openai_server: OpenAIServer) -> None:
    complete_many(make_config(openai_server.base_url, server_n=True), [5])
    assert "n" not in openai_server.requests[0].json


# -- cancellation -------------------------------------------------------------------------------


def test_cancelled_request_frees_its_slot(openai_server: OpenAIServer) -> None:
    openai_server.faults = [Fault.delay(2.0)]

    async def go() -> Completion:
        async with Client(make_config(openai_server.base_url, concurrency=1)) as client:
            task = asyncio.create_task(client.complete("hi", SamplingParams(), seed=1))
            while openai_server.completion_requests == 0:
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await client.complete("hi", SamplingParams(), seed=2)

    done = asyncio.run(go())
    assert done.ok and done.retries == 0
