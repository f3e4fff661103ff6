"""Every fault kind of the test server ends as what it is: an infra error or a timeout after
the right number of attempts, never as an answer; a lone surrogate is the model's answer."""

from __future__ import annotations

import asyncio

import pytest

from rolleval.client import Client, EndpointConfig, SamplingParams
from rolleval.testing import OpenAIServer

from .conftest import FAULT_KINDS, record_figure

MAX_RETRIES = 2


def _complete(base_url: str, model: str, *, timeout_s: float = 0.5):
    config = EndpointConfig(
        base_urls=(base_url,),
        model=model,
        timeout_s=timeout_s,
        max_retries=MAX_RETRIES,
        backoff_base_s=0.0,
        backoff_max_s=0.0,
    )

    async def go():
        async with Client(config) as client:
            return await client.complete("What is 1+2?", SamplingParams(), seed=5)

    return asyncio.run(go())


@pytest.mark.parametrize("name", sorted(FAULT_KINDS))
def test_fault_kind_is_classified(name: str) -> None:
    fault, status, retried = FAULT_KINDS[name]
    with OpenAIServer(faults=lambda request: fault) as server:
        done = _complete(server.base_url, server.model)
        requests = server.completion_requests
    attempts = MAX_RETRIES + 1 if retried else 1
    assert done.status == status, done.error
    assert done.retries == attempts - 1
    assert requests == attempts
    if status == "ok":
        # a null content is kept as no text (the rollout completed without an answer)
        assert done.error is None and (done.text is None) == (name == "no_content")
    else:
        assert done.text is None and done.error
    record_figure(
        "fault_kinds",
        name,
        {"status": status, "attempts": f"{requests}/{MAX_RETRIES + 1}", "error": done.error},
    )


def test_connection_refused_is_infra_error(dead_base_url: str) -> None:
    done = _complete(dead_base_url, "m")
    assert done.status == "infra_error" and done.retries == MAX_RETRIES
    assert done.error.startswith("connection error")
    record_figure(
        "fault_kinds",
        "connection_refused",
        {"status": "infra_error", "attempts": f"{done.retries + 1}/3", "error": done.error},
    )


def test_lone_surrogate_is_the_models_answer_sent_once() -> None:
    fault = FAULT_KINDS["lone_surrogate"][0]
    with OpenAIServer(faults=lambda request: fault) as server:
        done = _complete(server.base_url, server.model)
        assert server.completion_requests == 1
    assert done.status == "ok" and done.retries == 0
    assert done.text.endswith("\ufffd") and "\ud800" not in done.text
    assert done.text.startswith("echo seed=5: What is 1+2?")
