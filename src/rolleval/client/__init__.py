"""Async client for OpenAI-compatible endpoints: one request per rollout, bounded
concurrency, retries with backoff, failover across endpoints.

::

    config = EndpointConfig(base_urls=("http://127.0.0.1:8000/v1",), model="qwen3-8b")
    async with Client(config) as client:
        done = await client.complete(messages, SamplingParams(temperature=0.6), seed=7)
"""

from .._public import publish
from ._client import Client, complete_sync
from ._completion import Completion
from ._config import EndpointConfig, SamplingParams

__all__ = [
    "Client",
    "Completion",
    "EndpointConfig",
    "SamplingParams",
    "complete_sync",
]

publish(__name__, globals(), __all__)
