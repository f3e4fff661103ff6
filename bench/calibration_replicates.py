"""Calibration of compare with replicate runs per side (issue 26 item 3; not in the test suite).

A/A comparisons where every run carries a common shock: each run's problems have true rates
``expit(logit(p_i) + u_r)`` with ``p_i ~ Beta(2, 2)`` fixed and ``u_r ~ N(0, sigma^2)`` drawn
per run, ``--rollouts`` rollouts on each of ``--problems`` problems. Per simulation, eight
runs: one run per side (runs 0 and 4, :func:`rolleval.compare.compare_frames`) against four
replicates per side (runs 0-3 against 4-7, :func:`compare_replicate_frames`). Prints the
false-regression and false-improvement rates with their Monte Carlo SE
``sqrt(r (1 - r) / sims)``; target with replicates: each <= alpha/2 = 0.025 + 2 SE.
``tests/compare/test_compare_replicates.py`` runs the same design at 400 simulations.

    python bench/calibration_replicates.py [--sims 2000 --sigma 0.15 --resamples 200]

Exit status 0 when both replicate rates are within the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.special import expit, logit

from rolleval.compare import ProblemFrame, compare_frames
from rolleval.compare._per_task import compare_replicate_frames


def _frame(c: np.ndarray, n: int) -> ProblemFrame:
    ids = [f"p{i:04d}" for i in range(len(c))]
    nn = np.full(len(c), n)
    return ProblemFrame(
        task="t",
        ids=ids,
        hashes=[None] * len(ids),
        clusters=[None] * len(ids),
        n=nn,
        c=c,
        requested=nn.copy(),
        values={"pass@1": c / nn},
        settings={"grader_identity": "g", "score_key": "correct"},
    )


def simulate(
    sims: int, sigma: float, problems: int, rollouts: int, resamples: int, seed: int
) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    logits = logit(np.random.default_rng(0).beta(2.0, 2.0, problems))
    counts = {
        "one_regression": 0,
        "one_improvement": 0,
        "four_regression": 0,
        "four_improvement": 0,
    }
    for s in range(sims):
        runs = [
            _frame(rng.binomial(rollouts, expit(logits + rng.normal(0.0, sigma))), rollouts)
            for _ in range(8)
        ]
        one = compare_frames(runs[0], runs[4], n_resamples=resamples, rng=s).comparison.verdict
        four = compare_replicate_frames(runs[:4], runs[4:], n_resamples=resamples, rng=s)
        for name, verdict in (("one", one), ("four", four.comparison.verdict)):
            for word in ("regression", "improvement"):
                counts[f"{name}_{word}"] += verdict == word
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--sigma", type=float, default=0.15, help="SD of the per-run logit offset")
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    a = parser.parse_args(argv)
    t0 = time.perf_counter()
    counts = simulate(a.sims, a.sigma, a.problems, a.rollouts, a.resamples, a.seed)
    ok = True
    for key, k in counts.items():
        r = k / a.sims
        se = math.sqrt(r * (1 - r) / a.sims)
        checked = key.startswith("four")
        good = r <= 0.025 + 2 * se if checked else True
        ok &= good
        mark = ("ok" if good else "FAIL") if checked else "info"
        print(f"{key:18s} {k:5d}/{a.sims} = {r:.4f} (SE {se:.4f}) [{mark}]")
    print(
        f"sigma {a.sigma}, T {a.problems}, n {a.rollouts}, B {a.resamples}: {time.perf_counter() - t0:.0f} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
