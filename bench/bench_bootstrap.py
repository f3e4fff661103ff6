"""Benchmark: rolleval.stats.bootstrap_ci against scipy.stats.bootstrap(method='percentile').

Same data for every contender: 10,000 problems x 16 rollouts, per-problem pass@1
scores c/16 with c ~ Binomial(16, p_i) and p_i ~ Beta(0.8, 0.8); B = 10,000
resamples, same seed. The two intervals must be identical (asserted).

Targets: rolleval at least as fast as scipy (>= 1x) with at most a quarter of its
peak memory (<= 0.25x).

Wall time is the best of ``--repeat`` interleaved rounds without tracing; peak
memory is measured in a separate run with ``tracemalloc`` (numpy reports its
buffers to it), as the peak above what was allocated before the call.

    python bench/bench_bootstrap.py [--problems 10000 --rollouts 16 --resamples 10000]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy
from scipy import stats

from rolleval.stats import bootstrap_ci


def make_scores(problems: int, rollouts: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.8, 0.8, size=problems)
    return rng.binomial(rollouts, p) / rollouts


def best_times(contenders: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best wall seconds of each contender over ``repeat`` interleaved rounds.

    Interleaving (A, B, A, B, ...) keeps a burst of load on a shared machine from
    landing on one contender only.
    """
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def peak_memory(fn: Callable[[], Any]) -> tuple[int, Any]:
    """(peak traced bytes above the level before the call, result) under tracemalloc."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - base, result


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit in ("B", "kB") else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def bench_lm_eval(scores: np.ndarray, n_resamples: int) -> None:
    """lm-evaluation-harness's bootstrap_stderr on the same scores, at the same B.

    lm-eval runs in its own venv (``bash bench/peers/setup.sh``), as a subprocess driver
    (``bench/peers/lm_eval_bootstrap.py``) that times the ``bootstrap_stderr`` call alone with
    its default multiprocessing pool. It computes a standard error (no interval) with
    Python's ``random`` per chunk, so only the times for the same B are compared and its SE
    agrees with ours within Monte Carlo error; tracemalloc could not see its pool workers, so
    memory is not compared.
    """
    import os
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from peers import SETUP_HINT, run_driver, venv_python

    if venv_python() is None:
        print(f"lm-eval: skipped (no peer venv; run: {SETUP_HINT})")
        return
    repeat = 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scores.npy")
        np.save(path, scores)
        try:
            peer = run_driver(
                "lm_eval_bootstrap.py", path, "--iters", str(n_resamples), "--repeat", str(repeat)
            )
        except RuntimeError as exc:
            print(f"lm-eval: FAILED: {exc}")
            return
    theirs = min(peer["seconds"])
    ours = best_times({"rolleval": lambda: bootstrap_ci(scores, n_resamples=n_resamples)}, 5)
    ours_s = ours["rolleval"]
    se = bootstrap_ci(scores, n_resamples=n_resamples, rng=0).standard_error
    ratio = theirs / ours_s
    print(
        f"lm-eval {peer['lm_eval']} bootstrap_stderr({peer['statistic']}) on {peer['n']:,} "
        f"scores, B = {peer['iters']:,}, pool of {peer['workers']} processes: "
        f"{', '.join(f'{s:.2f}' for s in peer['seconds'])} s (best of {repeat}); "
        f"its SE {peer['stderr']:.6f} vs rolleval {se:.6f} ({abs(peer['stderr'] / se - 1):.1%} "
        f"apart; the Monte Carlo error of each is about 1/sqrt(2B) = {(2 * n_resamples) ** -0.5:.1%})"
    )
    print(
        f"bootstrap: rolleval {ours_s:.3f} s vs lm-eval bootstrap_stderr {theirs:.2f} s -> "
        f"{ratio:.1f}x faster (target >= 10x) {'met' if ratio >= 10 else 'MISSED'} "
        "[same B; lm-eval computes a standard error only, rolleval a percentile interval "
        "and its SE]"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10_000)
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20240917)
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per contender")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    scores = make_scores(args.problems, args.rollouts, args.seed)
    b, seed = args.resamples, args.seed
    print(
        f"data: {args.problems} problems x {args.rollouts} rollouts "
        f"(pass@1 = c/{args.rollouts}, p ~ Beta(0.8, 0.8)), B = {b}, seed = {seed}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}"
    )

    def ours_fn():
        return bootstrap_ci(scores, n_resamples=b, rng=seed)

    def scipy_fn():
        return stats.bootstrap(
            (scores,), np.mean, method="percentile", n_resamples=b, rng=np.random.default_rng(seed)
        )

    seconds = best_times({"rolleval": ours_fn, "scipy": scipy_fn}, args.repeat)
    ours_s, ref_s = seconds["rolleval"], seconds["scipy"]
    ours_peak, ours = peak_memory(ours_fn)
    ref_peak, ref = peak_memory(scipy_fn)
    assert (ours.low, ours.high) == tuple(ref.confidence_interval), (ours, ref)
    assert ours.standard_error == ref.standard_error
    print(
        f"interval: [{ours.low!r}, {ours.high!r}] identical to scipy; SE {ours.standard_error:.6f}"
    )

    speed = ref_s / ours_s
    memory = ours_peak / ref_peak
    met = speed >= 1.0 and memory <= 0.25
    print(
        f"bootstrap: rolleval {ours_s:.2f} s / {human_bytes(ours_peak)} vs scipy "
        f"{ref_s:.2f} s / {human_bytes(ref_peak)} -> {speed:.2f}x faster, {memory:.3f}x memory "
        f"(targets: >= 1x speed, <= 0.25x memory) {'met' if met else 'MISSED'}"
    )
    bench_lm_eval(scores, b)
    return 1 if args.strict and not met else 0


if __name__ == "__main__":
    sys.exit(main())
