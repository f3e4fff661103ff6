"""Run the OpenAI-compatible test server in the foreground.

::

    python -m rolleval.testing.server --port 8000 [--delay 0.5] [--fail-every 10]

Prints ``listening on http://HOST:PORT/v1`` once bound (``--port 0`` picks a free port),
then serves until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

from ._faults import Fault, ServerRequest
from ._server import OpenAIServer, Responder, echo_responder

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rolleval.testing.server",
        description="OpenAI-compatible test server with instant, deterministic answers.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--model", default="rolleval-test")
    parser.add_argument("--api-key", default=None, help="require this Bearer key")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument(
        "--fail-every",
        type=int,
        default=0,
        metavar="K",
        help="answer every K-th request with --fail-status",
    )
    parser.add_argument("--fail-status", type=int, default=503)
    parser.add_argument(
        "--thought-words",
        type=int,
        default=0,
        metavar="N",
        help="answer as a reasoning model: a thought of N words in message.reasoning "
        "(and N reasoning tokens in usage) beside the usual answer",
    )
    args = parser.parse_args(argv)

    answer = Fault.delay(args.delay) if args.delay > 0 else None
    failure = Fault.http_status(args.fail_status, delay_s=args.delay)

    def faults(request: ServerRequest) -> Fault | None:
        if args.fail_every > 0 and (request.index + 1) % args.fail_every == 0:
            return failure
        return answer

    server = OpenAIServer(
        model=args.model,
        api_key=args.api_key,
        faults=faults,
        host=args.host,
        port=args.port,
        responder=_thinker(args.thought_words) if args.thought_words > 0 else None,
    )

    def ready() -> None:
        print(f"listening on {server.base_url}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve(ready=ready))
    return 0


def _thinker(words: int) -> Responder:
    """The echo answer plus a thought of ``words`` words (one string, built once)."""
    thought = " ".join(["think"] * words)
    usage = {"completion_tokens_details": {"reasoning_tokens": words}}

    def responder(request: dict[str, Any]) -> dict[str, Any]:
        text, finish = echo_responder(request)
        return {"text": text, "finish_reason": finish, "reasoning": thought, "usage": usage}

    return responder


if __name__ == "__main__":
    sys.exit(main())
