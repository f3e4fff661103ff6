"""Stage 5, finish: close the segment, write each task's profile, set the run's status.

The profile is computed from the stored rollouts (effective records), never from what this
process happened to see, so a resumed run's profile covers every segment.
:func:`profile_from_files` streams the files a few megabytes at a time and keeps a few
numbers per rollout (numpy arrays), so memory stays flat however long the run;
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import msgspec
import numpy as np

from ..records import ROLLOUT_STATUSES, Profile, Segment
from ..rundir._store import JsonlChunks, TaskFiles

__all__ = ["profile_from_files"]

_NOTE = "throughput uses the wall time of all run segments (all tasks of the run share it)"


def _profile(
    *,
    effective: int,
    attempts: int,
    statuses: dict[str, int],
    retries: int,
    in_tok: np.ndarray,
    out_tok: np.ndarray,
    lat: np.ndarray,
    models: set[str],
    fingerprints: set[str],
    ok: int,
    segments: list[Segment],
    grader_tokens: dict[str, object] | None,
) -> Profile:
    wall = float(sum(s.seconds or 0.0 for s in segments))

    def pct(q: float) -> float | None:
        return float(np.percentile(lat, q)) if len(lat) else None

    return Profile.model_validate(
        {
            "rollouts": {
                "effective": effective,
                "attempts": attempts,
                "by_status": dict(sorted(statuses.items())),
            },
            "retries": int(retries),
            "tokens": {
                "prompt_total": int(in_tok.sum()) if len(in_tok) else None,
                "completion_total": int(out_tok.sum()) if len(out_tok) else None,
                "completion_mean": float(np.mean(out_tok)) if len(out_tok) else None,
                "reported_by": len(out_tok),
            },
            "latency_s": {"p50": pct(50), "p90": pct(90), "p99": pct(99), "n": len(lat)},
            "response_models": sorted(models),
            "system_fingerprints": sorted(fingerprints),
            "note": _NOTE,
            "wall_seconds": wall,
            "rollouts_per_second": (ok / wall) if wall > 0 else None,
            "grader_tokens": grader_tokens,
        }
    )


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _RolloutRow(msgspec.Struct, gc=False):
    """The fields of a rollout record a profile reads."""

    problem_id: str
    index: int
    status: Literal["ok", "timeout", "infra_error", "skipped"]
    usage: _Usage | None = None
    latency_s: float | None = None
    retries: int = 0
    model: str | None = None
    system_fingerprint: str | None = None


class _JudgementRow(msgspec.Struct, gc=False):
    problem_id: str
    index: int
    grader_usage: _Usage | None = None


_NONE = np.iinfo(np.int64).min
_OK = ROLLOUT_STATUSES.index("ok")


class _Slots:
    """A slot per (problem, index): ``problem * width + index`` for the problem's ordinal
    (in order of first sight) and an index below ``width``; other keys get slots past the end."""

    def __init__(self, width: int):
        self.width = max(1, width)
        self.problems: dict[str, int] = {}
        self.extra: dict[tuple[str, int], int] = {}
        self.size = 0  # slots handed out so far (upper bound)

    def slot(self, pid: str, index: int) -> int:
        if index < self.width:
            p = self.problems.setdefault(pid, len(self.problems))
            return p * self.width + index
        key = (pid, index)
        if key not in self.extra:
            self.extra[key] = -1 - len(self.extra)
        return self.extra[key]


class _Columns:
    """Growable numpy columns indexed by slot (negative slots: an overflow region)."""

    def __init__(self, **dtypes_and_fill: tuple[Any, Any]):
        self.spec = dtypes_and_fill
        self.main = {k: np.full(1024, fill, dtype) for k, (dtype, fill) in self.spec.items()}
        self.over = {k: np.full(16, fill, dtype) for k, (dtype, fill) in self.spec.items()}

    def _fit(self, slot: int) -> tuple[dict[str, np.ndarray], int]:
        cols, i = (self.main, slot) if slot >= 0 else (self.over, -1 - slot)
        size = len(next(iter(cols.values())))
        if i >= size:
            new = max(2 * size, i + 1)
            for k, (dtype, fill) in self.spec.items():
                grown = np.full(new, fill, dtype)
                grown[:size] = cols[k]
                cols[k] = grown
        return cols, i

    def row(self, slot: int) -> tuple[dict[str, np.ndarray], int]:
        return self._fit(slot)

    def column(self, name: str) -> np.ndarray:
        return np.concatenate([self.main[name], self.over[name]])


def profile_from_files(files: TaskFiles, segments: list[Segment], n: int) -> Profile:
    """The profile of a task from its effective rollouts, streamed from its rollout and
    judgement files; ``n`` is the rollouts per problem (the slot width: any works)."""
    status_code = {s: i for i, s in enumerate(ROLLOUT_STATUSES)}
    slots = _Slots(n)
    cols = _Columns(
        status=(np.int8, -1),
        latency=(np.float64, np.nan),
        prompt=(np.int64, _NONE),
        completion=(np.int64, _NONE),
    )
    attempts = retries = 0
    models: set[str] = set()
    fingerprints: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the plan stage already reported torn lines
        if files.rollouts.exists():
            for rows, _ in JsonlChunks(files.rollouts, _RolloutRow, what="rollout records"):
                attempts += len(rows)
                for r in rows:
                    retries += r.retries
                    c, i = cols.row(slots.slot(r.problem_id, r.index))
                    if c["status"][i] == _OK:
                        continue  # the first ok attempt counts (a later ok is a duplicate)
                    code = status_code[r.status]
                    c["status"][i] = code
                    c["latency"][i] = np.nan if r.latency_s is None else r.latency_s
                    u = r.usage
                    pt = u.prompt_tokens if u is not None else None
                    ct = u.completion_tokens if u is not None else None
                    c["prompt"][i] = _NONE if pt is None else pt
                    c["completion"][i] = _NONE if ct is None else ct
                    if code == _OK:
                        if r.model:
                            models.add(r.model)
                        if r.system_fingerprint:
                            fingerprints.add(r.system_fingerprint)
        grader = _grader_tokens_from_file(files, n)
    status = cols.column("status")
    chosen = status >= 0
    ok = status == _OK
    lat = cols.column("latency")[ok]
    prompt, completion = cols.column("prompt")[ok], cols.column("completion")[ok]
    counts = np.bincount(status[chosen], minlength=len(ROLLOUT_STATUSES))
    return _profile(
        effective=int(chosen.sum()),
        attempts=attempts,
        statuses={s: int(c) for s, c in zip(ROLLOUT_STATUSES, counts) if c},
        retries=retries,
        in_tok=prompt[prompt != _NONE],
        out_tok=completion[completion != _NONE],
        lat=lat[~np.isnan(lat)],
        models=models,
        fingerprints=fingerprints,
        ok=int(ok.sum()),
        segments=segments,
        grader_tokens=grader,
    )


def _grader_tokens_from_file(files: TaskFiles, n: int) -> dict[str, object] | None:
    """An LLM judge's token spend (``grader_tokens``) over the effective (first) judgement
    per rollout, streamed; None when no judgement carries grader usage."""
    if not files.judgements.exists():
        return None
    slots = _Slots(n)
    seen = _Columns(seen=(np.bool_, False))
    calls = 0
    prompt: list[int] = []
    completion: list[int] = []
    for rows, _ in JsonlChunks(files.judgements, _JudgementRow, what="judgement records"):
        for r in rows:
            c, i = seen.row(slots.slot(r.problem_id, r.index))
            if c["seen"][i]:
                continue
            c["seen"][i] = True
            u = r.grader_usage
            if u is not None:
                calls += 1
                if u.prompt_tokens is not None:
                    prompt.append(u.prompt_tokens)
                if u.completion_tokens is not None:
                    completion.append(u.completion_tokens)
    if not calls:
        return None
    return {
        "prompt_total": int(sum(prompt)) if prompt else None,
        "completion_total": int(sum(completion)) if completion else None,
        "calls": calls,
    }
