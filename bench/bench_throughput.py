"""Benchmark: requests per second of `rolleval run` against lm-eval's local-chat-completions model.

One real llama.cpp server of the embedded model (SmolLM2-135M-Instruct Q4_1, started as
rolleval starts it: ``rolleval._local._launcher.LocalServer``) serves both sides in one session, at the
same concurrency, the same 2,000 short chat requests: 250 problems of the
``common_knowledge`` task x 8 rollouts, max_tokens 16, temperature 0.7, top_p 1, stop "\\n".

* rolleval: ``rolleval.run_eval`` end to end (requests, grading, records on disk, report)
  with ``endpoints=[server]``, ``concurrency=C``.
* lm-eval: the same prompts (dumped from rolleval's task loader) as lm-eval's evaluator would
  send them through ``LocalChatCompletion.generate_until`` (``--model
  local-chat-completions``, ``num_concurrent=C``), in the peer venv (``bash
  bench/peers/setup.sh``); generation only, nothing graded or stored.

Each round runs both sides; the second round swaps the order. A short warm-up goes first.
The score is the best requests/s of each side. Target: rolleval / lm-eval >= 1.0.

    python bench/bench_throughput.py [--problems 250 --rollouts 8 --concurrency 4 --rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import SETUP_HINT, run_driver, venv_python

TARGET = 1.0


def load_requests(task: str, problems: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(problems as [{problem_id, messages}], sampling) from rolleval's own task loader."""
    from rolleval.tasks import get_task

    spec = get_task(task)
    out = []
    for p in spec.load(limit=problems):
        messages = (
            [{"role": "user", "content": p.prompt}]
            if isinstance(p.prompt, str)
            else [dict(m) for m in p.prompt]
        )
        out.append({"problem_id": p.problem_id, "messages": messages})
    return out, dict(spec.sampling)


def warm_up(base_url: str, model: str, problems: list[dict[str, Any]], n: int = 8) -> None:
    with httpx.Client(timeout=120) as http:
        for p in problems[:n]:
            body = {"model": model, "messages": p["messages"], "max_tokens": 16}
            http.post(f"{base_url}/chat/completions", json=body).raise_for_status()


def run_rolleval(
    base_url: str, model: str, task: str, args: argparse.Namespace, sampling: dict[str, Any]
) -> dict[str, Any]:
    from rolleval import run_eval
    from rolleval._runner._config import RunConfig

    config = RunConfig(
        model=model,
        tasks=[task],
        limit=args.problems,
        n_rollouts=args.rollouts,
        endpoints=[base_url],
        concurrency=args.concurrency,
        sampling=sampling,
    )
    with tempfile.TemporaryDirectory() as tmp:
        cpu = _cpu_seconds()
        start = time.perf_counter()
        outcome = run_eval(config, Path(tmp) / "run", progress=False)
        seconds = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu
        rollouts = Path(tmp) / "run" / "tasks" / task / "rollouts.jsonl"
        texts: dict[str, set[str]] = {}
        chars, ok = 0, 0
        with open(rollouts, "rb") as fh:
            for line in fh:
                rec = orjson.loads(line)
                if rec.get("status") == "ok":
                    ok += 1
                    chars += len(rec.get("text") or "")
                    texts.setdefault(rec["problem_id"], set()).add(rec.get("text") or "")
    pass1 = outcome.report["tasks"][task]["metrics"]["pass@1"]["value"]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "requests": outcome.requested,
        "completed": outcome.completed,
        "failed": outcome.failed,
        "mean_chars": chars / max(ok, 1),
        "distinct_per_problem": sum(len(s) for s in texts.values()) / max(len(texts), 1),
        "pass@1": pass1,
    }


