"""Benchmark: rolleval's suite metrics against the per-problem scipy.stats.hypergeom loop.

The loop is the approach lighteval and OpenCompass take for G-Pass@k (one
``scipy.stats.hypergeom.sf`` call per problem, k and threshold), written here from the
formulas: pass@k = P(X >= 1), pass^k = P(X >= k), G-Pass@k_tau = P(X >= max(ceil(tau k), 1)),
mG-Pass@k = (2/k) sum_{i=ceil(k/2)+1}^{k} P(X >= i), X ~ Hypergeom(n, c, k).

Target: rolleval >= 50x faster on 100,000 problems x 16 rollouts with k in 1, 2, 4, 8, 16
and tau in 0, 0.25, 0.5, 0.75, 1 (the thresholds tau*k are exact in binary here, so the
loop's float ceil is correct and both sides must agree).

When the loop would take longer than --peer-budget seconds it is timed on a random subsample
of --peer-problems problems and extrapolated linearly; the output says so.

    python bench/bench_metrics.py [--problems 100000 --rollouts 16]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.stats import hypergeom

from rolleval.metrics import default_ks, metric_name, suite_metrics

TAUS = (0.0, 0.25, 0.5, 0.75, 1.0)


def make_suite(problems: int, rollouts: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-problem counts: difficulty p ~ Beta(0.5, 0.5), c ~ Binomial(rollouts, p)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, size=problems)
    n = np.full(problems, rollouts, dtype=np.int64)
    c = rng.binomial(rollouts, p).astype(np.int64)
    return n, c


def peer_loop(n: np.ndarray, c: np.ndarray, ks: list[int]) -> dict[str, np.ndarray]:
    """Per-problem values computed one hypergeom.sf call at a time."""
    names: list[str] = []
    for k in ks:
        names += [metric_name("pass_at_k", k=k), metric_name("pass_hat_k", k=k)]
        names += [metric_name("g_pass_at_k", k=k, tau=t) for t in TAUS]
        names.append(metric_name("mg_pass_at_k", k=k))
    out = {name: np.empty(n.size) for name in names}
    for i, (ni, ci) in enumerate(zip(n.tolist(), c.tolist(), strict=True)):
        for k in ks:
            out[f"pass@{k}"][i] = hypergeom.sf(0, ni, ci, k)
            out[f"pass^{k}"][i] = hypergeom.sf(k - 1, ni, ci, k)
            for tau in TAUS:
                m = max(math.ceil(tau * k), 1)
                out[metric_name("g_pass_at_k", k=k, tau=tau)][i] = hypergeom.sf(m - 1, ni, ci, k)
            start = math.ceil(k / 2) + 1
            mg = sum(hypergeom.sf(j - 1, ni, ci, k) for j in range(start, k + 1))
            out[f"mG-Pass@{k}"][i] = 2 / k * mg
    return out


def peer_vectorised(n: np.ndarray, c: np.ndarray, ks: list[int]) -> None:
    """The same quantities with hypergeom.sf vectorised over problems (not timed against
    the target; printed for context)."""
    for k in ks:
        hypergeom.sf(0, n, c, k)
        hypergeom.sf(k - 1, n, c, k)
        for tau in TAUS:
            hypergeom.sf(max(math.ceil(tau * k), 1) - 1, n, c, k)
        start = math.ceil(k / 2) + 1
        sum(hypergeom.sf(j - 1, n, c, k) for j in range(start, k + 1))


def best_of(func, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=100_000)
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="repeats of the fast side")
    parser.add_argument(
        "--peer-budget",
        type=float,
        default=120.0,
        help="run the scipy loop on every problem if it is expected to take at most this many seconds",
    )
    parser.add_argument(
        "--peer-problems",
        type=int,
        default=2_000,
        help="subsample size for the scipy loop when it would exceed --peer-budget",
    )
    args = parser.parse_args()

    n, c = make_suite(args.problems, args.rollouts, args.seed)
    ks = default_ks(args.rollouts)
    print(
        f"suite: {args.problems:,} problems x {args.rollouts} rollouts; k in {ks}; "
        f"tau in {list(TAUS)}"
    )

    result = suite_metrics(n, c, ks=ks, taus=TAUS)
    fast = best_of(lambda: suite_metrics(n, c, ks=ks, taus=TAUS), args.repeats)
    print(f"rolleval suite_metrics: best of {args.repeats}: {fast:.4f} s ({len(result)} metrics)")

    # Calibrate the loop on a small sample, then decide: full run or subsample.
    rng = np.random.default_rng(args.seed + 1)
    probe = rng.choice(args.problems, size=min(200, args.problems), replace=False)
    t = time.perf_counter()
    peer_loop(n[probe], c[probe], ks)
    per_problem = (time.perf_counter() - t) / probe.size
    expected = per_problem * args.problems
    if expected <= args.peer_budget or args.peer_problems >= args.problems:
        sample = np.arange(args.problems)
        note = "measured on every problem"
    else:
        sample = np.sort(rng.choice(args.problems, size=args.peer_problems, replace=False))
        note = (
            f"EXTRAPOLATED: measured on a random {sample.size:,} of {args.problems:,} problems "
            f"and scaled linearly by {args.problems / sample.size:.0f}"
        )
    t = time.perf_counter()
    peer = peer_loop(n[sample], c[sample], ks)
    measured = time.perf_counter() - t
    slow = measured * args.problems / sample.size
    print(f"scipy-hypergeom-loop: {measured:.2f} s on {sample.size:,} problems ({note})")

    max_diff = 0.0
    for name, values in peer.items():
        max_diff = max(max_diff, float(np.max(np.abs(result.per_problem[name][sample] - values))))
    print(
        f"agreement: max abs diff over {len(peer)} metrics x {sample.size:,} problems = {max_diff:.2e}"
    )

    vec = best_of(lambda: peer_vectorised(n, c, ks), 1)
    print(
        f"(context) scipy hypergeom.sf vectorised over problems, all {args.problems:,}: {vec:.2f} s"
    )

    ratio = slow / fast
    tag = " (extrapolated)" if sample.size < args.problems else ""
    verdict = "OK" if ratio >= 50 and max_diff <= 1e-9 else "MISSED"
    print(
        f"metrics: rolleval {fast:.3f} s vs scipy-hypergeom-loop {slow:.1f} s{tag} -> "
        f"{ratio:.0f}x faster (target >= 50x) [{verdict}]"
    )


if __name__ == "__main__":
    main()
