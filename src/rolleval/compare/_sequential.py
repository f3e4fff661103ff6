"""The sequential decision rule: compare's verdict words from an anytime-valid sequence.

Pure functions. A sequential run (``rolleval run --until-decided``) looks after every round
at the hedged betting confidence sequence (:func:`rolleval.stats.betting_cs`) of the mean
paired difference ``d = candidate rate - baseline rate`` in ``[-1, 1]`` and stops at the
first look where the rule gives a verdict: a pass (exit 0) that no later look can undo, a
regression (the sequence excludes 0 and the effect is at most ``-threshold``, as in compare), or
the budget spent. ``docs/contract.md``, "Sequential comparison", states the rule and its
error guarantees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import EXIT_INCONCLUSIVE, EXIT_NEGATIVE, EXIT_OK
from ..stats import betting_capital
from ._rule import ComparisonVerdict, _at_most, verdict_exit_code, verdict_label

__all__ = [
    "SEQUENTIAL_DESIGN",
    "FirstDecision",
    "SequentialDecision",
    "first_decision",
    "sequential_overall",
    "sequential_summary",
    "sequential_verdict",
    "simulate_sequential",
    "stopped_line",
    "task_alpha",
]

#: The design's name in run files and in compare's ``method``.
SEQUENTIAL_DESIGN = "sequential"


@dataclass(frozen=True)
class SequentialDecision:
    """The verdict at one look: ``settled`` when the task stops here (see
    :func:`sequential_verdict`)."""

    verdict: ComparisonVerdict | None
    """The verdict word when settled (or at the budget), else None (keep going)."""
    settled: bool
    reason: str

    @property
    def exit_code(self) -> int | None:
        return None if self.verdict is None else verdict_exit_code(self.verdict)


def task_alpha(alpha: float, n_tasks: int) -> float:
    """Bonferroni: each of ``n_tasks`` sequences at ``alpha / n_tasks``. A union bound holds
    at any stopping time (each sequence is time-uniform); Holm's step-down does not carry
    over to optional stopping as it is."""
    return alpha / max(1, n_tasks)


def sequential_verdict(
    lower: float, upper: float, *, effect: float, threshold: float, spent: bool
) -> SequentialDecision:
    """The verdict at one look from the sequence's interval ``(lower, upper)`` of the mean
    ``d`` and ``effect``, the mean of ``d`` over the problems seen (what compare reports).

    The fixed design's words, with the sequence in place of the fixed-sample interval
    ("significant" = the sequence excludes 0). With ``threshold`` in the metric's units, in this order:

    ==================================================  ===============================  ====
    at this look                                        verdict (stop)                   exit
    ==================================================  ===============================  ====
    ``upper <= 0`` and ``lower >= -threshold``          ``significant_below_threshold``  0
    ``upper <= 0`` and ``effect <= -threshold``         ``regression``                   1
    ``lower >= 0``                                      ``improvement`` if ``effect >=   0
                                                        threshold``, else
                                                        ``significant_below_threshold``
    ``-threshold <= lower`` and ``upper <= threshold``  ``equivalent_within_threshold``  0
    otherwise, budget spent                             ``inconclusive``                 3
    otherwise                                           (none: look again)
    ==================================================  ===============================  ====

    An exit 0 at any look needs the sequence to exclude every drop of ``threshold`` or more, and a
    regression needs it to exclude 0: so a true drop of at least ``threshold`` passes, and a
    candidate no worse than BASE is called a regression, each with probability at most
    ``alpha / 2``, whenever the run stops (the sequence is time-uniform). A drop established
    but possibly below ``threshold`` with an estimate above ``-threshold`` keeps the run going (the fixed
    design's "significant, interval reaches -threshold": inconclusive).
    """
    threshold = float(threshold)
    if upper <= 0.0:
        if lower >= -threshold:
            return SequentialDecision(
                "significant_below_threshold",
                True,
                f"the sequence lies inside (-{threshold:g}, 0): a drop smaller than {threshold:g} is established",
            )
        if _at_most(effect, -threshold):
            return SequentialDecision(
                "regression",
                True,
                f"the sequence excludes 0 and the effect {effect:+.4f} is at most -{threshold:g}",
            )
    elif lower >= 0.0:
        word: ComparisonVerdict = (
            "improvement" if _at_most(threshold, effect) else "significant_below_threshold"
        )
        return SequentialDecision(
            word, True, f"the sequence lies above 0 (effect {effect:+.4f}): no later look can block"
        )
    elif -threshold <= lower and upper <= threshold and threshold > 0:
        return SequentialDecision(
            "equivalent_within_threshold",
            True,
            f"the sequence lies inside (-{threshold:g}, +{threshold:g}) and includes 0",
        )
    if spent:
        why = (
            f"a drop is established but the sequence still reaches -{threshold:g} and the effect "
            f"{effect:+.4f} is above it"
            if upper <= 0.0
            else f"the sequence still reaches a drop of {threshold:g} or more"
        )
        return SequentialDecision("inconclusive", True, f"budget spent: {why}")
    return SequentialDecision(None, False, "not settled: look again")


def sequential_overall(verdicts: Mapping[str, str]) -> tuple[str, int]:
    """Overall word and exit code over the tasks: regression if any task regressed, else
    inconclusive if any is, else pass (each task already at its Bonferroni level)."""
    values = set(verdicts.values())
    if "regression" in values:
        return "regression", EXIT_NEGATIVE
    if values & {"inconclusive", "insufficient_evidence"}:
        return "inconclusive", EXIT_INCONCLUSIVE
    return "pass", EXIT_OK


@dataclass(frozen=True)
class FirstDecision:
    """Result of :func:`first_decision`: the verdict and the number of values it used."""

    verdict: ComparisonVerdict
    n_used: int


def first_decision(
    d: Sequence[float] | np.ndarray,
    *,
    alpha: float,
    threshold: float,
    looks: Sequence[int] | np.ndarray | None = None,
) -> FirstDecision:
    """The verdict and stopping time of a sequential run over ``d`` (looking at ``looks``,
    default after every value; the budget is ``len(d)``), in O(T).

    Equal to applying :func:`sequential_verdict` to :func:`rolleval.stats.betting_cs` and
    the running mean at every look, because the rule only asks where the interval lies
    relative to ``-threshold``, ``0`` and ``threshold``: the null ``m`` is below the running-intersection interval at look
    ``t`` exactly when ``log K+_s(m) >= log(2/alpha)`` for some look ``s <= t``, and above
    it when ``log K-_s(m)`` is (:func:`rolleval.stats.betting_capital`). Used by the
    planner and the calibration; tested against the interval form.
    """
    values = np.asarray(d, dtype=np.float64)
    n = values.size
    at = np.arange(1, n + 1) if looks is None else np.asarray(looks, dtype=np.int64)
    threshold = float(threshold)
    means = np.cumsum(values)[at - 1] / at
    below: dict[float, np.ndarray] = {}
    above: dict[float, np.ndarray] = {}
    for m in (-threshold, 0.0, threshold):
        cap = betting_capital(values, m, alpha=alpha)
        thr = cap.log_threshold
        below[m] = np.maximum.accumulate(cap.log_positive[at - 1] >= thr)
        above[m] = np.maximum.accumulate(cap.log_negative[at - 1] >= thr)
    points = (-threshold, 0.0, threshold)
    for j, t in enumerate(at.tolist()):
        # Pseudo-bounds: a null rejected from below is at or under the lower bound, one
        # rejected from above at or over the upper; where the interval lies relative to
        # -threshold, 0 and threshold is all the rule reads, so these give the interval's verdict.
        lower = max([m for m in points if below[m][j]], default=-1.0)
        upper = min([m for m in points if above[m][j]], default=1.0)
        decision = sequential_verdict(
            lower, upper, effect=float(means[j]), threshold=threshold, spent=t == n
        )
        if decision.settled:
            assert decision.verdict is not None
            return FirstDecision(decision.verdict, int(t))
    return FirstDecision("inconclusive", n)


def stopped_line(task: str, record: Mapping[str, Any]) -> str:
    """``"<task>: stopped after 87 of 500 problems: regression"`` (with the last interval)."""
    looks = record.get("looks") or []
    where = ""
    if looks:
        last = looks[-1]
        where = f"; sequence [{last['lower']:+.4f}, {last['upper']:+.4f}]"
    verdict = record.get("verdict") or "not settled (the run stopped early)"
    done = record.get("stopped_after")
    if done is None:
        done = looks[-1]["problems"] if looks else 0
    return (
        f"{task}: stopped after {done} of {len(record.get('order') or [])} problems: "
        f"{verdict_label(verdict) if record.get('verdict') else verdict}{where}"
    )


def sequential_summary(design: Mapping[str, Any]) -> str:
    """The text block a sequential run prints (``run``, ``compare``, ``report``)."""
    lines = [
        f"sequential design: {design.get('method')}, alpha {design.get('alpha')} "
        f"({design.get('multiplicity')}), threshold {design.get('threshold')}, "
        f"order seed {design.get('order_seed')}, rounds of {design.get('round_problems')} problems"
    ]
    for task, record in (design.get("tasks") or {}).items():
        lines.append("  " + stopped_line(task, record))
    lines.append(f"overall: {design.get('verdict') or 'not settled'}")
    return "\n".join(lines)


def simulate_sequential(
    c_baseline: np.ndarray,
    n_baseline: np.ndarray,
    *,
    effect: float,
    threshold: float,
    alpha: float,
    budget: int | None = None,
    round_problems: int = 10,
    n_rollouts: int | None = None,
    n_sims: int = 1000,
    rng: int | np.random.Generator = 0,
) -> dict[str, Any]:
    """Problems a sequential run against this baseline uses, by simulation.

    Model (the plan's): BASE's per-problem values ``c/n`` are fixed, as in a real
    sequential run; the candidate's pass@1 on problem i is ``Binomial(k, p_i) / k`` with
    ``p_i = clip(c_i/n_i - effect, 0, 1)`` (the pilot's rates as the truth, shifted by the
    drop) and ``k = n_rollouts`` (default BASE's ``n_i``). Each simulation draws a random
    visit order, looks after every ``round_problems`` problems and applies the rule
    (:func:`first_decision`). Returns the mean and 90th percentile of the problems used, the
    share of each verdict, and the mean drop the model implies (clipping at 0 makes it
    smaller than ``effect`` on problems the pilot never solved).
    """
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    c = np.asarray(c_baseline, dtype=np.float64)
    n = np.asarray(n_baseline, dtype=np.float64)
    keep = n > 0
    c, n = c[keep], n[keep]
    base = c / n
    k = n.astype(np.int64) if n_rollouts is None else np.full(n.size, int(n_rollouts))
    p = np.clip(base - effect, 0.0, 1.0)
    size = n.size if budget is None else min(int(budget), n.size)
    looks = np.unique(
        np.minimum(np.arange(round_problems, size + round_problems, round_problems), size)
    )
    used = np.empty(n_sims, dtype=np.int64)
    verdicts: dict[str, int] = {}
    for s in range(n_sims):
        order = gen.permutation(n.size)[:size]
        d = gen.binomial(k[order], p[order]) / k[order] - base[order]
        res = first_decision(d, alpha=alpha, threshold=threshold, looks=looks)
        used[s] = res.n_used
        verdicts[res.verdict] = verdicts.get(res.verdict, 0) + 1
    return {
        "sims": n_sims,
        "budget": size,
        "round_problems": round_problems,
        "implied_drop": float(np.mean(base - p)),
        "mean_problems": float(used.mean()),
        "p90_problems": float(np.percentile(used, 90)),
        "verdicts": {v: verdicts[v] / n_sims for v in sorted(verdicts)},
    }
