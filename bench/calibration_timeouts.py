"""Calibration of the timeout rule (issue 10, defect 3), to be folded into bench/calibration.py.

Scenario: baseline and candidate are the same model (p_i ~ Beta(2, 2) on T problems, K
rollouts each), but the candidate's *wrong* rollouts time out with probability ``share``
(long generations are the ones that time out). Each simulation builds both sides' records
(``build_task_table``: the reader every report and comparison uses), turns them into frames
(``frame_from_table``) and compares them with ``compare_frames``, at the threshold 0.02 and
alpha 0.05. Three readings of the same records:

* ``failure`` (the default): a timeout counts as a failure. The candidate is the baseline's
  equal, so "improvement" must be as rare as a false claim in an A/A comparison: target
  <= alpha/2 + 2 SE.
* ``excluded`` without the worst-case bound (the old rule, shown for contrast): timeouts
  are left out, which keeps the candidate's easy rollouts and calls it better.
* ``excluded`` with the bound: the unjudged shares differ by more than the threshold, so
  the verdict must survive the worst case of the missing rollouts; "improvement" must not
  be given (target <= alpha/2 + 2 SE).

    python bench/calibration_timeouts.py [--sims 1000 --problems 200 --rollouts 8
                                          --share 0.3 --resamples 1000 --seed 0]

Exit 0 when both checked rates are within target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from rolleval.compare._frame import frame_from_table
from rolleval.compare._paired import paired_compare
from rolleval.compare._per_task import compare_frames
from rolleval.rundir._table import build_task_table

ALPHA = 0.05
THRESHOLD = 0.02


def _records(correct: np.ndarray, timed_out: np.ndarray) -> tuple[list[dict], list[dict]]:
    t, k = correct.shape
    prompts = [{"problem_id": f"p{i:05d}", "content_hash": f"h{i:05d}"} for i in range(t)]
    judgements: list[dict[str, Any]] = []
    for i in range(t):
        for j in range(k):
            if timed_out[i, j]:
                judgements.append({"problem_id": f"p{i:05d}", "index": j, "status": "timeout"})
                continue
            ok = bool(correct[i, j])
            judgements.append(
                {
                    "problem_id": f"p{i:05d}",
                    "index": j,
                    "status": "ok",
                    "correct": ok,
                    "extracted": "1" if ok else "2",
                    "cluster": 0 if ok else 1,
                }
            )
    return prompts, judgements


def _frame(correct: np.ndarray, timed_out: np.ndarray, policy: str):
    prompts, judgements = _records(correct, timed_out)
    table = build_task_table(prompts, judgements, requested=correct.shape[1])
    settings = {"name": "sim", "grader_identity": "sim", "timeout_policy": policy}
    return frame_from_table(table, settings, source=policy)


def timeout_scenario(
    *,
    sims: int = 1000,
    problems: int = 200,
    rollouts: int = 8,
    share: float = 0.3,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Verdict counts of the three readings over ``sims`` simulations (see the module doc)."""
    counts: dict[str, dict[str, int]] = {
        "failure": {},
        "excluded_without_bound": {},
        "excluded_with_bound": {},
    }
    effects: dict[str, list[float]] = {k: [] for k in counts}
    for sim in range(sims):
        rng = np.random.default_rng(np.random.SeedSequence([seed, 31, sim]))
        p = rng.beta(2.0, 2.0, problems)
        base = rng.random((problems, rollouts)) < p[:, None]
        cand = rng.random((problems, rollouts)) < p[:, None]
        timed_out = ~cand & (rng.random((problems, rollouts)) < share)
        none = np.zeros_like(base)
        kw = {"threshold": THRESHOLD, "alpha": ALPHA, "n_resamples": resamples, "rng": sim}
        for policy in ("failure", "excluded"):
            fb, fc = _frame(base, none, policy), _frame(cand, timed_out, policy)
            tc = compare_frames(fb, fc, **kw)
            key = "failure" if policy == "failure" else "excluded_with_bound"
            verdict = tc.comparison.verdict
            counts[key][verdict] = counts[key].get(verdict, 0) + 1
            effects[key].append(float(tc.comparison.effect))
            if policy == "excluded":
                # the same comparison before the bound: the plain paired verdict
                raw = paired_compare(
                    _input(fb, fc),
                    threshold=THRESHOLD,
                    alpha=ALPHA,
                    n_resamples=resamples,
                    rng=sim,
                )
                v = raw.verdict
                counts["excluded_without_bound"][v] = counts["excluded_without_bound"].get(v, 0) + 1
                effects["excluded_without_bound"].append(float(raw.effect))
    return {
        "sims": sims,
        "problems": problems,
        "rollouts": rollouts,
        "share": share,
        "counts": counts,
        "mean_effect": {k: float(np.mean(v)) for k, v in effects.items()},
    }


def _input(fb, fc):
    from rolleval.compare import PairedInput

    return PairedInput(fb.value("pass@1"), fc.value("pass@1"))


def _rate(n: int, sims: int) -> tuple[float, float]:
    r = n / sims
    return r, 2.0 * math.sqrt(max(r * (1.0 - r), 1.0 / sims) / sims)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--share", type=float, default=0.3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    res = timeout_scenario(
        sims=args.sims,
        problems=args.problems,
        rollouts=args.rollouts,
        share=args.share,
        resamples=args.resamples,
        seed=args.seed,
    )
    print(
        f"calibration-timeouts: T={args.problems}, K={args.rollouts}, p_i ~ Beta(2, 2), the "
        f"candidate's wrong rollouts time out with probability {args.share}, alpha={ALPHA}, "
        f"threshold={THRESHOLD}, B={args.resamples}, sims={args.sims}, seed={args.seed}"
    )
    ok = True
    for key, checked in (
        ("failure", True),
        ("excluded_without_bound", False),
        ("excluded_with_bound", True),
    ):
        n = res["counts"][key].get("improvement", 0)
        r, se2 = _rate(n, args.sims)
        good = r <= ALPHA / 2 + se2
        ok &= good or not checked
        tag = ("ok" if good else "FAIL") if checked else "info"
        verdicts = ", ".join(f"{v} {c}" for v, c in sorted(res["counts"][key].items()))
        print(
            f"calibration-timeouts: {key}: improvement {r:.3f} ± {se2:.3f} "
            f"(mean effect {res['mean_effect'][key]:+.4f}; {verdicts}) "
            f"({'target <= alpha/2 + 2 SE' if checked else 'not checked'}) [{tag}]"
        )
    print(
        f"calibration-timeouts: {3 * args.sims} comparisons in {time.perf_counter() - start:.0f} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
