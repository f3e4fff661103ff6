"""Benchmark: `rolleval import lm-eval` on a large lm-evaluation-harness samples file.

Target (issue 23): the import takes at most 4x the time the fastest JSON reader takes merely
to parse the same file (the best of orjson and msgspec, line by line: the file does not fit
a single in-memory array comfortably at 1 GB), with peak memory bounded by one task's
records, in Python and msgspec alone (no compiled code of rolleval's own). The samples file is generated here, in the shape lm-eval 0.4.13 writes with
``--log_samples`` (one task, ``repeats: 4``, a take_first filter; see
tests/data/imports/lm-eval/), so nothing large is stored in the repository. Each side runs
in a fresh subprocess so peak RSS is measured per side.

The peer stays "merely parsing": every line decoded generically into Python objects, by
whichever of orjson and msgspec is faster, in one process. rolleval's importer reads chunks
of lines of the file's common shape on its column path (a strict msgspec decoder and ``map``
calls over its rows), in one worker process per usable CPU for a large file, the workers
appending the records to the run's files themselves; a chunk holding a line of another shape
is read line by line by the generic path, so records and the import summary are those of the
generic path (``tests/importers/test_importers_fast.py``). Both sides run in their own
process, after ``os.sync()`` (the generated file's write-back would slow whichever runs
while it happens). The import's time includes writing the three record streams,
``task.json`` and the report; its CPU time is printed for all its processes.

    python bench/bench_import.py [--size-mb 1024] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PARSE = r"""
import json, resource, sys, time
import msgspec, orjson
path = sys.argv[1]
best = None
dec = msgspec.json.Decoder()
for loads in (orjson.loads, dec.decode):
    t = time.perf_counter()
    c = time.process_time()
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            loads(line)
            n += 1
    dt = time.perf_counter() - t
    if best is None or dt < best:
        best, cpu = dt, time.process_time() - c
print(json.dumps({"seconds": best, "cpu_seconds": cpu, "lines": n, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

IMPORT = r"""
import json, resource, sys, time
from rolleval._importers import import_run
t = time.perf_counter()
c = time.process_time()
summary = import_run("lm-eval", sys.argv[1], sys.argv[2])
dt = time.perf_counter() - t
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": dt, "cpu_seconds": time.process_time() - c,
                  "worker_cpu_seconds": children.ru_utime + children.ru_stime,
                  "rollouts": summary.totals["rollouts"],
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "worker_max_rss_mb": children.ru_maxrss / 1024}))
"""

TARGET = 4.0
COLOURS = ["red", "blue", "green", "yellow", "white", "black", "brown", "orange", "pink", "grey"]


def write_source(folder: Path, size_mb: int) -> Path:
    """An lm-eval output folder with one results file and one samples file of ~size_mb."""
    date = "2026-01-01T00-00-00.000000"
    results = {
        "results": {"copycolors_local": {"exact_match,last-word": None}},
        "configs": {
            "copycolors_local": {
                "repeats": 4,
                "generation_kwargs": {"until": ["\n"], "max_gen_toks": 16, "temperature": 0.7},
                "filter_list": [
                    {
                        "name": "last-word",
                        "filter": [{"function": "regex"}, {"function": "take_first"}],
                    }
                ],
            }
        },
        "versions": {"copycolors_local": 1.0},
        "lm_eval_version": "0.4.13",
        "config": {"model": "local-chat-completions"},
    }
    (folder / f"results_{date}.json").write_text(json.dumps(results))
    path = folder / f"samples_copycolors_local_{date}.jsonl"
    target = size_mb << 20
    written = 0
    i = 0
    with open(path, "w") as fh:
        while written < target:
            gold = COLOURS[i % len(COLOURS)]
            question = f"Thing number {i} is {gold}. What color is thing number {i}?"
            content = (
                "Answer with one word.\nQ: Gravel is grey. What color is gravel?\nA: grey\n"
                f"Q: {question}\nA:"
            )
            resps = [COLOURS[(i * 7 + j) % len(COLOURS)] for j in range(4)]
            line = json.dumps(
                {
                    "doc_id": i,
                    "doc": {"id": f"t-{i}", "question": question, "answer": gold},
                    "target": gold,
                    "arguments": {
                        "gen_args_0": {
                            "arg_0": [json.dumps([{"role": "user", "content": content}])],
                            "arg_1": {"until": ["\n"], "max_gen_toks": 16},
                        }
                    },
                    "resps": [resps],
                    "filtered_resps": [resps[0]],
                    "filter": "last-word",
                    "metrics": ["exact_match"],
                    "doc_hash": "0" * 64,
                    "prompt_hash": "1" * 64,
                    "target_hash": "2" * 64,
                    "exact_match": float(resps[0] == gold),
                }
            )
            fh.write(line + "\n")
            written += len(line) + 1
            i += 1
    return path


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run(code: str, *args: str) -> dict:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "src"
        folder.mkdir()
        samples = write_source(folder, args.size_mb)
        size = samples.stat().st_size
        # the generated file's pages go to the disk now, not while a side is being timed
        # (the kernel's write-back of a gigabyte just written would slow whichever runs)
        os.sync()
        parse = run(PARSE, str(samples))
        os.sync()
        imp = run(IMPORT, str(folder), str(Path(tmp) / "run"))
    ratio = imp["seconds"] / parse["seconds"]
    print(
        f"bench_import: rolleval import {imp['seconds']:.1f} s vs fastest JSON parse "
        f"{parse['seconds']:.1f} s -> {ratio:.2f}x (target <= {TARGET:g}x)"
    )
    print(
        f"  samples file {size / 2**20:.0f} MB, {parse['lines']} documents, "
        f"{imp['rollouts']} rollouts imported (take_first: n = 1); peak RSS import "
        f"{imp['max_rss_mb']:.0f} MB (largest worker {imp['worker_max_rss_mb']:.0f} MB), "
        f"parse {parse['max_rss_mb']:.0f} MB; load average {os.getloadavg()[0]:.1f}"
    )
    total_cpu = imp["cpu_seconds"] + imp["worker_cpu_seconds"]
    print(
        f"  CPU time, all processes (less sensitive to a loaded machine): import "
        f"{total_cpu:.1f} s ({imp['cpu_seconds']:.1f} s this process, "
        f"{imp['worker_cpu_seconds']:.1f} s its workers on {usable_cpus()} CPUs) vs parse "
        f"{parse['cpu_seconds']:.1f} s -> {total_cpu / parse['cpu_seconds']:.2f}x"
    )
    return 1 if args.strict and ratio > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
