"""``rolleval plan``: how many problems and rollouts a comparison needs (Miller 2024).

From a pilot run (or a baseline/candidate pair) per task: the variance components of pass@1
(between-problem variance of true success rates, mean within-problem Bernoulli variance),
then the number of problems and of rollouts per problem needed to detect a given effect
with a given power, and the minimum detectable effect of the current design.
"""

from __future__ import annotations

import os
from typing import Any

from ..stats import (
    minimum_detectable_effect,
    paired_variance_components,
    required_problems,
    required_rollouts,
    variance_components,
)
from ._align import align_frames
from ._frame import load_frames, resolve_tasks

__all__ = ["plan_runs"]


def plan_runs(
    pilot: str | os.PathLike[str],
    candidate: str | os.PathLike[str] | None = None,
    *,
    effect: float = 0.02,
    alpha: float = 0.05,
    power: float = 0.8,
    tasks: list[str] | None = None,
) -> dict[str, Any]:
    """Variance components, required problems / rollouts and the current MDE, per task.

    With one pilot run the comparison is assumed to differ from it by a constant shift on
    every problem (omega^2 = Var(x_A - x_B) = 0): the required sizes are then lower bounds.
    With a candidate run, omega^2 is estimated from the pair.
    """
    fa = load_frames(pilot)
    fb = load_frames(candidate) if candidate is not None else None
    out: dict[str, Any] = {
        "effect": effect,
        "alpha": alpha,
        "power": power,
        "unit": "problem",
        "tasks": {},
    }
    for name in resolve_tasks(fa, fb, tasks, sources=(pilot, candidate)):
        a = fa[name]
        if fb is not None:
            al = align_frames(a, fb[name], unmatched="exclude")
            comp = paired_variance_components(
                a.c[al.pos_baseline],
                a.n[al.pos_baseline],
                fb[name].c[al.pos_candidate],
                fb[name].n[al.pos_candidate],
            )
            kw = comp.power_kwargs() if comp.status == "ok" else None
            T = len(al.ids)
            assumption = "omega^2 estimated from the baseline/candidate pair"
            components = {
                k: getattr(comp, k)
                for k in ("omega2", "sigma2_a", "sigma2_b", "k_a", "k_b", "n", "status", "reason")
            }
        else:
            ok = a.n >= 2
            vc = variance_components(a.c[ok], a.n[ok])
            T = int(ok.sum())
            components = {
                k: getattr(vc, k)
                for k in ("between", "within", "observed", "k", "n", "status", "reason")
            }
            kw = None
            if vc.status == "ok" and vc.within is not None:
                kw = {
                    "omega2": 0.0,
                    "sigma2_a": vc.within,
                    "k_a": vc.k,
                    "sigma2_b": vc.within,
                    "k_b": vc.k,
                }
            assumption = "one pilot run: the candidate is assumed to shift every problem equally (omega^2 = 0), so sizes are lower bounds"
        entry: dict[str, Any] = {"problems": T, "components": components, "assumption": assumption}
        if kw is None or T < 2:
            entry["status"] = "unavailable"
            entry["reason"] = (
                components.get("reason")
                or "need at least 2 problems with 2 or more gradable rollouts"
            )
        else:
            entry["status"] = "ok"
            entry["mde_current"] = minimum_detectable_effect(T, alpha=alpha, power=power, **kw)
            entry["required_problems"] = required_problems(effect, alpha=alpha, power=power, **kw)
            rk = dict(kw)
            rk.pop("k_a")
            rk.pop("k_b")
            entry["required_rollouts_at_current_problems"] = required_rollouts(
                effect, T, alpha=alpha, power=power, **rk
            )
        out["tasks"][name] = entry
    return out
