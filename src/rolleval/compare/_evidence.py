"""What a comparison rests on: the problems compared and dropped, the rollouts left unjudged
(and the worst-case bound they call for), and whether each run is complete.

Used by ``compare`` and ``gate`` alike (``docs/contract.md``, "Run-level comparison").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import EXIT_INCONCLUSIVE, RunError
from ..metrics import parse_metric_name, suite_metrics
from ._align import Alignment
from ._frame import HEALTH_METRICS, ProblemFrame
from ._options import CompareOptions
from ._paired import Comparison, PairedInput, paired_compare
from ._rule import verdict_label

__all__ = [
    "DROP_WARNING_SHARE",
    "check_complete",
    "drop_accounting",
    "refuse_incomplete",
    "unjudged_bound",
]

#: Share of the matched problems above which dropped problems make a warning.
DROP_WARNING_SHARE = 0.10
# families whose per-problem value is a function of (n, c): the worst-case bound refills them
_COUNT_FAMILIES = ("pass_at_k", "pass_hat_k", "g_pass_at_k", "mg_pass_at_k")


def check_complete(
    frames: Mapping[str, ProblemFrame], source: object, side: str
) -> list[dict[str, Any]]:
    """The incomplete tasks of one side: ``[{side, task, run_status, missing, requested}]``."""
    out = []
    for name, fr in frames.items():
        if not fr.complete:
            out.append(
                {
                    "side": side,
                    "source": str(source),
                    "task": name,
                    "run_status": fr.run_status,
                    "missing_rollouts": fr.n_missing,
                    "requested_rollouts": int(fr.requested.sum()),
                }
            )
    return out


def refuse_incomplete(incomplete: list[dict[str, Any]]) -> None:
    """Raise ``RunError`` (exit 4) naming the first incomplete run."""
    if not incomplete:
        return
    first = incomplete[0]
    raise RunError(
        f"{first['source']}: run incomplete: resume it (`rolleval run ... --resume`) before asking "
        f"for a verdict, or pass --allow-incomplete (the {first['side']}'s status is "
        f"{first['run_status']!r}; task {first['task']!r} has {first['missing_rollouts']} of "
        f"{first['requested_rollouts']} requested rollouts without a judgement)"
    )


def drop_accounting(
    al: Alignment,
    vb: np.ndarray,
    vc: np.ndarray,
    metric: str,
    baseline: ProblemFrame,
    candidate: ProblemFrame,
) -> tuple[dict[str, Any], list[str]]:
    """Problems compared and dropped by reason, and the >10% warning with drop-outs per side."""
    nan_b, nan_c = np.isnan(vb), np.isnan(vc)
    ids = np.array(al.ids, dtype=object)
    reasons = {
        "not_eligible_on_baseline": nan_b & ~nan_c,
        "not_eligible_on_candidate": nan_c & ~nan_b,
        "not_eligible_on_both": nan_b & nan_c,
    }
    dropped: dict[str, dict[str, Any]] = {
        k: {"count": len(v), "ids": v} for k, v in al.excluded.items()
    }
    for k, mask in reasons.items():
        if mask.any():
            dropped[k] = {"count": int(mask.sum()), "ids": ids[mask].tolist()}
    compared = int((~nan_b & ~nan_c).sum())
    n_dropped = sum(d["count"] for d in dropped.values())
    total = compared + n_dropped
    per_side = {
        "baseline": int(nan_b.sum()) + len(al.excluded.get("only_in_baseline", [])),
        "candidate": int(nan_c.sum()) + len(al.excluded.get("only_in_candidate", [])),
    }
    block = {
        "baseline": len(baseline.ids),
        "candidate": len(candidate.ids),
        "matched": len(al.ids),
        "compared": compared,
        "dropped": dropped,
        "dropped_total": n_dropped,
        "dropouts_per_side": per_side,
        "eligibility": f"a problem is compared when {metric} has a value on both sides",
    }
    warnings: list[str] = []
    if total and n_dropped > DROP_WARNING_SHARE * total:
        warnings.append(
            f"{n_dropped} of {total} problems ({n_dropped / total:.0%}) dropped "
            f"({per_side['baseline']} drop-outs on the baseline, {per_side['candidate']} on the "
            "candidate): the compared problems are a selection, not the benchmark"
        )
    return block, warnings


def _refill(fr: ProblemFrame, pos: np.ndarray, metric: str, correct: bool) -> np.ndarray:
    """Per-problem ``metric`` with every unjudged rollout filled in as correct (or wrong)."""
    assert fr.unjudged is not None
    _family, params = parse_metric_name(metric)
    k = int(params["k"])
    req = fr.requested[pos].astype(np.int64)
    c = fr.c[pos].astype(np.int64) + (fr.unjudged[pos].astype(np.int64) if correct else 0)
    taus = [float(params["tau"])] if "tau" in params else []
    res = suite_metrics(req, np.minimum(c, req), ks=[k] if k > 1 else [], taus=taus)
    return res.per_problem[metric]


def unjudged_bound(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    al: Alignment,
    metric: str,
    comp: Comparison,
    options: CompareOptions,
) -> tuple[dict[str, Any], str | None]:
    """The worst-case check for unjudged rollouts (infra errors, grader errors, missing).

    When the unjudged shares of the two sides differ by more than the threshold, the verdict
    must survive the worst case of the missing rollouts: all correct on one side and all
    wrong on the other (against the candidate for a passing verdict, for it for a
    regression), compared with ``options`` (those of ``comp``). Returns the panel and, when
    the verdict does not survive, the reason."""
    assert baseline.unjudged is not None and candidate.unjudged is not None
    pb, pc = al.pos_baseline, al.pos_candidate
    share = {
        side: (float(unjudged[pos].sum()) / float(fr.requested[pos].sum()))
        if fr.requested[pos].sum() > 0
        else 0.0
        for side, fr, unjudged, pos in (
            ("baseline", baseline, baseline.unjudged, pb),
            ("candidate", candidate, candidate.unjudged, pc),
        )
    }
    gap = abs(share["candidate"] - share["baseline"])
    threshold = comp.threshold
    panel: dict[str, Any] = {
        "baseline_share": share["baseline"],
        "candidate_share": share["candidate"],
        "difference": gap,
        "threshold": threshold,
        "bound_checked": False,
        "meaning": "requested rollouts with no score: infra errors, grader errors, missing "
        "(timeouts are scored as failures unless timeout_policy is excluded)",
    }
    if metric in HEALTH_METRICS:
        panel["note"] = (
            "no worst-case bound for a health rate: each is defined over its own denominator "
            "(e.g. unextracted among graded rollouts), and infra_error_rate is the unjudged share"
        )
        return panel, None
    if gap <= threshold or comp.exit_code == EXIT_INCONCLUSIVE:
        return panel, None
    panel["bound_checked"] = True
    lead = (
        f"unjudged rollouts differ between the sides by {gap:.1%} (baseline {share['baseline']:.1%}, "
        f"candidate {share['candidate']:.1%}), more than the threshold {threshold:g}"
    )
    family = parse_metric_name(metric)[0]
    if family not in _COUNT_FAMILIES or baseline.settings.get("score_key", "correct") != "correct":
        panel["worst_case"] = None
        return panel, f"{lead}, and no worst-case bound exists for {metric}: inconclusive"
    against = comp.verdict != "regression"  # a passing verdict must survive the worst case
    worst = paired_compare(
        PairedInput(
            baseline=_refill(baseline, pb, metric, correct=against),
            candidate=_refill(candidate, pc, metric, correct=not against),
        ),
        options=options,
    )
    panel["worst_case"] = {
        "fill": "baseline's unjudged correct, candidate's wrong"
        if against
        else "candidate's unjudged correct, baseline's wrong",
        "verdict": worst.verdict,
        "effect": worst.effect,
        "ci_low": worst.ci_low,
        "ci_high": worst.ci_high,
    }
    no_change = {"equivalent_within_threshold", "significant_below_threshold"}
    if worst.verdict == comp.verdict or {worst.verdict, comp.verdict} <= no_change:
        return panel, None
    return panel, (
        f"{lead}; in the worst case for the unjudged rollouts ({panel['worst_case']['fill']}) "
        f"the verdict would be {verdict_label(worst.verdict)} (effect {worst.effect:+.4f}), so "
        f"{verdict_label(comp.verdict)} is not established: inconclusive"
    )
