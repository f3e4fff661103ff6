"""``rolleval gate``: a policy of gating metrics and health limits, decided against a baseline.

Policy file (YAML)::

    alpha: 0.05                  # family-wise, Holm across every gating comparison
    tasks: [gsm8k, arc_easy]     # optional: gate only these tasks (default: all shared tasks)
    metrics:                     # paired comparisons that gate; threshold on the metric's scale
      pass@1: {threshold: 0.02}
      maj@n: {threshold: 0.03}
    health:
      unextracted_rate: {max_increase: 0.01}   # paired comparison, lower is better
      infra_error_rate: {max: 0.02}            # absolute limit on the candidate run

Exit 1 when any gating comparison establishes a regression or an absolute limit is broken,
3 when any gating comparison is inconclusive (unless ``observe``), 0 otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml

from ..config import load_yaml
from ..errors import EXIT_NEGATIVE, EXIT_OK, DataError, UsageError
from ._frame import HEALTH_METRICS, load_frames
from ._runs import TaskComparison, compare_frames
from ._verdict import gate_decision

__all__ = ["DEFAULT_POLICY", "GateOutcome", "gate_run", "load_policy"]

DEFAULT_POLICY: dict[str, Any] = {
    "alpha": 0.05,
    "metrics": {"pass@1": {"threshold": 0.02}},
    "health": {"unextracted_rate": {"max_increase": 0.02}, "infra_error_rate": {"max": 0.02}},
}


def load_policy(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Read and check a policy file (``None``: :data:`DEFAULT_POLICY`)."""
    if path is None:
        return DEFAULT_POLICY
    p = Path(path)
    try:
        doc = load_yaml(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{p}: policy file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 text (byte {exc.start + 1}); save the policy as UTF-8", path=p
        ) from None
    except yaml.YAMLError as exc:
        raise DataError(f"not valid YAML ({exc})", path=p) from None
    if not isinstance(doc, dict):
        raise DataError("a policy must be a mapping with 'metrics' and/or 'health'", path=p)
    unknown = set(doc) - {"alpha", "tasks", "metrics", "health"}
    if unknown:
        raise DataError(
            f"unknown policy key(s) {', '.join(sorted(unknown))} (allowed: alpha, tasks, metrics, health)",
            path=p,
        )
    if "alpha" in doc and not _is_number(doc["alpha"], 0.0, 1.0, open_low=True, open_high=True):
        raise DataError(f"alpha: give a number in (0, 1), got {doc['alpha']!r:.60}", path=p)
    tasks = doc.get("tasks")
    if isinstance(tasks, str):
        doc["tasks"] = tasks = [tasks]  # `tasks: gsm8k` means the one task
    if tasks is not None and (
        not isinstance(tasks, list) or not all(isinstance(t, str) and t for t in tasks)
    ):
        raise DataError(f"tasks: give a list of task names, got {tasks!r:.60}", path=p)
    for section in ("metrics", "health"):
        if doc.get(section) is not None and not isinstance(doc[section], dict):
            raise DataError(
                f"{section}: give a mapping of metric name to limits, got {type(doc[section]).__name__}",
                path=p,
            )
    for name, spec in (doc.get("metrics") or {}).items():
        if (
            not isinstance(spec, dict)
            or set(spec) != {"threshold"}
            or not _is_number(spec["threshold"], 0.0, None)
        ):
            raise DataError(f"metrics.{name}: give {{threshold: NUMBER >= 0}}", path=p)
    for name, spec in (doc.get("health") or {}).items():
        if name not in HEALTH_METRICS:
            raise DataError(
                f"health.{name}: unknown health metric (known: {', '.join(HEALTH_METRICS)})", path=p
            )
        if (
            not isinstance(spec, dict)
            or not spec
            or set(spec) - {"max_increase", "max"}
            or not all(_is_number(v, 0.0, None) for v in spec.values())
        ):
            raise DataError(f"health.{name}: give max_increase and/or max (NUMBER >= 0)", path=p)
    if not doc.get("metrics") and not doc.get("health"):
        raise DataError("policy gates nothing: add 'metrics' or 'health'", path=p)
    doc["_path"] = str(p)  # later policy errors name the file
    return doc


