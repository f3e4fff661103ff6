"""Stage 4, schedule: request the planned rollouts, store each at once, grade each problem.

A :class:`Scheduler` owns everything that lives for the length of the requests: the task
writers (appenders), one grading pool per task, the progress line and the
:class:`Counters`. A problem's rollouts go out back to back (a server's prompt cache is then
reused); with ``server_n`` one request carries all of a problem's pending rollouts. Each
finished rollout is appended to ``rollouts.jsonl`` as soon as it arrives; when a problem's
rollouts are all in, the problem is graded in the pool and its judgements appended
together. A streak of failed rollouts (each after its own retries) trips a breaker that
stops the run resumably instead of spending every request against a dead endpoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..client import Client, Completion
from ..records import RolloutRecord, make_judgement
from ..rundir._writer import RunWriter, TaskWriter
from ._plan import Request, TaskPlan
from ._resolve import ResolvedTask

__all__ = ["BREAKER_MIN", "Counters", "Progress", "Scheduler", "derive_seed"]

#: A run stops (resumably) after this many consecutive failed rollouts, or twice the
#: concurrency if larger: each one already spent its own retries, so the endpoint is down.
BREAKER_MIN = 24


def derive_seed(run_seed: int, problem_id: str, index: int) -> int:
    """Sampling seed of one rollout: the low 31 bits of the first four bytes (big-endian) of
    sha256("<run seed>\\0<problem id>\\0<index>")."""
    digest = hashlib.sha256(f"{run_seed}\x00{problem_id}\x00{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Counters:
    """What the requests of one segment came to."""

    completed: int = 0
    failed: int = 0
    streak: int = 0
    """Consecutive failed rollouts (reset by any success)."""
    last_error: str | None = None
    tripped: bool = False
    """The breaker stopped the run (the endpoint looks down)."""


class Progress:
    """A one-line progress display on stderr: done/total, rate, errors, ETA."""

    def __init__(self, total: int, *, enabled: bool, stream: Any = None):
        self.total = total
        self.done = 0
        self.errors = 0
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self._last = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def update(self, *, error: bool) -> None:
        self.done += 1
        self.errors += error
        now = time.monotonic()
        interval = 0.2 if self._tty else 10.0
        if self.enabled and (now - self._last >= interval or self.done == self.total):
            self._last = now
            self._print(now)

    def _print(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta_s = "--" if eta == float("inf") else f"{int(eta // 60)}m{int(eta % 60):02d}s"
        line = f"rollouts {self.done}/{self.total} ({100 * self.done / self.total:.0f}%)  {rate:.1f}/s  errors {self.errors}  ETA {eta_s}"
        if self._tty:
            self.stream.write("\r" + line + " " * 4)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


class Scheduler:
    """Runs one segment's requests and grading (see the module docstring)."""

    def __init__(
        self,
        tasks: list[ResolvedTask],
        plans: list[TaskPlan],
        writer: RunWriter,
        client: Client,
        *,
        seed: int,
        concurrency: int,
        server_n: bool,
        grading_workers: int | None,
        progress: bool,
    ):
        from ..grading import GradingPool

        self.tasks = tasks
        self.plans = plans
        self.client = client
        self.seed = seed
        self.concurrency = concurrency
        self.server_n = server_n
        self.counters = Counters()
        self.total = sum(p.n_requests for p in plans)
        """Rollouts this segment requests."""
        self.breaker = max(BREAKER_MIN, 2 * concurrency)
        self.progress = Progress(self.total, enabled=progress)
        self.writers: list[TaskWriter] = [writer.task(t.name) for t in tasks]
        self.pools = [
            GradingPool(
                t.grader,
                workers=grading_workers,
                timeout=t.grader.problem_timeout_s,
            )
            for t in tasks
        ]
        # Only problems in flight are held: a problem's stored final rollouts and its pending
        # count go when it is submitted for grading, a grading future when its judgements
        # are written, and requests are made as the workers take them.
        self._final = [p.final for p in plans]
        self._pending = [p.pending() for p in plans]
        self._grading: set[asyncio.Future[Any]] = set()
        self._closed = False
        self.stopped = False
        """An interrupt asked the scheduler to stop issuing requests (:meth:`stop`)."""
        self._issued = 0
        self._batches = self._iter_batches()

    def _iter_batches(self) -> Iterator[list[Request]]:
        """The requests in order, one batch per request sent (a problem's pending rollouts
        together with ``server_n``, else one rollout per batch), made as they are taken."""
        for plan in self.plans:
            batch: list[Request] = []
            for req in plan.iter_requests():
                if batch and not (self.server_n and batch[0].problem_id == req.problem_id):
                    yield batch
                    batch = []
                batch.append(req)
            if batch:
                yield batch

    def stop(self) -> None:
        """Issue no more requests (an interrupt): each worker ends after its current one."""
        self.stopped = True

    def _next_batch(self) -> list[Request] | None:
        if self.counters.tripped or self.stopped:
            return None
        batch = next(self._batches, None)
        if batch is not None:
            self._issued += len(batch)
        return batch

    # ---------------------------------------------------------------- grading

    def _grade(self, ti: int, pid: str) -> None:
        task = self.tasks[ti]
        rolls = self._final[ti].pop(pid, {})
        from ..grading import grading_inputs, grading_reference, thinking_of

        items, splits = grading_inputs(
            (r for _, r in sorted(rolls.items())), thinking_of(task.settings)
        )

        reference = grading_reference(task.grader, task.prompts[pid])
        fut = asyncio.wrap_future(self.pools[ti].submit(reference, items))

        def done(f: asyncio.Future[Any]) -> None:
            if f.cancelled() or self._closed:
                return  # never store a judgement that arrives after the segment stopped
            judgements = f.result() if f.exception() is None else None
            from ..grading import Judgement, judgement_of

            failed = (
                Judgement.failed(f"grading failed: {f.exception()}") if judgements is None else None
            )
            records = []
            for j, r in sorted(rolls.items()):
                v = judgement_of(j, judgements, splits, failed) if r.status == "ok" else None
                records.append(make_judgement(r, v, task.grader.identity, splits.get(j)))
            self.writers[ti].add_judgements(records)

        self._grading.add(fut)
        fut.add_done_callback(self._grading.discard)
        fut.add_done_callback(done)

    # ---------------------------------------------------------------- requests

    def _record(self, req: Request, seed: int | None, comp: Completion) -> None:
        record: RolloutRecord = comp.to_record(
            problem_id=req.problem_id, index=req.index, seed=seed, attempt=req.attempt
        )
        self.writers[req.task].add_rollout(record)
        c = self.counters
        failed = comp.status != "ok"
        if failed:
            c.failed += 1
            c.last_error = comp.error
            c.streak += 1
            if c.streak >= self.breaker and self._issued < self.total:
                # Every recent rollout failed after its retries: the endpoint is down.
                # Stop instead of retrying thousands of rollouts against it.
                c.tripped = True
        else:
            c.completed += 1
            c.streak = 0
        self.progress.update(error=failed)
        self._final[req.task].setdefault(req.problem_id, {})[req.index] = record
        pending = self._pending[req.task]
        pending[req.problem_id] -= 1
        if pending[req.problem_id] == 0:
            del pending[req.problem_id]
            self._grade(req.task, req.problem_id)

    async def _worker(self) -> None:
        while (batch := self._next_batch()) is not None:
            first = batch[0]
            task = self.tasks[first.task]
            if task.loglik:  # the hook for tasks that score options instead of sampling
                from ..client._loglik import score_problem

                comp = await score_problem(self.client, task.prompts[first.problem_id])
                self._record(first, None, comp)
                continue
            prompt = task.wire_prompt(first.problem_id)
            seeds = [derive_seed(self.seed, r.problem_id, r.index) for r in batch]
            if len(batch) == 1:
                comps = [await self.client.complete(prompt, task.sampling, seed=seeds[0])]
            else:
                comps = await self.client.complete_n(prompt, task.sampling, seeds=seeds)
                seeds = [seeds[0]] * len(seeds)  # one request, one seed sent: record what was sent
            for req, seed, comp in zip(batch, seeds, comps):
                self._record(req, seed, comp)

    @property
    def issued(self) -> int:
        """Rollouts requested so far in this segment."""
        return self._issued

    def _iter_selected(self, selection: dict[int, list[str]]) -> Iterator[list[Request]]:
        """The requests of the selected problems (task position -> ids, in visit order)."""
        for ti, pids in selection.items():
            plan = self.plans[ti]
            for pid in pids:
                wanted = plan.wanted.get(pid)
                if wanted is None:
                    continue
                indices, attempts = wanted
                reqs = [Request(ti, pid, j, a) for j, a in zip(indices, attempts)]
                if self.server_n:
                    yield reqs
                else:
                    yield from ([r] for r in reqs)

    async def run_round(self, selection: dict[int, list[str]]) -> Counters:
        """Request and grade only the selected problems (a round of a sequential run), then
        wait until their judgements are written."""
        n_round = sum(
            len(self.plans[ti].wanted[pid][0])
            for ti, pids in selection.items()
            for pid in pids
            if pid in self.plans[ti].wanted
        )
        self.total = self._issued + n_round
        for ti, pids in selection.items():
            for pid in pids:
                if pid in self.plans[ti].to_grade:
                    self._grade(ti, pid)
        self._batches = self._iter_selected(selection)
        n_workers = min(self.concurrency, max(n_round, 1))
        await asyncio.gather(*(self._worker() for _ in range(n_workers)))
        while self._grading:
            await asyncio.gather(*self._grading, return_exceptions=True)
        return self.counters

    async def run(self) -> Counters:
        """Grade what only needs grading, request every planned rollout, wait for grading."""
        for ti, plan in enumerate(self.plans):
            for pid in plan.to_grade:
                self._grade(ti, pid)
        n_workers = min(self.concurrency, max(self.total, 1))
        await asyncio.gather(*(self._worker() for _ in range(n_workers)))
        while self._grading:
            await asyncio.gather(*self._grading, return_exceptions=True)
        return self.counters

    def close(self, *, completed: bool = False) -> None:
        """Cancel outstanding grading, stop the pools (dropping queued grading unless the run
        completed), close the appenders."""
        self._closed = True
        for f in list(self._grading):
            f.cancel()
        for p in self.pools:
            p.close(cancel_pending=not completed)
        for w in self.writers:
            w.close()