def _cpu_seconds() -> float:
    """CPU seconds of this process plus its reaped children (rolleval's grading workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_TOTAL = re.compile(rb"total time =\s+([\d.]+) ms")
_DECODE = re.compile(rb"\beval time =\s+[\d.]+ ms /\s+(\d+) runs")


def server_work(log: Path, start: int, end: int) -> dict[str, float] | None:
    """Busy seconds and decode steps of the server between two log offsets.

    Read from llama.cpp's per-request timing lines (``llama_perf_context_print``) in the
    server log; None when the log has none (another llama-cpp-python version, quiet mode).
    """
    with open(log, "rb") as fh:
        fh.seek(start)
        text = fh.read(end - start)
    totals = [float(x) for x in _TOTAL.findall(text)]
    if not totals:
        return None
    return {
        "busy_s": sum(totals) / 1000,
        "requests": len(totals),
        "decode_steps": sum(int(x) for x in _DECODE.findall(text)),
    }


def run_lm_eval(
    base_url: str, model: str, requests_path: str, concurrency: int, timeout: float
) -> dict[str, Any]:
    return run_driver(
        "lm_eval_generate.py",
        requests_path,
        "--base-url",
        f"{base_url}/chat/completions",
        "--model",
        model,
        "--concurrency",
        str(concurrency),
        timeout=timeout,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="common_knowledge")
    parser.add_argument("--problems", type=int, default=250)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="round 2, 4... swap the order")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()

    from rolleval._local._launcher import LOCAL_MODEL_NAME, LocalServer

    problems, task_sampling = load_requests(args.task, args.problems)
    sampling = {
        "temperature": task_sampling.get("temperature", 0.7),
        "top_p": task_sampling.get("top_p", 1.0),
        "max_tokens": task_sampling.get("max_tokens", 16),
        "stop": list(task_sampling.get("stop") or ["\n"]),
    }
    n_requests = len(problems) * args.rollouts
    have_peer = venv_python() is not None
    if not have_peer:
        print(f"lm-eval: skipped (no peer venv; run: {SETUP_HINT})")
    print(
        f"workload: {len(problems)} problems of {args.task} x {args.rollouts} rollouts = "
        f"{n_requests:,} chat requests, sampling {sampling}, concurrency {args.concurrency}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    results: dict[str, list[dict[str, Any]]] = {"rolleval": [], "lm-eval": []}
    with tempfile.TemporaryDirectory() as tmp, LocalServer(log_path=Path(tmp) / "log") as srv:
        log = Path(tmp) / "log"
        requests_path = str(Path(tmp) / "requests.json")
        with open(requests_path, "w", encoding="utf-8") as fh:
            json.dump({"sampling": sampling, "rollouts": args.rollouts, "problems": problems}, fh)
        print(f"server: {srv.base_url} serving {LOCAL_MODEL_NAME}")
        warm_up(srv.base_url, LOCAL_MODEL_NAME, problems)
        timeout = max(600.0, n_requests * 2.0)
        for rnd in range(args.rounds):
            order = ["rolleval", "lm-eval"] if rnd % 2 == 0 else ["lm-eval", "rolleval"]
            for side in order:
                if side == "lm-eval" and not have_peer:
                    continue
                log_start = log.stat().st_size
                if side == "rolleval":
                    res = run_rolleval(srv.base_url, LOCAL_MODEL_NAME, args.task, args, sampling)
                    extra = f", pass@1 {res['pass@1']:.3f}, {res['failed']} failed"
                else:
                    res = run_lm_eval(
                        srv.base_url, LOCAL_MODEL_NAME, requests_path, args.concurrency, timeout
                    )
                    extra = f", {res['empty']} empty"
                res["rps"] = res["requests"] / res["seconds"]
                results[side].append(res)
                work = server_work(log, log_start, log.stat().st_size)
                res["busy"] = None if work is None else work["busy_s"] / res["seconds"]
                if work is None:
                    extra += "; server timing not in its log"
                else:
                    extra += (
                        f"; server busy {work['busy_s']:.1f} s = "
                        f"{100 * work['busy_s'] / res['seconds']:.0f}% of the wall time, "
                        f"{work['decode_steps']:,} decode steps"
                    )
                print(
                    f"round {rnd + 1} {side}: {res['requests']:,} requests in "
                    f"{res['seconds']:.1f} s = {res['rps']:.2f} req/s, client CPU "
                    f"{res['cpu_seconds']:.1f} s (mean output "
                    f"{res['mean_chars']:.1f} chars, {res['distinct_per_problem']:.1f} distinct "
                    f"outputs per problem{extra}; load average {os.getloadavg()[0]:.2f})",
                    flush=True,
                )

    ours = max(r["rps"] for r in results["rolleval"])
    if not results["lm-eval"]:
        print(f"throughput: rolleval {ours:.2f} req/s (lm-eval not measured)")
        return 0
    theirs = max(r["rps"] for r in results["lm-eval"])
    ratio = ours / theirs
    met = ratio >= TARGET
    busy = {
        side: [r["busy"] for r in runs if r.get("busy") is not None]
        for side, runs in results.items()
    }
    if busy["rolleval"] and busy["lm-eval"]:
        print(
            "(context) how busy each client kept the server (server busy time / wall time, "
            "independent of how long the sampled answers were): rolleval "
            f"{', '.join(f'{100 * b:.0f}%' for b in busy['rolleval'])} vs lm-eval "
            f"{', '.join(f'{100 * b:.0f}%' for b in busy['lm-eval'])}"
        )
    print(
        f"throughput: rolleval {ours:.2f} req/s vs lm-eval local-chat-completions "
        f"{theirs:.2f} req/s -> {ratio:.2f} (target >= {TARGET:g}) {'met' if met else 'MISSED'} "
        f"[best of {len(results['rolleval'])} rounds each; rolleval end to end incl. grading "
        "and records, lm-eval generation only; lm-eval sends one fixed seed for every request]"
    )
    return 1 if args.strict and not met else 0


if __name__ == "__main__":
    sys.exit(main())
