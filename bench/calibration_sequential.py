"""Calibration of the sequential design (issue 24; run by ``bench/calibration.py --only sequential``).

Design: a budget of N problems (``--seq-problems``, default 1,000), p_i ~ Beta(2, 2), K
rollouts per problem on both sides (both drawn fresh: BASE is a run with rollout noise
too), the candidate's rates shifted so that the realized mean drop is exact
(``realized_shift``). The sequential run looks **after every problem** (the worst case for
optional stopping) and applies the rule of ``rolleval.compare._sequential`` at
alpha = 0.05, threshold = 0.02 (``first_decision``: the sequence's position relative to -threshold, 0
and threshold, tested equal to the interval form).

Rows (2,000 simulations each by default):

* A/A: false regression <= alpha/2 + 2 SE. [info] the share settled as equivalent or
  inconclusive, and a naive fixed-sample test (normal interval of the mean at level
  1 - alpha, regression when it excludes 0 and the mean is <= -threshold) looked at after every
  10th problem: the false alarms optional stopping adds to a fixed design.
* True drops of 1x, 2x and 4x threshold: the sequential regression share and the mean and 90th
  percentile of the problems used; beside it the fixed design on all N problems
  (``paired_compare`` with counts, B bootstrap resamples, the same draws). Targets: the
  mean problems used at most 30% of N at 4x and at most 60% at 2x (the fixed design uses N).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rolleval.compare import PairedInput, paired_compare
from rolleval.compare._sequential import first_decision

ALPHA = 0.05
THRESHOLD = 0.02


def _draw(rng: np.random.Generator, n: int, k: int, drop: float, shift_fn: Any):
    p = rng.beta(2.0, 2.0, n)
    q = np.maximum(p - shift_fn(p, drop), 0.0) if drop > 0 else p
    cb, cc = rng.binomial(k, p), rng.binomial(k, q)
    return cb, cc


def sequential_rows(
    seed: int, n: int, k: int, drop: float, resamples: int, fixed: bool, sims: range
) -> dict[str, np.ndarray]:
    """Per simulation: the sequential verdict and problems used, the naive peeking test and
    (``fixed``) the fixed design's verdict on all ``n`` problems."""
    from calibration import realized_shift  # bench/, beside this script

    out: dict[str, np.ndarray] = {
        "regression": np.zeros(len(sims), bool),
        "equivalent": np.zeros(len(sims), bool),
        "inconclusive": np.zeros(len(sims), bool),
        "used": np.zeros(len(sims), np.int64),
        "naive_regression": np.zeros(len(sims), bool),
        "fixed_regression": np.zeros(len(sims), bool),
    }
    z = 1.959963984540054
    for j, sim in enumerate(sims):
        seq = np.random.SeedSequence([seed, sim, *f"seq{drop}".encode()])
        rng = np.random.default_rng(seq)
        cb, cc = _draw(rng, n, k, drop, realized_shift)
        d = (cc - cb) / k
        res = first_decision(d, alpha=ALPHA, threshold=THRESHOLD)
        out["regression"][j] = res.verdict == "regression"
        out["equivalent"][j] = res.verdict in (
            "equivalent_within_threshold",
            "significant_below_threshold",
        )
        out["inconclusive"][j] = res.verdict == "inconclusive"
        out["used"][j] = res.n_used
        t = np.arange(1, n + 1)
        mean = np.cumsum(d) / t
        var = np.maximum(np.cumsum(d * d) / t - mean**2, 0.0) * t / np.maximum(t - 1, 1)
        look = np.arange(9, n, 10)
        upper = mean[look] + z * np.sqrt(var[look] / t[look])
        out["naive_regression"][j] = bool(np.any((upper < 0) & (mean[look] <= -THRESHOLD)))
        if fixed:
            nn = np.full(n, k)
            comp = paired_compare(
                PairedInput(
                    cb / k,
                    cc / k,
                    c_baseline=cb,
                    n_baseline=nn,
                    c_candidate=cc,
                    n_candidate=nn,
                    value_range=(0.0, 1.0),
                ),
                threshold=THRESHOLD,
                alpha=ALPHA,
                n_resamples=resamples,
                rng=int(seq.generate_state(1)[0]),
            )
            out["fixed_regression"][j] = comp.verdict == "regression"
    return out


def report_sequential(rep: Any, run: Any, pool: Any, settings: Any, sims: int, n: int) -> None:
    """The rows of the module docstring, printed through ``calibration.Report``."""
    k = settings.rollouts
    print(
        f"calibration: [sequential] budget N={n} problems, K={k} rollouts, p_i ~ Beta(2, 2), "
        f"looked at after every problem; alpha={ALPHA}, threshold={THRESHOLD}"
    )
    aa = run(sequential_rows, (settings.seed, n, k, 0.0, settings.resamples, False), sims, pool)
    rep.at_most("A/A false regression, sequential", aa["regression"], ALPHA / 2)
    rep.line(
        "  A/A settled equivalent (or significant below threshold)", aa["equivalent"], "info", None
    )
    rep.line("  A/A inconclusive at the budget", aa["inconclusive"], "info", None)
    print(
        f"calibration:   A/A problems used: mean {aa['used'].mean():.1f}, "
        f"90th percentile {np.percentile(aa['used'], 90):.0f} of {n}"
    )
    rep.line(
        "  A/A false regression, naive fixed-sample test looked at every 10 problems",
        aa["naive_regression"],
        "the optional-stopping defect, info",
        None,
    )
    for mult, target in ((1, None), (2, 0.60), (4, 0.30)):
        drop = mult * THRESHOLD
        out = run(
            sequential_rows, (settings.seed, n, k, drop, settings.resamples, True), sims, pool
        )
        rep.line(
            f"drop {mult}x threshold = {drop:g}: sequential regression",
            out["regression"],
            "power, info",
            None,
        )
        rep.line(
            f"  fixed design on all {n} problems: regression",
            out["fixed_regression"],
            "power, info",
            None,
        )
        mean_used = float(out["used"].mean())
        se_used = float(out["used"].std(ddof=1) / math.sqrt(out["used"].size))
        share = mean_used / n
        line = (
            f"calibration:   problems used: mean {mean_used:.1f} (SE {se_used:.1f}) = {share:.1%} "
            f"of the fixed design's {n}, 90th percentile {np.percentile(out['used'], 90):.0f}"
        )
        if target is None:
            print(line + " [info]")
        else:
            ok = share <= target
            rep.results.append(ok)
            print(line + f" [target mean <= {target:.0%} of {n}] [{'ok' if ok else 'FAIL'}]")
