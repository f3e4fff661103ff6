"""Scale: ``rolleval.run_eval`` end to end against a bare ``httpx.AsyncClient`` loop, and its memory.

Targets (issue 12, "Scale"): rolleval's end-to-end rollouts/s (requests, records on disk,
grading, profile and report all included) at least 0.8x the requests/s of a bare httpx loop
against the same instant server in the same run; and the runner's peak RSS under 500 MB
for a 1,000,000-rollout run.

One instant test server (``python -m rolleval.testing.server``) runs in its own process for
the whole bench, so it never shares the client's GIL; both sides talk to it. Each side runs
in a fresh subprocess, alternately (bare, rolleval, bare, rolleval, ...):

* **bare**: ``httpx.AsyncClient`` with the same connection limit and concurrency, sending
  the same request bodies rolleval sends (the task's prompts as sent, its sampling fields, a
  seed), checking the status and parsing the JSON response; nothing else. Bodies are built
  from the resolved task before the clock starts.
* **rolleval**: ``run_eval`` on a ``short_answer`` task of generated problems (``--rollouts``
  split into problems of ``--per-problem`` rollouts each), timed from the call to its
  return. While it runs, this process samples the child's RSS (``/proc/<pid>/status``) and
  how many rollouts are on disk, and fits RSS against rollouts over the request phase
  (10% to 95% of the rollouts): the growth per 1,000 rollouts, from which a 1M figure can be
  read off a smaller run. Peak RSS is the child's own ``ru_maxrss`` (its main process; the
  grading pool grades ``short_answer`` in the calling thread, so there are no workers).

::

    python bench/bench_scale.py [--rollouts 20000] [--per-problem 16] [--concurrency 16]
                                [--rounds 2] [--strict]
    python bench/bench_scale.py --rollouts 1000000 --rounds 1   # the 1M memory figure
    python bench/bench_scale.py --rollouts 1000000 --rounds 1 --server-n   # the same, quicker
    python bench/bench_scale.py --rollouts 4000 --thought-words 8000   # 8k-token thoughts

``--server-n`` asks for each problem's rollouts in one request (``server_n: true``; the test
server honours ``n``): every rollout still becomes its own records, judgement and report
entry, so the runner's memory is measured on 1,000,000 rollouts in minutes instead of hours
(one request per problem instead of per rollout); the bare loop is skipped (not comparable).

``--strict`` exits 1 when a target is missed (the memory target is checked only when
``--rollouts`` is at least 1,000,000; below it the projected 1M figure is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "rolleval-test"
TASK = "scale"
TARGET_RATIO = 0.8
TARGET_PEAK_MB = 500.0
ONE_MILLION = 1_000_000

ROLLEVAL = r"""
import json, resource, sys, time
from rolleval import build_config, run_eval
config = build_config(json.loads(open(sys.argv[1]).read()))
print("ready", flush=True)
t = time.perf_counter()
res = run_eval(config, sys.argv[2], progress=False)
seconds = time.perf_counter() - t
m = res.report["tasks"][sys.argv[3]]["metrics"]
print(json.dumps({"seconds": seconds, "completed": res.completed, "failed": res.failed,
                  "pass@1": m["pass@1"]["value"],
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

BARE = r"""
import asyncio, json, resource, sys, time
import httpx, orjson
from rolleval import build_config
from rolleval._runner import resolve_tasks
config = build_config(json.loads(open(sys.argv[1]).read()))
per_problem, concurrency = int(sys.argv[2]), int(sys.argv[3])
task = resolve_tasks(config)[0]
prompts = [task.wire_prompt(pid) for pid in task.problem_ids]
fields = task.sampling.body_fields()
url = config.endpoints[0].rstrip("/") + "/chat/completions"
total = len(prompts) * per_problem

async def main():
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"content-type": "application/json", "accept": "application/json"}
    todo = iter(range(total))
    texts = 0
    async with httpx.AsyncClient(limits=limits, headers=headers, timeout=120) as http:
        async def worker():
            nonlocal texts
            for i in todo:
                body = {"model": config.model, "messages": prompts[i // per_problem],
                        **fields, "seed": i}
                response = await http.post(url, content=orjson.dumps(body))
                response.raise_for_status()
                texts += orjson.loads(response.content)["choices"][0]["message"]["content"] is not None
        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t, texts

seconds, texts = asyncio.run(main())
assert texts == total, (texts, total)
print(json.dumps({"seconds": seconds, "requests": total,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_task(
    tmp: Path,
    problems: int,
    per_problem: int,
    base_url: str,
    concurrency: int,
    server_n: bool = False,
) -> Path:
    """A short_answer task of ``problems`` generated sums, and the run config; returns the config."""
    data = tmp / "sums.jsonl"
    with data.open("w") as fh:
        for i in range(problems):
            fh.write(
                json.dumps({"id": f"p{i:07d}", "question": f"What is {i} + {i}?", "answer": 2 * i})
                + "\n"
            )
    config = {
        "model": MODEL,
        "endpoints": [base_url],
        "tasks": [
            {
                "name": TASK,
                "path": str(data),
                "type": "short_answer",
                "id_field": "id",
                "question_field": "question",
                "answer_field": "answer",
            }
        ],
        "n_rollouts": per_problem,
        "seed": 0,
        "concurrency": concurrency,
        "timeout_s": 60,
        "server_n": server_n,
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    return path


def _rss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class _LineCounter:
    """Counts the lines of a file that grows, reading only what is new."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.lines = 0

    def poll(self) -> int:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except OSError:
            return self.lines
        self.offset += len(chunk)
        self.lines += chunk.count(b"\n")
        return self.lines


def run_rolleval(
    config: Path, out: Path, interval: float, total: int
) -> tuple[dict, list[tuple[float, int, int]]]:
    """Run the rolleval side; returns its result and (seconds, RSS kB, rollouts on disk) samples."""
    child = subprocess.Popen(
        [sys.executable, "-c", ROLLEVAL, str(config), str(out), TASK],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        child.wait()
        raise SystemExit("the rolleval side did not start")
    counter = _LineCounter(out / "tasks" / TASK / "rollouts.jsonl")
    samples: list[tuple[float, int, int]] = []
    start = time.monotonic()
    step = next_note = max(1, total // 10)
    while child.poll() is None:
        rss = _rss_kb(child.pid)
        if rss is not None:
            samples.append((time.monotonic() - start, rss, counter.poll()))
            if samples[-1][2] >= next_note:  # a long run shows how it goes
                print(
                    f"    {samples[-1][2]:,} rollouts on disk after {samples[-1][0]:.0f} s: "
                    f"RSS {rss / 1024:.0f} MB",
                    flush=True,
                )
                next_note += step
        time.sleep(interval)
    tail = child.stdout.read()
    child.stdout.close()
    if child.returncode != 0:
        raise SystemExit(f"the rolleval side failed (exit {child.returncode})")
    return json.loads(tail.strip().splitlines()[-1]), samples


def run_bare(config: Path, per_problem: int, concurrency: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", BARE, str(config), str(per_problem), str(concurrency)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"the bare side failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def growth_per_1000(samples: list[tuple[float, int, int]], total: int) -> tuple[float, int] | None:
    """Least-squares slope of RSS (kB) against rollouts on disk, over the request phase
    (10% to 95% of ``total``), per 1,000 rollouts; with the number of samples used."""
    pts = [(n, rss) for _, rss, n in samples if 0.10 * total <= n <= 0.95 * total]
    if len(pts) < 5:
        return None
    mx = sum(n for n, _ in pts) / len(pts)
    my = sum(r for _, r in pts) / len(pts)
    sxx = sum((n - mx) ** 2 for n, _ in pts)
    if sxx == 0:
        return None
    slope = sum((n - mx) * (r - my) for n, r in pts) / sxx
    return slope * 1000, len(pts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rollouts", type=int, default=20_000, help="rollouts per side (default 20,000)"
    )
    ap.add_argument("--per-problem", type=int, default=16, help="rollouts per problem (default 16)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2, help="bare/rolleval pairs (default 2)")
    ap.add_argument("--sample-every", type=float, default=0.5, help="RSS sampling interval (s)")
    ap.add_argument(
        "--no-bare", action="store_true", help="memory only: skip the bare loop (a long run)"
    )
    ap.add_argument(
        "--server-n",
        action="store_true",
        help="memory only: ask for a problem's rollouts in one request (config server_n; the "
        "test server honours n), so a 1,000,000-rollout run needs one request per problem",
    )
    ap.add_argument(
        "--thought-words",
        type=int,
        default=0,
        metavar="N",
        help="long replies (issue 19): the server answers as a reasoning model, with a thought "
        "of N words in message.reasoning (e.g. 8000 for an 8k-token thought), which rolleval "
        "stores and the bare loop parses",
    )
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    if args.server_n:
        args.no_bare = True  # the bare loop sends one request per rollout: not comparable
    problems = max(1, args.rollouts // args.per_problem)
    total = problems * args.per_problem

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rolleval.testing.server",
            "--port",
            "0",
            "--model",
            MODEL,
            "--thought-words",
            str(args.thought_words),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    bare: list[float] = []
    ours: list[float] = []
    peaks: list[float] = []
    growths: list[float] = []
    finishes: list[tuple[int | None, float]] = []
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"test server did not start: {line!r}")
        base_url = line.split()[-1]
        print(
            f"server {base_url} (own process); {total:,} rollouts ({problems:,} problems x "
            f"{args.per_problem}), concurrency {args.concurrency}, {args.rounds} round(s); "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            flush=True,
        )
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            config = write_task(
                tmp, problems, args.per_problem, base_url, args.concurrency, args.server_n
            )
            for r in range(args.rounds):
                if not args.no_bare:
                    b = run_bare(config, args.per_problem, args.concurrency)
                    bare.append(b["requests"] / b["seconds"])
                out = tmp / f"run-{r}"
                res, samples = run_rolleval(config, out, args.sample_every, total)
                if res["completed"] != total or res["failed"]:
                    raise SystemExit(f"rolleval completed {res['completed']} of {total}: {res}")
                ours.append(total / res["seconds"])
                peaks.append(res["peak_mb"])
                g = growth_per_1000(samples, total)
                if g is not None:
                    growths.append(g[0])
                at_end = [rss for _, rss, n in samples if n <= 0.95 * total]
                end = at_end[-1] if at_end else None
                finishes.append((end, res["peak_mb"]))
                speed = (
                    f"bare httpx {bare[-1]:.0f} req/s, rolleval {ours[-1]:.0f} rollouts/s "
                    f"({res['seconds']:.1f} s), ratio {ours[-1] / bare[-1]:.2f}"
                    if bare
                    else f"rolleval {ours[-1]:.0f} rollouts/s ({res['seconds']:.1f} s)"
                )
                print(
                    f"  round {r + 1}: {speed}; rolleval peak RSS {res['peak_mb']:.0f} MB, RSS "
                    + (f"{end / 1024:.0f} MB at 95% of the requests, " if end else "")
                    + (
                        f"growth {g[0]:+.1f} kB per 1,000 rollouts over the requests ({g[1]} samples)"
                        if g
                        else "growth N/A (too few samples: a run this short ends between samples)"
                    )
                    + f"; load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
                import shutil

                shutil.rmtree(out, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()

    best_ours = max(ours)
    peak = max(peaks)
    if growths and all(e is not None for e, _ in finishes):
        growth = max(growths)
        extra = max(p - e / 1024 for e, p in finishes if e is not None)
        projected = max(
            e / 1024 + growth * (ONE_MILLION - 0.95 * total) / 1000 / 1024
            for e, _ in finishes
            if e is not None
        )
        mem = (
            f"peak RSS {peak:.0f} MB at {total:,} rollouts; growth {growth:+.1f} kB per 1,000 "
            f"rollouts during the requests (worst round)"
            + (
                f", so about {projected:.0f} MB at the end of the requests of a 1,000,000 run"
                if total < ONE_MILLION
                else ""
            )
            + f"; the finish (profile and report, read back from disk) added {extra:.0f} MB "
            f"at this size (it grows with the judgement table: run --rollouts 1000000 for the "
            f"1M peak)"
        )
    else:
        mem = f"peak RSS {peak:.0f} MB at {total:,} rollouts, growth N/A (too few samples)"
    print(f"memory: {mem} (target < {TARGET_PEAK_MB:.0f} MB at 1,000,000)")
    if not bare:
        print(
            f"scale: rolleval {best_ours:.0f} rollouts/s (bare loop skipped); peak RSS "
            f"{peak:.0f} MB at {total:,} rollouts (target < {TARGET_PEAK_MB:.0f} MB at 1,000,000)"
        )
        return 1 if args.strict and total >= ONE_MILLION and peak >= TARGET_PEAK_MB else 0
    best_bare = max(bare)
    ratio = best_ours / best_bare
    ratios = ", ".join(f"{o / b:.2f}" for b, o in zip(bare, ours, strict=True))
    print(f"per-round ratios (rolleval / bare, same round): {ratios}")
    print(
        f"scale: rolleval {best_ours:.0f} rollouts/s vs bare httpx {best_bare:.0f} req/s "
        f"-> {ratio:.2f} (target >= {TARGET_RATIO:.1f}); peak RSS {peak:.0f} MB at "
        f"{total:,} rollouts (target < {TARGET_PEAK_MB:.0f} MB at 1,000,000)"
    )
    missed = ratio < TARGET_RATIO or (total >= ONE_MILLION and peak >= TARGET_PEAK_MB)
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
