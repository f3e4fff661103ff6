"""Test helpers: a real OpenAI-compatible HTTP server with scriptable faults.

::

    with OpenAIServer(faults=[Fault.http_status(503), None]) as srv:
        config = EndpointConfig(base_urls=(srv.base_url,), model=srv.model)
        ...
        assert srv.fault_counts["http_503"] == 1

Run it by hand with ``python -m rolleval.testing.server --port 8000``.
"""

from .._public import publish
from ._faults import Fault, ServerRequest, fail_first
from ._server import OpenAIServer, Responder, echo_logprobs, echo_responder, toy_logprob

__all__ = [
    "Fault",
    "OpenAIServer",
    "Responder",
    "ServerRequest",
    "echo_logprobs",
    "echo_responder",
    "fail_first",
    "toy_logprob",
]

publish(__name__, globals(), __all__)
