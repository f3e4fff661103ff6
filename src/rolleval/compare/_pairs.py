"""Which task of the candidate is which task of the baseline.

Tasks pair by name; a task map (``--task-map BASE=CAND``) pairs two names explicitly; and
when a baseline task has no counterpart of its name, it pairs with the candidate task whose
problems match its own by content hash (harnesses name one benchmark differently:
``copycolors_local``, ``copycolors``, ``copycolors_0``). Every pair made other than by name
says how, with its matched count. :func:`pair_tasks` is pure: frames in, pairs out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import UsageError
from ._frame import ProblemFrame

__all__ = ["TaskPair", "pair_tasks", "parse_task_map"]

PairedBy = Literal["name", "content", "map"]

_LEFT_OUT_WORDS = {
    "only_in_baseline": "only in the baseline",
    "only_in_candidate": "only in the candidate",
    "changed_content": "changed (one id, other content on each side)",
}


@dataclass(frozen=True)
class TaskPair:
    """One baseline task and its candidate counterpart."""

    baseline: str
    candidate: str
    by: PairedBy
    matched: int
    """Problems of the baseline task whose content a candidate problem has (multisets)."""
    baseline_problems: int
    candidate_problems: int

    @property
    def note(self) -> str | None:
        """How the pair was made, unless by name."""
        if self.by == "name":
            return None
        counts = f"{self.matched} of {self.baseline_problems} problems matched by content"
        if self.candidate_problems != self.baseline_problems:
            counts += f" (the candidate has {self.candidate_problems})"
        how = "paired by --task-map; " if self.by == "map" else ""
        return f"{self.baseline} ~ {self.candidate}: {how}{counts}"

    def left_out_note(self, excluded: Mapping[str, Sequence[str]]) -> str | None:
        """The pairing note with the problems left out of the comparison, by reason:
        ``a ~ b: 40 of 100 problems matched by content (the candidate has 40); 60 only in
        the baseline left out``. ``None`` for a pair by name."""
        note = self.note
        if note is None or not excluded:
            return note
        parts = [
            f"{len(ids)} {_LEFT_OUT_WORDS.get(reason, reason.replace('_', ' '))}"
            for reason, ids in excluded.items()
            if ids
        ]
        return f"{note}; {' and '.join(parts)} left out" if parts else note

    def to_dict(self) -> dict[str, object]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "by": self.by,
            "matched_by_content": self.matched,
            "baseline_problems": self.baseline_problems,
            "candidate_problems": self.candidate_problems,
            "note": self.note,
        }


def parse_task_map(items: list[str] | tuple[str, ...] | Mapping[str, str] | None) -> dict[str, str]:
    """``["BASE=CAND", ...]`` (or a mapping) as ``{BASE: CAND}``; ``UsageError`` otherwise."""
    if not items:
        return {}
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for item in items:
            base, sep, cand = str(item).partition("=")
            if not sep or not base.strip() or not cand.strip():
                raise UsageError(f"--task-map takes BASE=CAND (two task names), got {item!r}")
            pairs.append((base.strip(), cand.strip()))
    out: dict[str, str] = {}
    for base, cand in pairs:
        if base in out and out[base] != cand:
            raise UsageError(f"--task-map: baseline task {base!r} is mapped twice; keep one")
        out[base] = cand
    if len(set(out.values())) != len(out):
        raise UsageError("--task-map: a candidate task is mapped from two baseline tasks; keep one")
    return out


def _matched(baseline: ProblemFrame, candidate: ProblemFrame) -> int:
    """Problems of ``baseline`` whose content ``candidate`` has, as multisets (0 without
    hashes)."""
    if not baseline.has_hashes or not candidate.has_hashes:
        return 0
    in_baseline, in_candidate = Counter(baseline.hashes), Counter(candidate.hashes)
    return sum(min(n, in_candidate[h]) for h, n in in_baseline.items())


def _pair(baseline: ProblemFrame, candidate: ProblemFrame, by: PairedBy) -> TaskPair:
    return TaskPair(
        baseline.task or "",
        candidate.task or "",
        by,
        _matched(baseline, candidate),
        len(baseline.ids),
        len(candidate.ids),
    )


def _check_names(
    frames: Mapping[str, ProblemFrame], names: list[str], side: str, source: object, flag: str
) -> None:
    for name in names:
        if name not in frames:
            raise UsageError(
                f"task {name!r} is not in the {side} ({source}; it has: "
                f"{', '.join(frames) or 'none'}); pass {flag} with one of those"
            )


def _by_content(
    baseline: Mapping[str, ProblemFrame],
    candidate: Mapping[str, ProblemFrame],
    left_b: list[str],
    left_c: list[str],
) -> list[TaskPair]:
    """Pair leftover tasks whose problems match by content, one to one, the best match
    first; a baseline task whose best match is tied between two candidate tasks stays
    unpaired (the caller names --task-map)."""
    scores = [(_matched(baseline[b], candidate[c]), b, c) for b in left_b for c in left_c]
    scores = [s for s in scores if s[0] > 0]
    best: dict[str, list[int]] = {}
    for n, b, _c in scores:
        best.setdefault(b, []).append(n)
    ambiguous = {b for b, ns in best.items() if ns.count(max(ns)) > 1}
    used_b: set[str] = set()
    used_c: set[str] = set()
    out = []
    for _n, b, c in sorted(scores, key=lambda s: (-s[0], s[1], s[2])):
        if b in used_b or c in used_c or b in ambiguous:
            continue
        used_b.add(b)
        used_c.add(c)
        out.append(_pair(baseline[b], candidate[c], "content"))
    return out


def pair_tasks(
    baseline: Mapping[str, ProblemFrame],
    candidate: Mapping[str, ProblemFrame],
    *,
    tasks: list[str] | None = None,
    task_map: Mapping[str, str] | None = None,
    sources: tuple[object, object] = ("baseline", "candidate"),
    sides: tuple[str, str] = ("baseline", "candidate"),
) -> list[TaskPair]:
    """The task pairs to compare, in baseline order.

    ``tasks`` (baseline names) restricts the pairs to those tasks, each of which must find
    a counterpart; ``task_map`` pairs baseline names to candidate names explicitly. Other
    tasks pair by name, then leftovers by content. ``UsageError`` (exit 2) names the side,
    the tasks it has and ``--task-map`` when a task cannot be paired, or when nothing pairs.
    """
    task_map = dict(task_map or {})
    _check_names(baseline, list(task_map), sides[0], sources[0], "--task-map")
    _check_names(candidate, list(task_map.values()), sides[1], sources[1], "--task-map")
    if tasks:
        _check_names(baseline, list(tasks), sides[0], sources[0], "--task")
    pairs: dict[str, TaskPair] = {
        b: _pair(baseline[b], candidate[c], "map") for b, c in task_map.items()
    }
    taken = set(task_map.values())
    for name in baseline:
        if name not in pairs and name in candidate and name not in taken:
            pairs[name] = _pair(baseline[name], candidate[name], "name")
            taken.add(name)
    left_b = [b for b in baseline if b not in pairs]
    left_c = [c for c in candidate if c not in taken]
    for p in _by_content(baseline, candidate, left_b, left_c):
        pairs[p.baseline] = p
    wanted = list(dict.fromkeys(tasks)) if tasks else [b for b in baseline if b in pairs]
    for name in wanted:
        if name not in pairs:
            raise UsageError(
                f"task {name!r} of the {sides[0]} has no counterpart in the {sides[1]} "
                f"({sources[1]}; it has: {', '.join(candidate) or 'none'}): no task of that "
                f"name and none whose problems match by content; pair it with --task-map {name}=TASK"
            )
    if not wanted:
        raise UsageError(
            f"the runs share no task: no name in common and no task whose problems match by "
            f"content ({sides[0]}: {', '.join(baseline) or 'none'}; {sides[1]}: "
            f"{', '.join(candidate) or 'none'}); pair tasks with --task-map BASE=CAND"
        )
    return [pairs[name] for name in wanted]
