"""Benchmark: `rolleval report` on a 1,000,000-rollout run directory.

Target (issue 2): within 3x of the time it takes merely to parse the judgement file with the
fastest JSON reader available (the best of orjson line by line, orjson on the whole file, and
msgspec's generic decoder on the whole file), and peak memory under 1.5 GB. Each side runs in a
fresh subprocess so peak RSS is measured per side.

    python bench/bench_report.py [--problems 62500 --rollouts 16]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARSE = r"""
import json, resource, sys, time
import msgspec, orjson
path = sys.argv[1]
best = None
generic = msgspec.json.Decoder()
for _ in range(3):
    t = time.perf_counter()
    with open(path, "rb") as fh:
        recs = [orjson.loads(line) for line in fh]
    per_line = time.perf_counter() - t
    del recs
    t = time.perf_counter()
    with open(path, "rb") as fh:
        data = fh.read()
    recs = orjson.loads(b"[" + b",".join(data.splitlines()) + b"]")
    whole = time.perf_counter() - t
    del recs, data
    t = time.perf_counter()
    with open(path, "rb") as fh:
        data = fh.read()
    recs = generic.decode(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")
    whole_msgspec = time.perf_counter() - t
    del recs, data
    cur = min(per_line, whole, whole_msgspec)
    best = cur if best is None else min(best, cur)
print(json.dumps({"seconds": best, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

REPORT = r"""
import json, resource, sys, time, warnings
from rolleval import report_run
best = None
for _ in range(3):
    t = time.perf_counter()
    res = report_run(sys.argv[1])
    cur = time.perf_counter() - t
    best = cur if best is None else min(best, cur)
m = res.report["tasks"]["synthetic_math"]["metrics"]
print(json.dumps({"seconds": best, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "pass@1": m["pass@1"]["value"], "n_metrics": len(m)}))
"""


def _run(code: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--problems", type=int, default=62_500)
    ap.add_argument("--rollouts", type=int, default=16)
    args = ap.parse_args()
    from rolleval.testing._synthetic import write_synthetic_run

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run"
        t = time.perf_counter()
        write_synthetic_run(
            path,
            n_problems=args.problems,
            n_rollouts=args.rollouts,
            rng=1,
            p_infra_error=0.01,
            p_grader_error=0.005,
            p_unextracted=0.05,
            p_truncated=0.02,
        )
        judgements = path / "tasks" / "synthetic_math" / "judgements.jsonl"
        n = args.problems * args.rollouts
        print(
            f"generated {n:,} rollouts in {time.perf_counter() - t:.1f}s "
            f"({judgements.stat().st_size / 1e6:.0f} MB of judgements)"
        )
        parse = _run(PARSE, str(judgements))
        rep = _run(REPORT, str(path))
    ratio = rep["seconds"] / parse["seconds"]
    print(
        f"report: rolleval report {rep['seconds']:.2f} s ({rep['n_metrics']} metrics with 95% CIs, B=10,000) "
        f"vs fastest parse only (orjson/msgspec) {parse['seconds']:.2f} s -> {ratio:.2f}x the parse time (target <= 3x)"
    )
    print(
        f"report: peak memory {rep['peak_mb']:.0f} MB (target < 1536 MB); parse-only peak {parse['peak_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
