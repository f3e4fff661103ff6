"""Matching two runs problem by problem, and the compatibility report.

Problems are matched by content hash (sha256 of prompt + reference), never by id alone: a
problem whose text or gold answer changed between the runs is not the same problem. Runs
without hashes (some imported logs) align by id, and say so.

Several problems may share one content (the same prompt and reference under different ids).
They are matched as multisets: first the pairs that agree on content and id, then the rest
of each content group by occurrence rank in id order. Such duplicates are counted and listed;
no problem is ever dropped without being listed under a reason.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import UsageError
from ._frame import _MUST_MATCH, ProblemFrame

__all__ = ["Alignment", "UnmatchedSetBy", "align_frames", "grader_fix"]

_SHOW = 5

#: Who chose what happens to unmatched problems: the default (refuse), the user
#: (``--unmatched``), or the pairing of two tasks by content (leave them out).
UnmatchedSetBy = Literal["default", "--unmatched", "content pairing"]


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
    # groups of baseline (then candidate) ids that share one content, matched as multisets
    duplicates: dict[str, list[list[str]]] = field(default_factory=dict)
    unmatched: Literal["error", "exclude"] = "error"
    """What was done with unmatched problems (``excluded``): refuse, or leave them out."""
    unmatched_set_by: UnmatchedSetBy = "default"
    """Who chose ``unmatched``: the default, ``--unmatched``, or a pairing by content."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "matched": len(self.ids),
            "by": self.by,
            "excluded": {k: {"count": len(v), "ids": v} for k, v in self.excluded.items()},
            "duplicates": {
                side: {"count": sum(len(g) for g in groups), "groups": groups}
                for side, groups in self.duplicates.items()
            },
            "notes": self.notes,
            "unmatched": {"policy": self.unmatched, "set_by": self.unmatched_set_by},
        }


def _differences(
    baseline: ProblemFrame, candidate: ProblemFrame, *, require_provenance: bool
) -> tuple[list[str], list[str]]:
    hard: list[str] = []
    soft: list[str] = []
    for key in _MUST_MATCH:
        va, vb = baseline.settings.get(key), candidate.settings.get(key)
        if va is not None and vb is not None and va != vb:
            why = (
                "a run of each denominator policy"
                if key == "denominator_policy"
                else ("a run of each timeout policy" if key == "timeout_policy" else None)
            )
            hard.append(f"{key}: {va!r} vs {vb!r}" + (f" ({why})" if why else ""))
        elif (va is None) != (vb is None) and key == "grader_identity":
            side, src = (
                ("baseline", baseline.source) if va is None else ("candidate", candidate.source)
            )
            if require_provenance:
                hard.append(
                    f"grader_identity is unknown on the {side} ({src}), so the grader cannot be "
                    "shown to be the same"
                )
            else:
                soft.append(
                    f"grader identity unknown on the {side} (the other side: {va or vb!r}); "
                    "the graders could not be checked to be the same"
                )
    # sampling, rollouts per problem and data source are listed once, formatted, under
    # "what changed" (rolleval.compare._changed), not here
    return hard, soft


_ROLLEVAL_GRADERS = ("math", "mcq", "short_answer")


