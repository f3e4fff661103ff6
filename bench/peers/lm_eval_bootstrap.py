"""Peer driver (runs in the peer venv): lm-evaluation-harness's ``bootstrap_stderr``.

    python bench/peers/lm_eval_bootstrap.py SCORES.npy --iters 10000 [--statistic mean] [--repeat 1]

Loads the per-problem scores, hands them to ``lm_eval.api.metrics.bootstrap_stderr`` as a
Python list (what lm-eval aggregates) with one of lm-eval's own aggregation functions, and
times the call alone (imports and loading excluded). Its default behaviour is kept: a
``multiprocessing`` pool of ``cpu_count()`` workers, chunks of 1,000 resamples, Python's
``random`` per chunk. Prints one JSON line: seconds per repeat, the standard error, versions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", help=".npy file of per-problem scores")
    parser.add_argument("--iters", type=int, default=10_000)
    parser.add_argument(
        "--statistic",
        choices=["mean", "nanmean"],
        default="mean",
        help="lm-eval aggregation to bootstrap: 'mean' (sum/len, the fastest) or 'nanmean' "
        "(numpy, the mean-like aggregation lm-eval lists as bootstrappable)",
    )
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    if os.environ.get("DISABLE_MULTIPROC"):
        sys.exit("DISABLE_MULTIPROC is set: unset it to measure lm-eval's default (pooled) path")

    from importlib.metadata import version

    import numpy as np
    from lm_eval.api import metrics

    xs = np.load(args.scores).tolist()
    statistic = getattr(metrics, args.statistic)
    seconds = []
    stderr = None
    for _ in range(args.repeat):
        # lm-eval prints "bootstrapping for stddev" on stdout: keep stdout for the result line
        with contextlib.redirect_stdout(sys.stderr):
            start = time.perf_counter()
            stderr = metrics.bootstrap_stderr(statistic, xs, iters=args.iters)
            seconds.append(time.perf_counter() - start)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "stderr": stderr,
                "statistic": f"lm_eval.api.metrics.{args.statistic}",
                "workers": mp.cpu_count(),
                "n": len(xs),
                "iters": args.iters,
                "lm_eval": version("lm-eval"),
            }
        )
    )


if __name__ == "__main__":
    main()
