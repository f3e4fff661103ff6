"""Calibration study of rolleval.compare.paired_compare (not part of the fast test suite).

Every figure is a rate over simulations, printed with its Monte Carlo standard error
``SE = sqrt(r (1 - r) / sims)``; a check passes when the rate is within its target allowing
two SEs (``<= target + 2 SE`` or ``>= target - 2 SE``). alpha = 0.05, threshold = 0.02,
``--resamples`` bootstrap resamples / sign vectors per comparison.

Main design (rows 1-3, unchanged from before issue 10): T problems (``--problems``) with true
per-problem success rates p_i ~ Beta(2, 2), K rollouts (``--rollouts``) per problem on each
side, pass@1 = Binomial(K, rate_i) / K, compared with counts (Miller's variance components).

1. A/A false-regression rate: both sides draw from the same p_i; ``regression`` <= 0.05.
2. Interval coverage of the true effect (mean over the T drawn problems of the true rate
   difference): within 1.5 points of 95% (checked for T >= 100), A/A and at 2 x MDE.
3. Power: regression verdict at a realized mean drop of 2 x MDE (the MDE estimated from the
   A/A runs; the shift is solved per simulation so that the drop after clipping at 0 is
   exact) >= 0.80. [info]: significance and the verdict at 1 x MDE.

Issue 10 settings:

4. False equivalence at a true drop of 2 x threshold = 0.04: n = 1 and n = 4 rollouts at
   T = 6, 10, 20 (p_i ~ Beta(2, 2)), and saturated problems (baseline rate 1, candidate
   0.96) at T = 6, 10, 20, 100, n = 4. ``equivalent_within_threshold`` <= 0.025 + 2 SE.
5. A/A false regression of maj@n and self-consistency with n = 16 against n = 4, T = 100:
   each rollout answers correctly with probability p_i ~ Beta(2, 2), else one of three wrong
   answers; compared at the common k = 4 (exact subset estimator). <= 0.025 + 2 SE.
6. Declared clusters: C = 30 subjects of 10 problems, p_i = 0.3 + 0.4 Beta(2, 2), the
   candidate shifted by a subject effect e_c ~ N(0, 0.08^2) (population effect 0).
   Coverage of 0 by the interval >= 0.93 and false regression <= 0.025 + 2 SE with the
   clusters declared; [info] the same without them (the defect).
7. Plan: sizes from one pilot run (T = 200, K = 8, Beta(2, 2)) for the regression verdict at
   a true drop delta against threshold (``required_problems(..., threshold=threshold)``, omega2 = 0), then
   comparisons at that size with the realized mean drop delta: the regression verdict
   >= 0.80 - 2 SE. delta = 0.03 (significance binds) and 0.025 (the threshold binds).
8. [info] Equivalence stays reachable: the share of A/A comparisons (K = 8, Beta(2, 2))
   called equivalent at T = 1000 and 2000.
9. The sequential design (issue 24): ``bench/calibration_sequential.py`` says what (A/A
   false regression looked at after every problem, power and problems used at drops of
   1x, 2x, 4x threshold beside the fixed design at the same budget ``--seq-problems``).

    python bench/calibration.py [--sims 2000 --problems 200 --rollouts 8 --seed 0]
                                [--resamples 2000 --workers 2] [--only main,equiv,...]

Exit status 0 when every checked figure is within its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from rolleval.compare import PairedInput, paired_compare
from rolleval.metrics._vote import votes_at_k
from rolleval.stats import required_problems, variance_components

ALPHA = 0.05
THRESHOLD = 0.02
NOMINAL = 0.95
GROUPS = ("main", "equiv", "vote", "cluster", "plan", "reach", "timeout", "sequential")


class Settings(NamedTuple):
    problems: int
    rollouts: int
    resamples: int
    seed: int


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


def _rng(settings: Settings, scenario: str, sim: int) -> tuple[np.random.Generator, int]:
    key = [settings.seed, sim, *scenario.encode()]
    seq = np.random.SeedSequence(key)
    return np.random.default_rng(seq), int(seq.generate_state(1)[0])


def _binomial_compare(
    settings: Settings, p: np.ndarray, q: np.ndarray, k: int, rng: np.random.Generator, seed: int
) -> Any:
    t = p.size
    n = np.full(t, k)
    cb, cc = rng.binomial(k, p), rng.binomial(k, q)
    inp = PairedInput(
        cb / k,
        cc / k,
        c_baseline=cb,
        n_baseline=n,
        c_candidate=cc,
        n_candidate=n,
        value_range=(0.0, 1.0),
    )
    return paired_compare(
        inp, threshold=THRESHOLD, alpha=ALPHA, n_resamples=settings.resamples, rng=seed
    )


# ------------------------------------------------------------------- scenarios
# Each returns a dict of per-simulation arrays for simulations ``sims``.


def main_design(settings: Settings, drop: float, sims: range) -> dict[str, np.ndarray]:
    """Rows 1-3: Beta(2, 2) rates, K rollouts, a realized mean drop ``drop``."""
    t, k = settings.problems, settings.rollouts
    out = {f: np.zeros(len(sims), bool) for f in ("regression", "significant_drop", "covered")}
    out["mde"] = np.full(len(sims), np.nan)
    for j, sim in enumerate(sims):
        rng, seed = _rng(settings, f"main{drop}", sim)
        p = rng.beta(2.0, 2.0, t)
        q = np.maximum(p - realized_shift(p, drop), 0.0) if drop > 0 else p
        true_effect = float(np.mean(q - p))
        res = _binomial_compare(settings, p, q, k, rng, seed)
        out["regression"][j] = res.verdict == "regression"
        out["significant_drop"][j] = res.significant and res.effect < 0
        out["covered"][j] = res.ci_low <= true_effect <= res.ci_high
        out["mde"][j] = np.nan if res.mde is None else res.mde
    return out


def false_equivalence(
    settings: Settings, t: int, k: int, saturated: bool, sims: range
) -> dict[str, np.ndarray]:
    """Row 4: a true mean drop of 2 threshold; how often is it called equivalent?"""
    drop = 2 * THRESHOLD
    out = {"equivalent": np.zeros(len(sims), bool), "regression": np.zeros(len(sims), bool)}
    for j, sim in enumerate(sims):
        rng, seed = _rng(settings, f"equiv{t},{k},{saturated}", sim)
        if saturated:
            p = np.ones(t)
            q = p - drop
        else:
            p = rng.beta(2.0, 2.0, t)
            q = np.maximum(p - realized_shift(p, drop), 0.0)
        res = _binomial_compare(settings, p, q, k, rng, seed)
        out["equivalent"][j] = res.verdict == "equivalent_within_threshold"
        out["regression"][j] = res.verdict == "regression"
    return out


def _votes(rng: np.random.Generator, p: np.ndarray, n: int) -> list[Any]:
    """Answer-cluster signatures: correct with rate p_i, else one of three wrong answers."""
    sigs = []
    for pi in p.tolist():
        right = int(rng.binomial(n, pi))
        wrong = rng.multinomial(n - right, [1 / 3] * 3)
        clusters = [(right, True)] if right else []
        clusters += [(int(w), False) for w in wrong if w]
        sigs.append((tuple(sorted(clusters)), 0))
    return sigs


def vote_aa(
    settings: Settings, t: int, n_big: int, n_small: int, sims: range
) -> dict[str, np.ndarray]:
    """Row 5: A/A of maj@n and self-consistency, n_big rollouts against n_small."""
    out = {m: np.zeros(len(sims), bool) for m in ("maj", "sc")}
    for j, sim in enumerate(sims):
        rng, seed = _rng(settings, f"vote{t},{n_big},{n_small}", sim)
        p = rng.beta(2.0, 2.0, t)
        big, small = _votes(rng, p, n_big), _votes(rng, p, n_small)
        k = np.full(t, min(n_big, n_small))
        maj_b, sc_b = votes_at_k(big, k)
        maj_c, sc_c = votes_at_k(small, k)
        for name, vb, vc in (("maj", maj_b, maj_c), ("sc", sc_b, sc_c)):
            res = paired_compare(
                PairedInput(vb, vc, value_range=(0.0, 1.0)),
                threshold=THRESHOLD,
                alpha=ALPHA,
                n_resamples=settings.resamples,
                rng=seed,
            )
            out[name][j] = res.verdict == "regression"
    return out


def clustered(
    settings: Settings, n_clusters: int, per: int, spread: float, sims: range
) -> dict[str, np.ndarray]:
    """Row 6: subject-level effects with population mean 0; clusters declared or not."""
    t = n_clusters * per
    k = settings.rollouts
    fields = ("covered", "regression", "covered_flat", "regression_flat")
    out = {f: np.zeros(len(sims), bool) for f in fields}
    labels = [f"s{i // per}" for i in range(t)]
    for j, sim in enumerate(sims):
        rng, seed = _rng(settings, f"cluster{n_clusters},{per},{spread}", sim)
        p = 0.3 + 0.4 * rng.beta(2.0, 2.0, t)
        effect = np.clip(rng.normal(0.0, spread, n_clusters), -0.25, 0.25)  # symmetric: mean 0
        q = p + np.repeat(effect, per)
        n = np.full(t, k)
        cb, cc = rng.binomial(k, p), rng.binomial(k, q)
        for suffix, clusters in (("", labels), ("_flat", None)):
            res = paired_compare(
                PairedInput(cb / k, cc / k, value_range=(0.0, 1.0), clusters=clusters),
                threshold=THRESHOLD,
                alpha=ALPHA,
                n_resamples=settings.resamples,
                rng=seed,
            )
            out["covered" + suffix][j] = res.ci_low <= 0.0 <= res.ci_high
            out["regression" + suffix][j] = res.verdict == "regression"
        del n
    return out


def reachable(settings: Settings, t: int, k: int, sims: range) -> dict[str, np.ndarray]:
    """Row 8 [info]: how often an A/A comparison of a large design is called equivalent."""
    out = {"equivalent": np.zeros(len(sims), bool)}
    for j, sim in enumerate(sims):
        rng, seed = _rng(settings, f"reach{t},{k}", sim)
        p = rng.beta(2.0, 2.0, t)
        res = _binomial_compare(settings, p, p, k, rng, seed)
        out["equivalent"][j] = res.verdict == "equivalent_within_threshold"
    return out


def planned_size(settings: Settings, delta: float) -> int:
    """The plan from one pilot run: T = 200, K = rollouts, Beta(2, 2), omega2 = 0."""
    rng, _ = _rng(settings, "pilot", 0)
    k = settings.rollouts
    c = rng.binomial(k, rng.beta(2.0, 2.0, 200))
    vc = variance_components(c, np.full(200, k))
    return required_problems(
        delta,
        omega2=0.0,
        sigma2_baseline=vc.within,
        n_rollouts_baseline=vc.n_rollouts,
        sigma2_candidate=vc.within,
        n_rollouts_candidate=vc.n_rollouts,
        alpha=ALPHA,
        power=0.8,
        threshold=THRESHOLD,
    )


def plan_power(settings: Settings, t: int, delta: float, sims: range) -> dict[str, np.ndarray]:
    """Row 7: the regression verdict at the planned size and a realized drop delta."""
    out = {"regression": np.zeros(len(sims), bool)}
    for j, sim in enumerate(sims):
        rng, seed = _rng(settings, f"plan{t},{delta}", sim)
        p = rng.beta(2.0, 2.0, t)
        q = np.maximum(p - realized_shift(p, delta), 0.0)
        res = _binomial_compare(settings, p, q, settings.rollouts, rng, seed)
        out["regression"][j] = res.verdict == "regression"
    return out


# ------------------------------------------------------------------- machinery


def run(
    fn: Callable[..., dict[str, np.ndarray]], args: tuple, sims: int, pool
) -> dict[str, np.ndarray]:
    """All ``sims`` simulations of ``fn(*args, sims=range)``, in chunks over the pool."""
    chunk = max(1, math.ceil(sims / (8 * max(1, pool._max_workers))))
    ranges = [range(s, min(s + chunk, sims)) for s in range(0, sims, chunk)]
    parts = list(pool.map(_call, [(fn, args, r) for r in ranges]))
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def _call(job: tuple) -> dict[str, np.ndarray]:
    fn, args, sims = job
    return fn(*args, sims)


def rate(x: np.ndarray) -> tuple[float, float]:
    """The rate and its Monte Carlo standard error."""
    r = float(np.mean(x))
    return r, math.sqrt(r * (1.0 - r) / x.size)


class Report:
    def __init__(self) -> None:
        self.results: list[bool] = []

    def line(self, label: str, x: np.ndarray, target: str, ok: bool | None) -> None:
        r, se = rate(x)
        tag = "info" if ok is None else ("ok" if ok else "FAIL")
        if ok is not None:
            self.results.append(ok)
        print(f"calibration: {label} {r:.3f} (SE {se:.3f}) [{target}] [{tag}]", flush=True)

    def at_most(self, label: str, x: np.ndarray, limit: float) -> None:
        r, se = rate(x)
        self.line(label, x, f"target <= {limit} + 2 SE", r <= limit + 2 * se)

    def at_least(self, label: str, x: np.ndarray, limit: float) -> None:
        r, se = rate(x)
        self.line(label, x, f"target >= {limit} - 2 SE", r >= limit - 2 * se)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=2000, help="simulations per scenario")
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=2000, help="n_resamples of each compare")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--only", default=",".join(GROUPS), help=f"subset of {','.join(GROUPS)}")
    parser.add_argument(
        "--seq-problems", type=int, default=1000, help="budget of the sequential rows"
    )
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    settings = Settings(args.problems, args.rollouts, args.resamples, args.seed)
    sims = args.sims
    print(
        f"calibration: alpha={ALPHA}, threshold={THRESHOLD}, B={args.resamples}, sims={sims} "
        f"per scenario, seed={args.seed}, workers={args.workers}; rates with their Monte "
        "Carlo SE"
    )
    rep = Report()
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        if "main" in only:
            print(
                f"calibration: [main] T={args.problems} problems, K={args.rollouts} rollouts, "
                "p_i ~ Beta(2, 2)"
            )
            aa = run(main_design, (settings, 0.0), sims, pool)
            mde = float(np.nanmean(aa["mde"]))
            at2 = run(main_design, (settings, 2.0 * mde), sims, pool)
            at1 = run(main_design, (settings, mde), sims, pool)
            rep.at_most("A/A false-regression rate", aa["regression"], ALPHA)
            check_cov = args.problems >= 100
            for label, out in (("A/A", aa), (f"drop 2xMDE={2 * mde:.4f}", at2)):
                cov = rate(out["covered"])[0]
                ok = abs(cov - NOMINAL) <= 0.015 if check_cov else None
                rep.line(
                    f"{NOMINAL:.0%} CI coverage of the true effect, {label},",
                    out["covered"],
                    f"target {NOMINAL} +- 0.015" + ("" if check_cov else ", not checked: T < 100"),
                    ok,
                )
            print(f"calibration: pilot MDE (mean over the A/A runs, power 0.8) {mde:.4f}")
            rep.at_least(
                f"power: regression verdict at a realized drop of 2xMDE = {2 * mde:.4f}",
                at2["regression"],
                0.80,
            )
            rep.line(
                f"significant drop at a realized drop of 1xMDE = {mde:.4f}",
                at1["significant_drop"],
                "about 0.80 by the MDE's definition",
                None,
            )
            rep.line(
                f"regression verdict at 1xMDE = {mde:.4f} (needs effect <= -{THRESHOLD} too)",
                at1["regression"],
                "not checked",
                None,
            )
        if "equiv" in only:
            print("calibration: [equiv] a true drop of 2 x threshold = 0.04: false equivalence")
            for saturated, ks, ts in ((False, (1, 4), (6, 10, 20)), (True, (4,), (6, 10, 20, 100))):
                for k in ks:
                    for t in ts:
                        out = run(false_equivalence, (settings, t, k, saturated), sims, pool)
                        kind = "saturated (1 -> 0.96)" if saturated else "Beta(2, 2)"
                        rep.at_most(
                            f"false equivalence, {kind}, n={k}, T={t}", out["equivalent"], 0.025
                        )
                        rep.line(
                            f"  regression verdict there (n={k}, T={t})",
                            out["regression"],
                            "power, info",
                            None,
                        )
        if "vote" in only:
            print("calibration: [vote] A/A, 16 rollouts against 4, T=100, common k = 4")
            out = run(vote_aa, (settings, 100, 16, 4), sims, pool)
            rep.at_most("A/A false regression, maj@n (maj@4 on both sides)", out["maj"], 0.025)
            rep.at_most("A/A false regression, self-consistency at k = 4", out["sc"], 0.025)
        if "cluster" in only:
            print(
                f"calibration: [cluster] 30 subjects x 10 problems, subject effects N(0, 0.08^2), "
                f"K={args.rollouts}; population effect 0"
            )
            out = run(clustered, (settings, 30, 10, 0.08), sims, pool)
            rep.at_least(
                "coverage of 0, clusters declared (cluster bootstrap)", out["covered"], 0.93
            )
            rep.at_most("false regression, clusters declared", out["regression"], 0.025)
            rep.line(
                "coverage of 0, clusters ignored", out["covered_flat"], "the defect, info", None
            )
            rep.line("false regression, clusters ignored", out["regression_flat"], "info", None)
        if "plan" in only:
            print(
                f"calibration: [plan] pilot T=200, K={args.rollouts}; regression verdict, threshold={THRESHOLD}"
            )
            for delta in (0.03, 0.025):
                t = planned_size(settings, delta)
                out = run(
                    plan_power,
                    (
                        settings,
                        t,
                        delta,
                    ),
                    sims,
                    pool,
                )
                rep.at_least(
                    f"regression verdict at the planned T={t} for a true drop {delta}",
                    out["regression"],
                    0.80,
                )
        if "sequential" in only:
            from calibration_sequential import report_sequential  # bench/, beside this script

            report_sequential(rep, run, pool, settings, sims, args.seq_problems)
        if "reach" in only:
            print("calibration: [reach] equivalence is still reachable: A/A, K=8, Beta(2, 2)")
            for t in (1000, 2000):
                out = run(reachable, (settings, t, 8), sims, pool)
                rep.line(f"A/A called equivalent, T={t}", out["equivalent"], "info", None)
    if "timeout" in only:
        from calibration_timeouts import timeout_scenario  # bench/, beside this script

        print(
            "calibration: [timeout] A/A, the candidate's wrong rollouts time out with "
            f"probability 0.3, T={args.problems}, K={args.rollouts}"
        )
        res = timeout_scenario(
            sims=sims,
            problems=args.problems,
            rollouts=args.rollouts,
            resamples=args.resamples,
            seed=args.seed,
        )
        for key, label in (
            ("failure", "timeouts as failures (default)"),
            ("excluded_with_bound", "timeouts excluded, with the unjudged bound"),
        ):
            n = res["counts"][key].get("improvement", 0)
            rep.at_most(
                f"improvement called, {label}",
                np.arange(sims) < n,
                ALPHA / 2,
            )
    print(f"calibration: done in {time.perf_counter() - start:.0f} s")
    return 0 if all(rep.results) else 1


if __name__ == "__main__":
    sys.exit(main())