def grader_fix(baseline: ProblemFrame, candidate: ProblemFrame) -> str:
    """How to give two sides one grader: re-import with ``--regrade`` a side that kept its
    source harness's judgements (the command, with its format and source), else regrade.

    A verdict across two graders would measure the graders as well as the models (TraceLens:
    a different ruler is a different measurement), so compare never overrides the check."""
    graders = [str(fr.settings.get("grader_identity") or "") for fr in (baseline, candidate)]
    ours = [g.partition("@")[0] for g in graders if g.partition("@")[0] in _ROLLEVAL_GRADERS]
    kind = ours[0] if ours else "TYPE"
    steps = []
    for side, fr in (("baseline", baseline), ("candidate", candidate)):
        if fr.imported is not None:
            fmt, src = fr.imported
            steps.append(
                f"re-import the {side} with `rolleval import {fmt} {shlex.quote(src)} --out NEW "
                f"--regrade {kind}`"
            )
    why = "a verdict across two graders would measure the graders too; give both sides one grader"
    if not steps:
        return f"{why}: regrade both runs with the same rolleval (`rolleval regrade RUN`)"
    types = "" if ours else f" (TYPE: {', '.join(_ROLLEVAL_GRADERS)})"
    return f"{why}: {' and '.join(steps)}{types}"


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
    hard, notes = _differences(baseline, candidate, require_provenance=require_provenance)
    if hard:
        policy = any(k in h for h in hard for k in ("denominator_policy", "timeout_policy"))
        fix = (
            "set the same policy in both runs' task settings and recompute (`rolleval report RUN`)"
            if policy
            else grader_fix(baseline, candidate)
        )
        raise UsageError(f"task {task!r}: runs are not comparable ({'; '.join(hard)}); {fix}")
    by: Literal["content_hash", "id"]
    duplicates: dict[str, list[list[str]]] = {}
    if baseline.has_hashes and candidate.has_hashes:
        by = "content_hash"
        common, changed, only_b, only_c = _match_multisets(baseline, candidate)
        for side, fr in (("baseline", baseline), ("candidate", candidate)):
            groups = _duplicate_groups(fr)
            if groups:
                duplicates[side] = groups
                notes.append(
                    f"{sum(len(g) for g in groups)} {side} problems share their content with another "
                    f"({len(groups)} groups, e.g. {', '.join(groups[0][:_SHOW])}); each is compared "
                    "on its own, matched as a multiset"
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
    listed_b = len(pos_b) + len(changed) + len(only_b)
    listed_c = len(pos_c) + len(changed) + len(only_c)
    if listed_b != len(baseline.ids) or listed_c != len(candidate.ids):  # pragma: no cover
        raise AssertionError(
            f"task {task!r}: alignment lost problems ({listed_b}/{len(baseline.ids)} baseline, "
            f"{listed_c}/{len(candidate.ids)} candidate listed)"
        )
    return Alignment(
        task,
        [baseline.ids[i] for i in pos_b.tolist()],
        pos_b,
        pos_c,
        by,
        excluded,
        notes,
        duplicates,
        unmatched,
    )


def _duplicate_groups(fr: ProblemFrame) -> list[list[str]]:
    groups: dict[str | None, list[str]] = {}
    for pid, h in zip(fr.ids, fr.hashes):
        groups.setdefault(h, []).append(pid)
    return [g for g in groups.values() if len(g) > 1]


def _match_multisets(
    baseline: ProblemFrame, candidate: ProblemFrame
) -> tuple[list[tuple[int, int]], list[str], list[str], list[str]]:
    """Match problems by content as multisets: (hash, id) pairs first, then the rest of each
    content group by occurrence rank in id order. Returns the matched position pairs (sorted
    by baseline position) and the unmatched ids by reason: changed content (the id exists on
    both sides with different content), only in the baseline, only in the candidate."""
    key_c = {(h, pid): j for j, (pid, h) in enumerate(zip(candidate.ids, candidate.hashes))}
    common: list[tuple[int, int]] = []
    used_c: set[int] = set()
    rest_b: dict[str | None, list[int]] = {}
    for i, (pid, h) in enumerate(zip(baseline.ids, baseline.hashes)):
        j = key_c.get((h, pid))
        if j is not None:
            common.append((i, j))
            used_c.add(j)
        else:
            rest_b.setdefault(h, []).append(i)
    rest_c: dict[str | None, list[int]] = {}
    for j, h in enumerate(candidate.hashes):
        if j not in used_c:
            rest_c.setdefault(h, []).append(j)
    left_b: list[int] = []
    left_c: set[int] = set()
    for h, ib in rest_b.items():
        jc = rest_c.get(h, [])
        common.extend(zip(ib, jc))  # both lists are in id order: occurrence rank
        left_b.extend(ib[len(jc) :])
    for h, jc in rest_c.items():
        left_c.update(jc[len(rest_b.get(h, [])) :])
    common.sort()
    id_c = {pid: j for j, pid in enumerate(candidate.ids)}
    changed = sorted(
        baseline.ids[i]
        for i in left_b
        if (j := id_c.get(baseline.ids[i])) is not None and j in left_c
    )
    changed_set = set(changed)
    only_b = sorted(baseline.ids[i] for i in left_b if baseline.ids[i] not in changed_set)
    only_c = sorted(candidate.ids[j] for j in left_c if candidate.ids[j] not in changed_set)
    return common, changed, only_b, only_c
