"""rolleval.client against the real local test server: ok paths, request bodies, auth,
configuration checks, provenance and the public surface. Faults: test_client_faults.py."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

import rolleval.client
from conftest import complete, make_config
from rolleval.client import Client, Completion, EndpointConfig, SamplingParams, complete_sync
from rolleval.errors import UsageError
from rolleval.records import Message, RolloutRecord
from rolleval.testing import OpenAIServer

MODEL = "rolleval-test"


# -- ok paths ------------------------------------------------------------------------------


def test_chat_ok(openai_server: OpenAIServer) -> None:
    done = complete(make_config(openai_server.base_url))
    assert done.status == "ok" and done.ok
    assert done.text == "echo seed=7: What is 2+2?"
    assert done.finish_reason == "stop"
    assert (done.prompt_tokens, done.completion_tokens) == (3, 5)
    assert done.error is None and done.retries == 0
    assert done.model == MODEL
    assert done.system_fingerprint == "fp_rolleval_test"
    assert done.endpoint == openai_server.base_url
    assert done.latency_s > 0
    assert openai_server.path_counts == {"/v1/chat/completions": 1}


def test_completions_ok(openai_server: OpenAIServer) -> None:
    done = complete(make_config(openai_server.base_url, api="completions"), "Q: 1+1?\nA:")
    assert done.status == "ok"
    assert done.text == "echo seed=7: Q: 1+1?\nA:"
    assert openai_server.path_counts == {"/v1/completions": 1}
    assert openai_server.requests[0].json["prompt"] == "Q: 1+1?\nA:"
    assert "messages" not in openai_server.requests[0].json


def test_finish_reason_passed_through(openai_server: OpenAIServer) -> None:
    done = complete(make_config(openai_server.base_url), sampling=SamplingParams(max_tokens=2))
    assert done.status == "ok"
    assert done.text == "echo seed=7:"
    assert done.finish_reason == "length"


def test_missing_usage_fingerprint_and_model_are_none(openai_server: OpenAIServer) -> None:
    from rolleval.testing import Fault

    openai_server.faults = [Fault.raw({"choices": [{"message": {"content": "42"}}]})]
    done = complete(make_config(openai_server.base_url))
    assert done.status == "ok" and done.text == "42"
    assert done.finish_reason is None
    assert done.prompt_tokens is None and done.completion_tokens is None
    assert done.model is None and done.system_fingerprint is None


def test_empty_text_is_ok(openai_server: OpenAIServer) -> None:
    openai_server.responder = lambda request: ("", "stop")
    done = complete(make_config(openai_server.base_url))
    assert done.status == "ok" and done.text == ""


# -- what is sent ----------------------------------------------------------------------------


def test_body_carries_model_messages_seed_and_sampling(openai_server: OpenAIServer) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Name a prime."},
    ]
    sampling = SamplingParams(
        temperature=0.6,
        top_p=0.95,
        max_tokens=64,
        stop=("</answer>", "\n\n"),
        extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
    )
    done = complete(make_config(openai_server.base_url), messages, sampling, seed=1234)
    assert done.status == "ok"
    assert openai_server.requests[0].json == {
        "model": MODEL,
        "messages": messages,
        "temperature": 0.6,
        "top_p": 0.95,
        "max_tokens": 64,
        "stop": ["</answer>", "\n\n"],
        "top_k": 20,
        "chat_template_kwargs": {"enable_thinking": False},
        "seed": 1234,
    }


def test_none_params_and_seed_are_omitted(openai_server: OpenAIServer) -> None:
    complete(make_config(openai_server.base_url), seed=None)
    body = openai_server.requests[0].json
    assert body == {"model": MODEL, "messages": [{"role": "user", "content": "What is 2+2?"}]}


def test_extra_body_overrides_sampling_fields(openai_server: OpenAIServer) -> None:
    complete(
        make_config(openai_server.base_url),
        sampling=SamplingParams(temperature=0.5, extra_body={"temperature": 1.0}),
    )
    assert openai_server.requests[0].json["temperature"] == 1.0


def test_pydantic_messages_are_accepted(openai_server: OpenAIServer) -> None:
    done = complete(make_config(openai_server.base_url), [Message(role="user", content="hi")])
    assert done.text == "echo seed=7: hi"
    assert openai_server.requests[0].json["messages"] == [{"role": "user", "content": "hi"}]


def test_complete_n_keeps_seed_order(openai_server: OpenAIServer) -> None:
    async def go() -> list[Completion]:
        async with Client(make_config(openai_server.base_url)) as client:
            return await client.complete_n("hi", SamplingParams(), seeds=[5, 3, 9])

    results = asyncio.run(go())
    assert [r.text for r in results] == ["echo seed=5: hi", "echo seed=3: hi", "echo seed=9: hi"]
    assert sorted(r.json["seed"] for r in openai_server.requests) == [3, 5, 9]
    assert all("n" not in r.json for r in openai_server.requests)


def test_complete_n_without_seeds_sends_nothing(openai_server: OpenAIServer) -> None:
    async def go() -> list[Completion]:
        async with Client(make_config(openai_server.base_url)) as client:
            return await client.complete_n("hi", SamplingParams(), seeds=[])

    assert asyncio.run(go()) == []
    assert openai_server.completion_requests == 0


# -- API key ----------------------------------------------------------------------------------

SECRET = "sk-test-0123456789abcdef"


def test_api_key_from_env_sent_as_bearer(
    openai_server_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = openai_server_factory(api_key=SECRET)
    monkeypatch.setenv("ROLLEVAL_TEST_KEY", SECRET)
    config = make_config(server.base_url, api_key_env="ROLLEVAL_TEST_KEY")
    done = complete(config)
    assert done.status == "ok"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    for text in (repr(config), str(config), repr(Client(config)), repr(done)):
        assert SECRET not in text
    assert "ROLLEVAL_TEST_KEY" in repr(config)


def test_api_key_read_at_request_time(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROLLEVAL_TEST_KEY", "first-key")

    async def go() -> None:
        async with Client(
            make_config(openai_server.base_url, api_key_env="ROLLEVAL_TEST_KEY")
        ) as c:
            await c.complete("a", SamplingParams(), seed=1)
            monkeypatch.setenv("ROLLEVAL_TEST_KEY", "second-key")
            await c.complete("b", SamplingParams(), seed=2)

    asyncio.run(go())
    sent = [r.headers["authorization"] for r in openai_server.requests]
    assert sent == ["Bearer first-key", "Bearer second-key"]


def test_no_authorization_header_without_api_key_env(openai_server: OpenAIServer) -> None:
    complete(make_config(openai_server.base_url))
    assert "authorization" not in openai_server.requests[0].headers


def test_missing_api_key_env_is_a_usage_error(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROLLEVAL_TEST_KEY", raising=False)
    with pytest.raises(UsageError, match="ROLLEVAL_TEST_KEY"):
        complete(make_config(openai_server.base_url, api_key_env="ROLLEVAL_TEST_KEY"))
    assert openai_server.completion_requests == 0


def test_wrong_key_is_not_retried_and_not_leaked(
    openai_server_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = openai_server_factory(api_key="the-right-key")
    monkeypatch.setenv("ROLLEVAL_TEST_KEY", SECRET)
    done = complete(make_config(server.base_url, api_key_env="ROLLEVAL_TEST_KEY"))
    assert done.status == "infra_error" and done.retries == 0
    assert done.error is not None and done.error.startswith("HTTP 401")
    assert SECRET not in done.error
    assert server.completion_requests == 1


def test_key_echoed_by_server_is_redacted(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rolleval.testing import Fault

    monkeypatch.setenv("ROLLEVAL_TEST_KEY", SECRET)
    openai_server.faults = [Fault.http_status(400, message=f"bad header Bearer {SECRET}")]
    done = complete(make_config(openai_server.base_url, api_key_env="ROLLEVAL_TEST_KEY"))
    assert done.error is not None
    assert SECRET not in done.error and "Bearer ***" in done.error


# -- provenance -------------------------------------------------------------------------------


def test_models_lists_each_endpoint(openai_server: OpenAIServer, dead_base_url: str) -> None:
    async def go() -> list[dict[str, Any]]:
        async with Client(make_config(openai_server.base_url, dead_base_url)) as client:
            return await client.models()

    up, down = asyncio.run(go())
    assert up["endpoint"] == openai_server.base_url
    assert [m["id"] for m in up["models"]] == [MODEL]
    assert down["endpoint"] == dead_base_url
    assert down["error"].startswith("connection error")
    assert openai_server.path_counts == {"/v1/models": 1}


# -- records ------------------------------------------------------------------------------------


def test_to_record_round_trips_fields(openai_server: OpenAIServer) -> None:
    done = complete(make_config(openai_server.base_url), seed=11)
    record = done.to_record("p1", 3, seed=11)
    assert isinstance(record, RolloutRecord)
    assert (record.problem_id, record.index, record.seed, record.attempt) == ("p1", 3, 11, 1)
    assert record.status == "ok" and record.text == done.text
    assert record.usage is not None and record.usage.completion_tokens == done.completion_tokens
    assert record.endpoint == openai_server.base_url
    assert record.model == MODEL and record.system_fingerprint == "fp_rolleval_test"


def test_to_record_of_a_failure(dead_base_url: str) -> None:
    done = complete(make_config(dead_base_url, max_retries=0))
    record = done.to_record("p1", 0, seed=7, attempt=2)
    assert record.status == "infra_error" and record.text is None and record.usage is None
    assert record.error == done.error and record.attempt == 2


# -- sync helper ------------------------------------------------------------------------------


def test_complete_sync(openai_server: OpenAIServer) -> None:
    done = complete_sync(make_config(openai_server.base_url), "hi", SamplingParams(), seed=2)
    assert done.text == "echo seed=2: hi"


def test_complete_sync_refuses_a_running_loop(openai_server: OpenAIServer) -> None:
    async def go() -> None:
        complete_sync(make_config(openai_server.base_url), "hi", SamplingParams(), seed=2)

    with pytest.raises(UsageError, match="running event loop"):
        asyncio.run(go())


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_urls": ()}, "at least one URL"),
        ({"base_urls": ("127.0.0.1:8000/v1",)}, "not an http"),
        ({"base_urls": ("http://a/v1", "http://a/v1/")}, "duplicate"),
        ({"model": ""}, "model"),
        ({"api": "responses"}, "api must be"),
        ({"api_key_env": ""}, "api_key_env"),
        ({"timeout_s": 0}, "timeout_s must be > 0"),
        ({"timeout_s": float("nan")}, "timeout_s must be a finite number"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"concurrency": 0}, "concurrency"),
        ({"backoff_base_s": -1}, "backoff_base_s"),
        ({"backoff_max_s": -1}, "backoff_max_s"),
        ({"server_n": 1}, "server_n"),
    ],
)
def test_endpoint_config_validation(kwargs: dict[str, Any], match: str) -> None:
    base = {"base_urls": ("http://127.0.0.1:8000/v1",), "model": "m"}
    with pytest.raises(UsageError, match=match):
        EndpointConfig(**{**base, **kwargs})


def test_endpoint_config_normalises_urls() -> None:
    config = EndpointConfig(base_urls="http://127.0.0.1:8000/v1/", model="m")  # type: ignore[arg-type]
    assert config.base_urls == ("http://127.0.0.1:8000/v1",)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": ("",)}, "stop"),
        ({"extra_body": {"seed": 1}}, "extra_body may not set seed"),
        ({"extra_body": {"n": 2, "model": "x"}}, "extra_body may not set model, n"),
        ({"extra_body": {"x": object()}}, "not JSON-serialisable"),
        ({"extra_body": [("top_k", 1)]}, "extra_body must be a mapping"),
    ],
)
def test_sampling_params_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        SamplingParams(**kwargs)


def test_sampling_params_are_frozen_and_hashable() -> None:
    extra = {"top_k": 20}
    params = SamplingParams(stop="###", extra_body=extra)  # type: ignore[arg-type]
    extra["top_k"] = 1
    assert params.stop == ("###",)
    assert params.extra_body == {"top_k": 20}
    assert hash(params) == hash(SamplingParams(stop=("###",), extra_body={"top_k": 5}))
    assert params == SamplingParams(stop=("###",), extra_body={"top_k": 20})


@pytest.mark.parametrize(
    ("api", "prompt", "seed", "match"),
    [
        ("completions", [{"role": "user", "content": "x"}], 1, "string prompt"),
        ("chat", [], 1, "non-empty list"),
        ("chat", [("user", "x")], 1, "must be a mapping"),
        ("chat", "x", "1", "seed must be an integer"),
        ("chat", "x", True, "seed must be an integer"),
    ],
)
def test_bad_calls_raise_usage_error_before_sending(
    openai_server: OpenAIServer, api: str, prompt: Any, seed: Any, match: str
) -> None:
    with pytest.raises(UsageError, match=match):
        complete(make_config(openai_server.base_url, api=api), prompt, seed=seed)
    assert openai_server.completion_requests == 0


def test_client_rejects_a_non_config() -> None:
    with pytest.raises(UsageError, match="EndpointConfig"):
        Client({"base_urls": ("http://x/v1",)})  # type: ignore[arg-type]


# -- public surface ---------------------------------------------------------------------------


def test_exported_names() -> None:
    assert rolleval.client.__all__ == sorted(rolleval.client.__all__)
    assert set(rolleval.client.__all__) == {
        "Client",
        "Completion",
        "EndpointConfig",
        "SamplingParams",
        "complete_sync",
    }
    for name in rolleval.client.__all__:
        assert getattr(rolleval.client, name).__module__ == "rolleval.client"


def test_testing_exported_names() -> None:
    import rolleval.testing

    assert rolleval.testing.__all__ == sorted(rolleval.testing.__all__)
    for name in rolleval.testing.__all__:
        assert hasattr(rolleval.testing, name)


def test_transport_seam_for_callers_tests() -> None:
    # Callers can test code built on Client without a server: any httpx transport works,
    # and what it raises is translated like a network error (retried, then infra_error).
    calls: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.content)
        if len(calls) == 1:
            raise httpx.ReadError("reset by peer", request=request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "from seam"}}]})

    config = make_config("http://model.invalid/v1")

    async def go() -> Completion:
        async with Client(config, transport=httpx.MockTransport(handler)) as client:
            return await client.complete("hi", SamplingParams(), seed=1)

    done = asyncio.run(go())
    assert (done.status, done.text, done.retries) == ("ok", "from seam", 1)
    assert len(calls) == 2
