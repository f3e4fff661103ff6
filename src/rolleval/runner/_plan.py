"""Stage 3, plan: what a run still has to do, as a pure function of its stored records.

Given a task's problem ids, the rollouts requested per problem and the stored rollout and
judgement sets, :func:`plan_task` says which rollouts to request (and as which attempt),
which stored rollouts are final, which stored judgements stay, and which problems only need
grading. It reads and writes nothing, so it is tested on records alone.

Rules (``docs/run-format.md``, "Crash tolerance and resume"):

* a rollout is requested when it has no effective record, or its effective record is an
  ``infra_error`` or ``timeout``; the request is attempt (highest stored attempt + 1);
* a problem's judgements are kept only when the problem needs no request and holds exactly
  one effective judgement per requested index, each with its rollout's status; otherwise they
  are dropped (the judgement file is rewritten without them) and the problem is graded again
  once its rollouts are all in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..records import JudgementRecord, JudgementSet, RolloutRecord, RolloutSet

__all__ = ["RETRY_STATUSES", "Request", "TaskPlan", "plan_task"]

#: Statuses of an effective rollout that a resume requests again.
RETRY_STATUSES = ("infra_error", "timeout")


@dataclass(frozen=True)
class Request:
    """One rollout to request: which task (its position in the run), problem, index, attempt."""

    task: int
    problem_id: str
    index: int
    attempt: int


@dataclass
class TaskPlan:
    """What one task still needs."""

    requests: list[Request] = field(default_factory=list)
    """Rollouts to request, problem by problem (sorted ids), then by index."""
    final: dict[str, dict[int, RolloutRecord]] = field(default_factory=dict)
    """Per problem: the stored rollouts that are final (not requested again)."""
    keep_judgements: list[JudgementRecord] = field(default_factory=list)
    """Stored judgements that stay (problems complete and fully judged), canonical order."""
    rewrite_judgements: bool = False
    """True when the judgement file holds lines that are not kept (it is rewritten)."""
    to_grade: list[str] = field(default_factory=list)
    """Problems whose rollouts are all final but whose judgements are not kept."""

    def pending(self) -> dict[str, int]:
        """Per problem with requests: how many rollouts are still to come."""
        out: dict[str, int] = {}
        for r in self.requests:
            out[r.problem_id] = out.get(r.problem_id, 0) + 1
        return out


def plan_task(
    task: int,
    problem_ids: Sequence[str],
    n: int,
    rollouts: RolloutSet,
    judgements: JudgementSet,
) -> TaskPlan:
    """The plan of one task (see the module docstring). ``task`` is its position in the run."""
    plan = TaskPlan()
    needed: set[str] = set()
    for pid in sorted(problem_ids):
        final = plan.final.setdefault(pid, {})
        for j in range(n):
            rec = rollouts.effective.get((pid, j))
            if rec is not None and rec.status not in RETRY_STATUSES:
                final[j] = rec
            else:
                plan.requests.append(Request(task, pid, j, rollouts.attempts.get((pid, j), 0) + 1))
                needed.add(pid)
    judged = judgements.by_problem()
    for pid in sorted(problem_ids):
        js = judged.get(pid, {})
        final = plan.final[pid]
        complete = (
            pid not in needed
            and set(js) == set(range(n))
            and all(js[j].status == final[j].status for j in js)
        )
        if complete:
            plan.keep_judgements += [js[j] for j in sorted(js)]
        elif pid not in needed:
            plan.to_grade.append(pid)
    plan.rewrite_judgements = len(judgements.records) != len(plan.keep_judgements)
    return plan
