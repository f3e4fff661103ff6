"""Matching two runs problem by problem, and the compatibility report.

Problems are matched by content hash (sha256 of prompt + reference), never by id alone: a
problem whose text or gold answer changed between the runs is not the same problem. Runs
without hashes (some imported logs) align by id, and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import UsageError
from ._frame import _MUST_MATCH, _NOTED, ProblemFrame

__all__ = ["Alignment", "align_frames"]

_SHOW = 5


@dataclass
class Alignment:
    """Which problems of two frames are the same problem."""

    task: str
    ids: list[str]  # baseline ids of matched problems, canonical order
    pos_baseline: np.ndarray
    pos_candidate: np.ndarray
    by: Literal["content_hash", "id"]
    excluded: dict[str, list[str]] = field(default_factory=dict)  # reason -> baseline/candidate ids
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "matched": len(self.ids),
            "by": self.by,
            "excluded": {k: {"count": len(v), "ids": v} for k, v in self.excluded.items()},
            "notes": self.notes,
        }


def _differences(a: ProblemFrame, b: ProblemFrame) -> tuple[list[str], list[str]]:
    hard: list[str] = []
    soft: list[str] = []
    for key in _MUST_MATCH:
        va, vb = a.settings.get(key), b.settings.get(key)
        if va is not None and vb is not None and va != vb:
            hard.append(f"{key}: {va!r} vs {vb!r}")
    for key in _NOTED:
        va, vb = a.settings.get(key), b.settings.get(key)
        if va != vb:
            soft.append(f"{key} differs: {va!r} vs {vb!r}")
    return hard, soft


def align_frames(
    baseline: ProblemFrame,
    candidate: ProblemFrame,
    *,
    unmatched: Literal["error", "exclude"] = "error",
    require_provenance: bool = False,
) -> Alignment:
    """Match the problems of two frames of the same task.

    Refuses (``UsageError``, exit 2) with a list of what differs when the grader or score key
    differ, when problems changed content or exist on one side only (unless
    ``unmatched="exclude"``), or when content hashes are missing and ``require_provenance``.
    """
    task = baseline.task
    hard, notes = _differences(baseline, candidate)
    if hard:
        raise UsageError(
            f"task {task!r}: runs are not comparable ({'; '.join(hard)}); regrade both runs with the same rolleval "
            "(`rolleval regrade RUN`) so they share a grader"
        )
    by: Literal["content_hash", "id"]
    if baseline.has_hashes and candidate.has_hashes:
        by = "content_hash"
        hb = {h: i for i, h in enumerate(baseline.hashes)}
        hc = {h: i for i, h in enumerate(candidate.hashes)}
        common = sorted((hb[h], hc[h]) for h in hb.keys() & hc.keys())
        id_c = {pid: i for i, pid in enumerate(candidate.ids)}
        changed = sorted(
            pid
            for h, i in hb.items()
            if h not in hc
            and (j := id_c.get(pid := baseline.ids[i])) is not None
            and candidate.hashes[j] != h
        )
        only_b = sorted(
            baseline.ids[i] for h, i in hb.items() if h not in hc and baseline.ids[i] not in id_c
        )
        id_b = set(baseline.ids)
        only_c = sorted(
            candidate.ids[i] for h, i in hc.items() if h not in hb and candidate.ids[i] not in id_b
        )
    else:
        if require_provenance:
            side = "baseline" if not baseline.has_hashes else "candidate"
            raise UsageError(
                f"task {task!r}: the {side} ({(baseline if side == 'baseline' else candidate).source}) has no content hashes, "
                "so problems can only be matched by id; drop --require-provenance to accept that"
            )
        by = "id"
        notes.append(
            "aligned by problem id only: at least one side has no content hashes, so changed problems cannot be detected"
        )
        ib = {p: i for i, p in enumerate(baseline.ids)}
        ic = {p: i for i, p in enumerate(candidate.ids)}
        common = sorted((ib[p], ic[p]) for p in ib.keys() & ic.keys())
        changed = []
        only_b = sorted(ib.keys() - ic.keys())
        only_c = sorted(ic.keys() - ib.keys())
    excluded = {
        k: v
        for k, v in (
            ("changed_content", changed),
            ("only_in_baseline", only_b),
            ("only_in_candidate", only_c),
        )
        if v
    }
    if excluded and unmatched == "error":
        parts = [
            f"{len(v)} {k.replace('_', ' ')} (e.g. {', '.join(v[:_SHOW])})"
            for k, v in excluded.items()
        ]
        raise UsageError(
            f"task {task!r}: problems differ between the runs: {'; '.join(parts)}; "
            "pass --unmatched exclude to compare only the shared unchanged problems"
        )
    pos_b = np.array([i for i, _ in common], dtype=np.int64)
    pos_c = np.array([j for _, j in common], dtype=np.int64)
    return Alignment(
        task, [baseline.ids[i] for i in pos_b.tolist()], pos_b, pos_c, by, excluded, notes
    )
