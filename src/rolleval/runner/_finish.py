"""Stage 5, finish: close the segment, write each task's profile, set the run's status.

The profile is computed from the stored rollouts (effective records), never from what this
process happened to see, so a resumed run's profile covers every segment.
"""

from __future__ import annotations

import numpy as np

from ..records import JudgementSet, Profile, RolloutSet, Segment

__all__ = ["build_profile"]

_NOTE = "throughput uses the wall time of all run segments (all tasks of the run share it)"


def build_profile(
    rollouts: RolloutSet, segments: list[Segment], judgements: JudgementSet | None = None
) -> Profile:
    """Token usage, latency percentiles, throughput and status counts of a task's rollouts;
    with ``judgements``, an LLM judge's token spend apart (``grader_tokens``)."""
    chosen = rollouts.effective
    ok = [r for r in chosen.values() if r.status == "ok"]
    lat = np.array([r.latency_s for r in ok if r.latency_s is not None], dtype=float)
    out_tok = [r.usage.completion_tokens for r in ok if r.usage is not None]
    in_tok = [r.usage.prompt_tokens for r in ok if r.usage is not None]
    out_tok_v = [t for t in out_tok if t is not None]
    in_tok_v = [t for t in in_tok if t is not None]
    wall = float(sum(s.seconds or 0.0 for s in segments))
    statuses: dict[str, int] = {}
    for r in chosen.values():
        statuses[r.status] = statuses.get(r.status, 0) + 1

    def pct(q: float) -> float | None:
        return float(np.percentile(lat, q)) if len(lat) else None

    return Profile.model_validate(
        {
            "rollouts": {
                "effective": len(chosen),
                "attempts": len(rollouts.records),
                "by_status": dict(sorted(statuses.items())),
            },
            "retries": int(sum(r.retries for r in rollouts.records)),
            "tokens": {
                "prompt_total": int(sum(in_tok_v)) if in_tok_v else None,
                "completion_total": int(sum(out_tok_v)) if out_tok_v else None,
                "completion_mean": float(np.mean(out_tok_v)) if out_tok_v else None,
                "reported_by": len(out_tok_v),
            },
            "latency_s": {"p50": pct(50), "p90": pct(90), "p99": pct(99), "n": len(lat)},
            "response_models": sorted({r.model for r in ok if r.model}),
            "system_fingerprints": sorted(
                {r.system_fingerprint for r in ok if r.system_fingerprint}
            ),
            "note": _NOTE,
            "wall_seconds": wall,
            "rollouts_per_second": (len(ok) / wall) if wall > 0 else None,
            "grader_tokens": _grader_tokens(judgements),
        }
    )


def _grader_tokens(judgements: JudgementSet | None) -> dict[str, object] | None:
    if judgements is None:
        return None
    used = [j.grader_usage for j in judgements.effective.values() if j.grader_usage is not None]
    if not used:
        return None
    prompt = [u.prompt_tokens for u in used if u.prompt_tokens is not None]
    completion = [u.completion_tokens for u in used if u.completion_tokens is not None]
    return {
        "prompt_total": int(sum(prompt)) if prompt else None,
        "completion_total": int(sum(completion)) if completion else None,
        "calls": len(used),
    }
