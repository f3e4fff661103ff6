"""Calibration of the truncation rule (issue 19): a rollout cut at max_tokens mid-thought is a
completed, wrong rollout in every denominator.

Each simulation builds both sides' judgement records as the runner writes them (a truncated
rollout: status ``ok``, ``finish_reason: length``, nothing extracted, ``in_thought``), reads
them with ``build_task_table`` (the reader every report and comparison uses), turns them into
frames (``frame_from_table``) and compares them with ``compare_frames`` at the threshold 0.02
and alpha 0.05. True per-problem rates p_i ~ Beta(2, 2); a rollout is right with probability
p_i unless truncated (then wrong, whatever it would have said).

* ``aa``: both sides truncate 20% of their rollouts (the same model, a tight budget on
  both). The regression verdict must be as rare as in any A/A comparison: <= alpha/2 + 2 SE.
* ``power``: the baseline truncates 5% of its rollouts, the candidate 35% (30 points more:
  the issue's candidate that runs out of budget in thought). The size comes from ``plan``'s
  rule (``required_problems(..., threshold=threshold)`` for power 0.8, with the paired variance
  components of one pilot pair of runs at T = 200); at that size the regression verdict must
  be called at the power the plan predicts: >= 0.80 - 2 SE. (Before issue 19 these rollouts
  were infra errors, excluded from the denominator: the drop was invisible.)
* ``power10``: the same with the baseline truncating 10% and the candidate 20% (a drop of
  0.05, so the planned size is in the usual range, T of about 190).
* ``small``: the planner's predicted power at small sizes (T = 10, 19, 40) against the power
  simulated here, for the ``power`` scenario. The prediction is ``plan``'s: at 100 problems
  or fewer, a simulation of compare's rule on runs drawn from the pilot pair
  (``rolleval.compare._simulated_power``), ``--sims`` draws of its own seed stream. The two must
  agree within 2 SE of their difference; the normal and the t (T - 1 degrees of freedom)
  approximations are printed beside them for reference.

The ``power`` sizes are ``plan``'s: the normal size, then, at 100 problems or fewer, grown
until the simulated rule reaches 0.80 (``small_sample_problems``).

    python bench/calibration_truncation.py [--sims 2000 --problems 200 --rollouts 8
                                            --resamples 2000 --seed 0]
                                           [--only aa,power,power10,small]

Exit 0 when every checked rate is within its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from rolleval.compare._frame import frame_from_table
from rolleval.compare._per_task import compare_frames
from rolleval.compare._simulated_power import (
    SMALL_T,
    SimulatedPower,
    TruthModel,
    regression_power_by_simulation,
    small_sample_problems,
    truth_model,
)
from rolleval.rundir._table import build_task_table
from rolleval.stats import paired_variance_components, regression_power, required_problems

ALPHA = 0.05
THRESHOLD = 0.02
AA_SHARE = 0.20
#: (baseline share, candidate share) of each power scenario.
POWER = {"power": (0.05, 0.35), "power10": (0.10, 0.20)}


def _records(correct: np.ndarray, truncated: np.ndarray) -> tuple[list[dict], list[dict]]:
    t, k = correct.shape
    prompts = [{"problem_id": f"p{i:05d}", "content_hash": f"h{i:05d}"} for i in range(t)]
    judgements: list[dict[str, Any]] = []
    for i in range(t):
        for j in range(k):
            row: dict[str, Any] = {"problem_id": f"p{i:05d}", "index": j, "status": "ok"}
            if truncated[i, j]:
                row.update(correct=False, finish_reason="length", in_thought=True)
            else:
                ok = bool(correct[i, j])
                row.update(
                    correct=ok,
                    extracted="1" if ok else "2",
                    cluster=0 if ok else 1,
                    finish_reason="stop",
                )
            judgements.append(row)
    return prompts, judgements


def _frame(correct: np.ndarray, truncated: np.ndarray, side: str) -> Any:
    prompts, judgements = _records(correct, truncated)
    table = build_task_table(prompts, judgements, requested=correct.shape[1])
    settings = {"name": "sim", "grader_identity": "sim"}
    return frame_from_table(table, settings, source=side)


def _sides(
    rng: np.random.Generator, t: int, k: int, base_share: float, cand_share: float
) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    p = rng.beta(2.0, 2.0, t)
    base = rng.random((t, k)) < p[:, None]
    cand = rng.random((t, k)) < p[:, None]
    tb = rng.random((t, k)) < base_share
    tc = rng.random((t, k)) < cand_share
    return _frame(base, tb, "baseline"), _frame(cand, tc, "candidate"), base & ~tb, cand & ~tc


class Plan(NamedTuple):
    normal: int
    planned: int
    predicted: SimulatedPower | None
    delta: float
    variance: float
    truth: TruthModel


def planned_size(name: str, *, rollouts: int, seed: int, resamples: int, sims: int) -> Plan:
    """The plan's size for power scenario ``name`` from one pilot pair at T = 200: the
    expected drop delta = (candidate share - baseline share) * E[p] and the pilot's paired
    variance components give the normal size; at SMALL_T problems or fewer it grows until
    the simulated rule reaches 0.80 (as ``rolleval plan`` does)."""
    base_share, cand_share = POWER[name]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 19, 0]))
    _, _, b, c = _sides(rng, 200, rollouts, base_share, cand_share)
    n = np.full(200, rollouts)
    vc = paired_variance_components(b.sum(1), n, c.sum(1), n)
    kw = vc.power_kwargs()
    variance = (
        kw["omega2"]
        + kw["sigma2_baseline"] / kw["n_rollouts_baseline"]
        + kw["sigma2_candidate"] / kw["n_rollouts_candidate"]
    )
    delta = (cand_share - base_share) * 0.5
    normal = required_problems(delta, alpha=ALPHA, power=0.8, threshold=THRESHOLD, **kw)
    truth = truth_model(b.sum(1), n, delta, c.sum(1), n)
    if normal > SMALL_T:
        return Plan(normal, normal, None, delta, variance, truth)
    sim = small_sample_problems(
        truth,
        normal,
        power=0.8,
        threshold=THRESHOLD,
        alpha=ALPHA,
        n_resamples=resamples,
        n_sims=sims,
        rng=seed,
    )
    return Plan(normal, sim.problems, sim, delta, variance, truth)


def scenario(
    name: str, *, sims: int, problems: int, rollouts: int, resamples: int, seed: int
) -> dict[str, int]:
    """Verdict counts of ``sims`` comparisons of scenario ``name`` (``aa`` or a power one)."""
    shares = (AA_SHARE, AA_SHARE) if name == "aa" else POWER[name]
    stream = 1 + ["aa", *POWER].index(name)
    counts: dict[str, int] = {}
    for sim in range(sims):
        rng = np.random.default_rng(np.random.SeedSequence([seed, 19, stream, sim]))
        fb, fc, _, _ = _sides(rng, problems, rollouts, *shares)
        tc = compare_frames(
            fb, fc, threshold=THRESHOLD, alpha=ALPHA, n_resamples=resamples, rng=sim
        )
        v = tc.comparison.verdict
        counts[v] = counts.get(v, 0) + 1
    return counts


def _line(label: str, hits: int, sims: int, target: float, at_most: bool) -> bool:
    r = hits / sims
    se = math.sqrt(r * (1 - r) / sims)
    ok = r <= target + 2 * se if at_most else r >= target - 2 * se
    sign = "<=" if at_most else ">="
    print(
        f"calibration: {label} {r:.3f} (SE {se:.3f}) "
        f"[target {sign} {target} {'+' if at_most else '-'} 2 SE] [{'ok' if ok else 'FAIL'}]",
        flush=True,
    )
    return ok


SMALL_SIZES = (10, 19, 40)


def _small_row(plan: Plan, t: int, args: argparse.Namespace, common: dict) -> bool:
    """Predicted (the plan's simulated rule, from the pilot) against simulated power at
    ``t`` problems: within 2 SE of the difference."""
    pred = regression_power_by_simulation(
        plan.truth,
        t,
        threshold=THRESHOLD,
        alpha=ALPHA,
        n_resamples=args.resamples,
        n_sims=args.sims,
        rng=args.seed + 1000,
    )
    counts = scenario("power", problems=t, seed=args.seed, **common)
    r = counts.get("regression", 0) / args.sims
    se = math.sqrt(r * (1 - r) / args.sims)
    both = math.sqrt(se * se + pred.se * pred.se)
    ok = abs(r - pred.power) <= 2 * both
    s = math.sqrt(plan.variance / t)
    normal = regression_power(plan.delta, se=s, threshold=THRESHOLD, alpha=ALPHA)
    nc = plan.delta / s
    t_power = float(stats.nct.sf(stats.t.ppf(1 - ALPHA / 2, t - 1), t - 1, nc))
    print(
        f"calibration: T={t}, baseline truncates 5%, candidate 35%: regression {r:.3f} "
        f"(SE {se:.3f}); plan predicts {pred.power:.3f} (SE {pred.se:.3f}) "
        f"[target |difference| <= 2 SE = {2 * both:.3f}] [{'ok' if ok else 'FAIL'}]; "
        f"[info] normal {normal:.3f}, t with {t - 1} df {t_power:.3f}",
        flush=True,
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--problems", type=int, default=200)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="aa,power,power10,small")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    start = time.perf_counter()
    print(
        f"calibration: [truncation] alpha={ALPHA}, threshold={THRESHOLD}, B={args.resamples}, "
        f"sims={args.sims}, K={args.rollouts}, p_i ~ Beta(2, 2), seed={args.seed}"
    )
    results = []
    common = {"sims": args.sims, "rollouts": args.rollouts, "resamples": args.resamples}
    if "aa" in only:
        counts = scenario("aa", problems=args.problems, seed=args.seed, **common)
        results.append(
            _line(
                f"A/A, both sides truncate {AA_SHARE:.0%}, T={args.problems}: regression",
                counts.get("regression", 0),
                args.sims,
                ALPHA / 2,
                at_most=True,
            )
        )
        print(f"calibration:   verdicts {dict(sorted(counts.items()))}")
    plan_kw = {"rollouts": args.rollouts, "seed": args.seed, "resamples": args.resamples}
    for name in [n for n in POWER if n in only]:
        plan = planned_size(name, sims=args.sims, **plan_kw)
        counts = scenario(name, problems=plan.planned, seed=args.seed, **common)
        base_share, cand_share = POWER[name]
        predicted = (
            "normal approximation"
            if plan.predicted is None
            else f"simulated rule {plan.predicted.power:.3f}, normal size {plan.normal}"
        )
        results.append(
            _line(
                f"baseline truncates {base_share:.0%}, candidate {cand_share:.0%} "
                f"(expected drop {plan.delta:.3f}), planned T={plan.planned} ({predicted}): "
                "regression",
                counts.get("regression", 0),
                args.sims,
                0.80,
                at_most=False,
            )
        )
        print(f"calibration:   verdicts {dict(sorted(counts.items()))}")
    if "small" in only:
        plan = planned_size("power", sims=args.sims, **plan_kw)
        for t in SMALL_SIZES:
            results.append(_small_row(plan, t, args, common))
    print(f"calibration: done in {time.perf_counter() - start:.0f} s")
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
