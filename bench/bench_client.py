"""Client overhead: ``rolleval.client.Client.complete`` against a bare ``httpx.AsyncClient`` loop.

Starts the test server (instant answers) in a separate process, so its CPU is not shared
with the client's event loop, then runs N requests at concurrency C alternately with
(a) a bare httpx loop doing the minimum (encode the same JSON body with orjson, POST,
check the status, decode, pick the text) and (b) ``Client.complete``: a b a b ..., so
every run follows one of the other side (against this server a client's second run in a
row is up to twice as fast as its first, whichever client it is). Both use one warmed-up
``AsyncClient`` with the same connection limits and an ``asyncio.Semaphore``. The ratio is
the median of the same-round ratios (the best-of-each ratio let one fast round of either
side decide); also printed: the best run of each, the client's CPU time per request, and
the same loops over an in-memory transport (pure client-side cost, free of
socket and scheduling noise: on a busy machine the wall-clock numbers swing by 2x, and
httpcore's pool polls every idle connection on each request, so the cost per request also
varies with how many of the C connections happen to sit idle)::

    python bench/bench_client.py [--requests 3000] [--concurrency 32] [--rounds 5] [--check]

``--check`` exits 1 when the median ratio is below the target (0.90).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

import httpx
import orjson

from rolleval.client import Client, EndpointConfig, SamplingParams

MODEL = "rolleval-test"
TARGET = 0.90
SAMPLING = SamplingParams(temperature=0.6, top_p=0.95, max_tokens=256)


def prompt(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": f"Problem {i}: what is {i} + {i}?"},
    ]


async def bare_run(
    http: httpx.AsyncClient, url: str, n: int, concurrency: int
) -> tuple[float, float]:
    """(requests per second, client CPU seconds per request)."""
    sem = asyncio.Semaphore(concurrency)
    fields = SAMPLING.body_fields()

    async def one(i: int) -> str:
        async with sem:
            body = {"model": MODEL, "messages": prompt(i), **fields, "seed": i}
            response = await http.post(url, content=orjson.dumps(body))
            response.raise_for_status()
            return orjson.loads(response.content)["choices"][0]["message"]["content"]

    start, cpu = time.perf_counter(), time.process_time()
    texts = await asyncio.gather(*(one(i) for i in range(n)))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert len(texts) == n
    return n / elapsed, cpu / n


async def rolleval_run(client: Client, n: int) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    done = await asyncio.gather(*(client.complete(prompt(i), SAMPLING, seed=i) for i in range(n)))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    failed = [d for d in done if not d.ok]
    if failed:
        raise SystemExit(f"{len(failed)} rollouts failed, first: {failed[0].error}")
    return n / elapsed, cpu / n


Runs = list[tuple[float, float]]


async def bench(base_url: str, args: argparse.Namespace) -> tuple[Runs, Runs]:
    c = args.concurrency
    limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
    headers = {"content-type": "application/json", "accept": "application/json"}
    config = EndpointConfig(base_urls=(base_url,), model=MODEL, concurrency=c)
    bare: Runs = []
    ours: Runs = []
    async with (
        httpx.AsyncClient(limits=limits, headers=headers, timeout=120) as http,
        Client(config) as client,
    ):
        url = base_url + "/chat/completions"
        await bare_run(http, url, args.warmup, c)
        await rolleval_run(client, args.warmup)
        for r in range(args.rounds):
            # a b a b ...: every run follows one of the other side (a client's second run in
            # a row is up to twice as fast against this server, whichever client it is)
            bare.append(await bare_run(http, url, args.requests, c))
            ours.append(await rolleval_run(client, args.requests))
            print(
                f"  round {r + 1}: bare httpx {bare[-1][0]:.0f} req/s "
                f"({bare[-1][1] * 1e6:.0f} us CPU/req), rolleval {ours[-1][0]:.0f} req/s "
                f"({ours[-1][1] * 1e6:.0f} us CPU/req)",
                flush=True,
            )
    return bare, ours


async def in_memory(args: argparse.Namespace) -> tuple[Runs, Runs]:
    """The same loops over an in-memory transport: client-side Python cost only."""
    answer = orjson.dumps(
        {
            "model": MODEL,
            "choices": [{"index": 0, "message": {"content": "4"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1},
        }
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=answer, headers={"content-type": "application/json"})

    c = args.concurrency
    base_url = "http://bench.invalid/v1"
    config = EndpointConfig(base_urls=(base_url,), model=MODEL, concurrency=c)
    headers = {"content-type": "application/json", "accept": "application/json"}
    bare: Runs = []
    ours: Runs = []
    async with (
        httpx.AsyncClient(transport=httpx.MockTransport(handler), headers=headers) as http,
        Client(config, transport=httpx.MockTransport(handler)) as client,
    ):
        for _ in range(max(3, args.rounds)):
            bare.append(await bare_run(http, base_url + "/chat/completions", args.requests, c))
            ours.append(await rolleval_run(client, args.requests))
    return bare, ours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5, help="a/b pairs (default 5)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--check", action="store_true", help=f"exit 1 below {TARGET:.2f}")
    args = parser.parse_args(argv)

    server = subprocess.Popen(
        [sys.executable, "-m", "rolleval.testing.server", "--port", "0", "--model", MODEL],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"test server did not start: {line!r}")
        base_url = line.split()[-1]
        print(
            f"server {base_url} (separate process); {args.requests} requests at concurrency "
            f"{args.concurrency}, {args.rounds} rounds (a b a b ...)",
            flush=True,
        )
        bare, ours = asyncio.run(bench(base_url, args))
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    mem_bare, mem_ours = asyncio.run(in_memory(args))
    cpu_mem_bare, cpu_mem_ours = min(c for _, c in mem_bare), min(c for _, c in mem_ours)
    print(
        f"in-memory transport (client-side cost only): rolleval {cpu_mem_ours * 1e6:.0f} us/req "
        f"vs bare httpx {cpu_mem_bare * 1e6:.0f} us/req -> {(cpu_mem_ours - cpu_mem_bare) * 1e6:+.0f} us"
    )
    ratios = [o / b for (b, _), (o, _) in zip(bare, ours, strict=True)]
    print(
        "per-round ratios (rolleval / bare, same round): " + ", ".join(f"{r:.2f}" for r in ratios)
    )
    best_bare, best_ours = max(r for r, _ in bare), max(r for r, _ in ours)
    ratio = statistics.median(ratios)
    cpu_bare, cpu_ours = min(c for _, c in bare), min(c for _, c in ours)
    print(
        f"client CPU per request (best): rolleval {cpu_ours * 1e6:.0f} us vs bare httpx "
        f"{cpu_bare * 1e6:.0f} us -> overhead {(cpu_ours - cpu_bare) * 1e6:+.0f} us"
    )
    print(
        f"client: median of the same-round ratios {ratio:.2f} (target >= {TARGET:.2f}); "
        f"best rounds: rolleval {best_ours:.0f} req/s vs bare httpx {best_bare:.0f} req/s "
        f"-> {best_ours / best_bare:.2f}"
    )
    return 1 if args.check and ratio < TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
