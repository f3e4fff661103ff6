"""Shared pytest fixtures. Add new ones below with a docstring saying what they give."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rolleval.testing import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fresh OpenAI-compatible server on 127.0.0.1 (echo answers, no faults).

    Reassign ``faults`` or ``responder`` inside the test to script it; read
    ``path_counts``, ``fault_counts``, ``max_in_flight`` and ``requests`` to assert.
    """
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server_factory() -> Iterator[Callable[..., OpenAIServer]]:
    """``make(**kwargs)`` starts an :class:`OpenAIServer` with those options; all are
    stopped at teardown."""
    servers: list[OpenAIServer] = []

    def make(**kwargs: Any) -> OpenAIServer:
        server = OpenAIServer(**kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def dead_base_url() -> Iterator[str]:
    """A ``http://127.0.0.1:PORT/v1`` URL where connections are refused (the port is held
    by a bound, non-listening socket for the test's duration)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
