"""Calibration study of rolleval.compare.paired_compare (not part of the fast test suite).

Simulated suites: T problems with true per-problem success rates p_i ~ Beta(2, 2), K
rollouts per problem on each side, pass@1 = Binomial(K, rate_i) / K, compared with
``paired_compare`` (counts given, so the MDE uses Miller's variance components) at
alpha = 0.05, threshold = 0.02 and ``--resamples`` bootstrap resamples / sign vectors.

Figures, each with its simulation error (1.96 * sqrt(r (1 - r) / sims)):

1. A/A false-regression rate: both sides draw from the same p_i. The rate of
   ``verdict == regression`` must be <= 0.05.
2. Interval coverage (checked for T >= 100): the fraction of simulations whose interval
   contains the true effect, i.e. the mean over the T drawn problems of the true rate
   difference (0 in the A/A runs; the realized drop in the power runs). Must be within
   1.5 points of the nominal 95%.
3. Power: the MDE is estimated from the A/A runs (their mean reported ``mde``). Then the
   candidate's rates are ``max(p_i - delta, 0)``. Clipping at 0 makes the realized drop
   ``mean_i min(p_i, delta)`` smaller than ``delta``, so ``delta`` is solved per
   simulation (bisection) to make the realized mean drop exactly 2 x MDE. The regression
   verdict must come back >= 80% of the time.
   An extra [info] line runs the same at a realized drop of 1 x MDE and reports how often
   the drop is detected as significant (the MDE's definition predicts about 80%; the
   regression verdict there also needs effect <= -threshold, so it is not checked).

    python bench/calibration.py [--sims 2000 --problems 200 --rollouts 8 --seed 0]
                                [--resamples 2000 --workers 2]

Exit status 0 when every checked figure is within its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

import numpy as np

from rolleval.compare import PairedInput, Verdict, paired_compare

ALPHA = 0.05
THRESHOLD = 0.02
NOMINAL = 0.95


class Settings(NamedTuple):
    problems: int
    rollouts: int
    resamples: int
    seed: int


class Outcome(NamedTuple):
    regression: np.ndarray  # bool per simulation
    significant_drop: np.ndarray  # significant and effect < 0
    covered: np.ndarray  # ci_low <= true effect <= ci_high
    mde: np.ndarray


def realized_shift(p: np.ndarray, drop: float) -> float:
    """``delta`` with ``mean(min(p, delta)) == drop`` (the mean drop of ``max(p - delta, 0)``)."""
    if drop <= 0.0:
        return 0.0
    lo, hi = 0.0, float(p.max())
    if np.mean(np.minimum(p, hi)) < drop:
        raise ValueError(f"a mean drop of {drop} exceeds the mean rate {p.mean()}")
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if np.mean(np.minimum(p, mid)) < drop:
            lo = mid
        else:
            hi = mid
    return hi


def simulate(settings: Settings, scenario: int, drop: float, sims: range) -> Outcome:
    """Run ``paired_compare`` on simulations ``sims`` of one scenario (true mean drop ``drop``)."""
    t, k = settings.problems, settings.rollouts
    n = np.full(t, k)
    out = {name: np.zeros(len(sims), dtype=bool) for name in Outcome._fields[:3]}
    mde = np.full(len(sims), np.nan)
    for j, sim in enumerate(sims):
        seq = np.random.SeedSequence([settings.seed, scenario, sim])
        rng = np.random.default_rng(seq)
        p = rng.beta(2.0, 2.0, t)
        q = np.maximum(p - realized_shift(p, drop), 0.0) if drop > 0 else p
        true_effect = float(np.mean(q - p))  # candidate - baseline, higher is better
        cb, cc = rng.binomial(k, p), rng.binomial(k, q)
        inp = PairedInput(
            cb / k, cc / k, c_baseline=cb, n_baseline=n, c_candidate=cc, n_candidate=n
        )
        res = paired_compare(
            inp,
            threshold=THRESHOLD,
            alpha=ALPHA,
            n_resamples=settings.resamples,
            rng=int(seq.generate_state(1)[0]),
        )
        out["regression"][j] = res.verdict is Verdict.REGRESSION
        out["significant_drop"][j] = res.significant and res.effect < 0
        out["covered"][j] = res.ci_low <= true_effect <= res.ci_high
        mde[j] = np.nan if res.mde is None else res.mde
    return Outcome(mde=mde, **out)


def run(settings: Settings, scenario: int, drop: float, sims: int, pool) -> Outcome:
    """All ``sims`` simulations of a scenario, in chunks over the process pool."""
    chunk = max(1, math.ceil(sims / (8 * max(1, pool._max_workers))))  # ~8 chunks per worker
    ranges = [range(s, min(s + chunk, sims)) for s in range(0, sims, chunk)]
    parts = list(pool.map(simulate, *zip(*[(settings, scenario, drop, r) for r in ranges])))
    return Outcome(*(np.concatenate([getattr(o, f) for o in parts]) for f in Outcome._fields))


def rate(x: np.ndarray) -> tuple[float, float]:
    r = float(np.mean(x))
    return r, 1.96 * math.sqrt(r * (1.0 - r) / x.size)


def line(label: str, x: np.ndarray, target: str, ok: bool | None) -> str:
    r, err = rate(x)
    tag = "info" if ok is None else ("ok" if ok else "FAIL")
    return f"calibration: {label} {r:.3f} ± {err:.3f} ({target}) [{tag}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=2000, help="simulations per scenario")
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=2000, help="n_resamples of each compare")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    settings = Settings(args.problems, args.rollouts, args.resamples, args.seed)
    print(
        f"calibration: T={args.problems} problems, K={args.rollouts} rollouts, p_i ~ Beta(2, 2), "
        f"alpha={ALPHA}, threshold={THRESHOLD}, B={args.resamples}, sims={args.sims}, "
        f"seed={args.seed}, workers={args.workers}"
    )
    start = time.perf_counter()
    results: list[bool] = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        aa = run(settings, 0, 0.0, args.sims, pool)
        mde = float(np.nanmean(aa.mde))
        at2 = run(settings, 2, 2.0 * mde, args.sims, pool)
        at1 = run(settings, 1, mde, args.sims, pool)

    r_aa = rate(aa.regression)[0]
    results.append(r_aa <= ALPHA)
    print(line("A/A false-regression rate", aa.regression, f"target <= {ALPHA}", results[-1]))

    check_cov = args.problems >= 100
    for label, outcome in (("A/A", aa), (f"drop 2xMDE={2 * mde:.4f}", at2)):
        cov = rate(outcome.covered)[0]
        ok = abs(cov - NOMINAL) <= 0.015 if check_cov else None
        if ok is not None:
            results.append(ok)
        target = f"target {NOMINAL} ± 0.015" + ("" if check_cov else ", not checked: T < 100")
        print(
            line(
                f"{NOMINAL:.0%} CI coverage of the true effect, {label},",
                outcome.covered,
                target,
                ok,
            )
        )

    print(f"calibration: pilot MDE (mean over the A/A runs, power 0.8) {mde:.4f}")
    results.append(rate(at2.regression)[0] >= 0.80)
    print(
        line(
            f"power: regression verdict at a realized drop of 2xMDE = {2 * mde:.4f}",
            at2.regression,
            "target >= 0.80",
            results[-1],
        )
    )
    print(
        line(
            f"significant drop at a realized drop of 1xMDE = {mde:.4f}",
            at1.significant_drop,
            "about 0.80 by the MDE's definition",
            None,
        )
    )
    print(
        line(
            f"regression verdict at 1xMDE = {mde:.4f} (needs effect <= -{THRESHOLD} too)",
            at1.regression,
            "not checked",
            None,
        )
    )
    print(f"calibration: {3 * args.sims} comparisons in {time.perf_counter() - start:.0f} s")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
