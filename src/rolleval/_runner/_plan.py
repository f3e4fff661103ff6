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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..records import JudgementRecord, JudgementSet, RolloutRecord, RolloutSet

__all__ = ["RETRY_STATUSES", "Request", "TaskPlan", "plan_task"]

#: Statuses of an effective rollout that a resume requests again.
RETRY_STATUSES = ("infra_error", "timeout")


@dataclass(frozen=True, slots=True)
class Request:
    """One rollout to request: which task (its position in the run), problem, index, attempt."""

    task: int
    problem_id: str
    index: int
    attempt: int


Wanted = tuple[tuple[int, ...], tuple[int, ...]]
"""The rollouts a problem still needs: their indices, and the attempt each is requested as."""


@dataclass
class TaskPlan:
    """What one task still needs.

    Memory is O(problems), never O(rollouts): the requests are kept per problem as
    ``(indices, attempts)`` tuples, and every problem that needs all ``n`` rollouts as first
    attempts (a fresh run) shares one such pair. :meth:`iter_requests` yields the
    :class:`Request` s one by one; :attr:`requests` builds the whole list (tests, small runs).
    """

    task: int = 0
    wanted: dict[str, Wanted] = field(default_factory=dict)
    """Per problem that needs requests (sorted ids): the indices to request and their attempts."""
    final: dict[str, dict[int, RolloutRecord]] = field(default_factory=dict)
    """Per problem that needs requests or grading: the stored rollouts that are final (not
    requested again). Problems already complete and judged are not held."""
    keep_judgements: list[JudgementRecord] = field(default_factory=list)
    """Stored judgements that stay (problems complete and fully judged), canonical order."""
    rewrite_judgements: bool = False
    """True when the judgement file holds lines that are not kept (it is rewritten)."""
    to_grade: list[str] = field(default_factory=list)
    """Problems whose rollouts are all final but whose judgements are not kept."""

    def iter_requests(self) -> Iterator[Request]:
        """Rollouts to request, problem by problem (sorted ids), then by index."""
        for pid, (indices, attempts) in self.wanted.items():
            for j, attempt in zip(indices, attempts):
                yield Request(self.task, pid, j, attempt)

    @property
    def requests(self) -> list[Request]:
        """Every rollout to request, as a list (see :meth:`iter_requests`)."""
        return list(self.iter_requests())

    @property
    def n_requests(self) -> int:
        """How many rollouts are to be requested."""
        return sum(len(indices) for indices, _ in self.wanted.values())

    def pending(self) -> dict[str, int]:
        """Per problem with requests: how many rollouts are still to come."""
        return {pid: len(indices) for pid, (indices, _) in self.wanted.items()}


def plan_task(
    task: int,
    problem_ids: Sequence[str],
    n: int,
    rollouts: RolloutSet,
    judgements: JudgementSet,
) -> TaskPlan:
    """The plan of one task (see the module docstring). ``task`` is its position in the run."""
    plan = TaskPlan(task)
    fresh: Wanted = (tuple(range(n)), (1,) * n)
    finals: dict[str, dict[int, RolloutRecord]] = {}
    for pid in sorted(problem_ids):
        final: dict[int, RolloutRecord] = {}
        indices: list[int] = []
        attempts: list[int] = []
        for j in range(n):
            rec = rollouts.effective.get((pid, j))
            if rec is not None and rec.status not in RETRY_STATUSES:
                final[j] = rec
            else:
                indices.append(j)
                attempts.append(rollouts.attempts.get((pid, j), 0) + 1)
        if indices:
            wanted = (tuple(indices), tuple(attempts))
            plan.wanted[pid] = fresh if wanted == fresh else wanted
        finals[pid] = final
    judged = judgements.by_problem()
    for pid in sorted(problem_ids):
        js = judged.get(pid, {})
        final = finals[pid]
        needed = pid in plan.wanted
        complete = (
            not needed
            and set(js) == set(range(n))
            and all(js[j].status == final[j].status for j in js)
        )
        if complete:
            plan.keep_judgements += [js[j] for j in sorted(js)]
            continue
        if not needed:
            plan.to_grade.append(pid)
        if final:
            plan.final[pid] = final
    plan.rewrite_judgements = len(judgements.records) != len(plan.keep_judgements)
    return plan