def _is_number(
    value: object,
    low: float,
    high: float | None,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> bool:
    """A real number (not a bool, not a string) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if not np.isfinite(value) or value < low or (open_low and value == low):
        return False
    return high is None or value < high or (not open_high and value == high)


@dataclass
class GateOutcome:
    verdict: str
    exit_code: int
    checks: list[dict[str, Any]]
    comparisons: list[TaskComparison] = field(default_factory=list)
    observe: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "observe": self.observe,
            "multiplicity": "Holm across all gating comparisons",
            "checks": self.checks,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }

    def markdown(self) -> str:
        """A GitHub-Actions-friendly summary table."""
        icon = {"pass": "pass", "blocked": "BLOCKED", "inconclusive": "inconclusive"}
        lines = [
            f"### rolleval gate: {icon.get(self.verdict, self.verdict)}",
            "",
            "| task | check | value | verdict |",
            "|---|---|---|---|",
        ]
        for c in self.checks:
            lines.append(f"| {c['task']} | {c['check']} | {c['value']} | {c['verdict']} |")
        return "\n".join(lines)


def _fmt_effect(comp: Any) -> str:
    d = comp.to_dict()
    lo, hi = d.get("ci_low"), d.get("ci_high")
    ci = "" if lo is None or hi is None else f" [{lo:+.4f}, {hi:+.4f}]"
    p = d.get("pvalue")
    return (
        f"{d['effect']:+.4f}{ci}, p={p:.3g}"
        if d.get("effect") is not None and p is not None
        else "N/A"
    )


def _candidate_level(frame: Any, metric: str) -> float | None:
    """A health metric over the whole task: the infra error rate weighted by requested
    rollouts (errors / requested), any other metric as the mean over problems where it is
    defined; None when it is defined nowhere."""
    vals = frame.value(metric)
    ok = ~np.isnan(vals)
    if not ok.any():
        return None
    if metric == "infra_error_rate":
        weights = frame.requested[ok].astype(float)
        return float((vals[ok] * weights).sum() / weights.sum()) if weights.sum() > 0 else None
    return float(vals[ok].mean())


def gate_run(
    run: str | os.PathLike[str],
    baseline: str | os.PathLike[str],
    *,
    policy: dict[str, Any] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    unmatched: Literal["error", "exclude"] = "error",
    observe: bool = False,
) -> GateOutcome:
    """Decide whether ``run`` may replace ``baseline`` under ``policy``."""
    policy = policy or DEFAULT_POLICY
    alpha = float(policy.get("alpha", 0.05))
    fb = load_frames(baseline)
    fc = load_frames(run)
    tasks = policy.get("tasks") or [t for t in fb if t in fc]
    for t in tasks:
        if t not in fb or t not in fc:
            raise DataError(
                f"policy task {t!r} is missing from the {'baseline' if t not in fb else 'run'}; "
                "remove it from the policy's tasks",
                path=policy.get("_path", "policy"),
            )
    if not tasks:
        raise UsageError("the run and the baseline share no task")
    comps: dict[str, Any] = {}
    task_comps: list[TaskComparison] = []
    checks: list[dict[str, Any]] = []
    limits_broken = False
    for t in tasks:
        gating: list[tuple[str, float]] = [
            (m, float(s["threshold"])) for m, s in (policy.get("metrics") or {}).items()
        ]
        gating += [
            (m, float(s["max_increase"]))
            for m, s in (policy.get("health") or {}).items()
            if "max_increase" in s
        ]
        for metric, tau in gating:
            tc = compare_frames(
                fb[t],
                fc[t],
                metric=metric,
                threshold=tau,
                alpha=alpha,
                n_resamples=n_resamples,
                seed=seed,
                unmatched=unmatched,
            )
            key = f"{t}:{metric}"
            comps[key] = tc.comparison
            task_comps.append(tc)
        for metric, spec in (policy.get("health") or {}).items():
            if "max" not in spec:
                continue
            value = _candidate_level(fc[t], metric)
            broken = value is not None and value > float(spec["max"])
            limits_broken |= broken
            checks.append(
                {
                    "task": t,
                    "check": f"{metric} <= {spec['max']}",
                    "value": "N/A" if value is None else f"{value:.4f}",
                    "verdict": "blocked"
                    if broken
                    else ("N/A: not measured" if value is None else "ok"),
                }
            )
    decision = gate_decision(comps, alpha=alpha)
    for key, comp in comps.items():
        t, metric = key.split(":", 1)
        checks.append(
            {
                "task": t,
                "check": f"{metric} paired compare (tau={comp.to_dict()['threshold']})",
                "value": _fmt_effect(comp),
                "verdict": decision.verdicts[key],
                "adjusted_pvalue": decision.adjusted_pvalues.get(key),
            }
        )
    exit_code = EXIT_NEGATIVE if limits_broken else decision.exit_code
    verdict = (
        "blocked" if exit_code == EXIT_NEGATIVE else ("inconclusive" if exit_code == 3 else "pass")
    )
    return GateOutcome(verdict, EXIT_OK if observe else exit_code, checks, task_comps, observe)
