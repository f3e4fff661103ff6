"""A sequential run (``rolleval run --baseline BASE --until-decided``): stop when settled.

Before anything is written, :func:`prepare_sequential` reads BASE (a run directory or a
baseline file), checks that every task of the run is in BASE and that BASE's problems are
the candidate's (same ids, same content hashes), and draws each task's visit order from the
run seed. :func:`schedule_sequential` then runs rounds: the next ``round_problems`` problems
of every task not yet settled, all their rollouts; after each round it reads the candidate's
per-problem pass@1 back from the run directory (the same reader compare uses), extends the
paired differences ``d`` in visit order, updates each task's confidence sequence
(:func:`rolleval.stats.betting_cs`, at the task's Bonferroni level) and applies the rule
(:func:`rolleval.compare._sequential.sequential_verdict`). Every look is recorded in the
manifest's ``sequential`` (:class:`rolleval.records.SequentialDesign`) as it happens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..compare._frame import _MUST_MATCH, ProblemFrame, frames_from_run, load_frames
from ..compare._sequential import sequential_overall, sequential_verdict, task_alpha
from ..errors import UsageError
from ..records import SequentialDesign, SequentialLook, SequentialTask
from ..rundir._store import collect_warnings
from ..rundir._writer import RunWriter
from ..stats import betting_cs
from ..stats._confidence_sequence import BETTING_METHOD
from ._resolve import ResolvedTask
from ._schedule import Counters, Scheduler

__all__ = ["SequentialOptions", "prepare_sequential", "schedule_sequential"]


@dataclass(frozen=True)
class SequentialOptions:
    """The design of a sequential run (``docs/contract.md``, "Sequential comparison")."""

    baseline: str | Path
    """BASE: a run directory or a file written by ``rolleval baseline save``."""
    threshold: float = 0.02
    alpha: float = 0.05
    max_problems: int | None = None
    """Budget per task in problems (default: all of BASE's problems)."""
    round_problems: int = 10
    """Problems per round; the sequence is looked at after each round."""


@dataclass
class _TaskState:
    name: str
    order: list[str]
    alpha: float
    baseline_value: dict[str, float]
    visited: int = 0
    d: list[float] = field(default_factory=list)
    lower: float = -1.0
    upper: float = 1.0
    looks: list[SequentialLook] = field(default_factory=list)
    verdict: str | None = None
    reason: str | None = None
    stopped_after: int | None = None

    def record(self) -> SequentialTask:
        return SequentialTask(
            order=self.order,
            alpha=self.alpha,
            looks=list(self.looks),
            verdict=self.verdict,
            reason=self.reason,
            stopped_after=self.stopped_after,
        )


@dataclass
class Prepared:
    """What :func:`prepare_sequential` checked and drew, before anything is written."""

    options: SequentialOptions
    states: list[_TaskState]
    baseline_info: dict[str, Any]
    budget: int
    seed: int


def _check_options(options: SequentialOptions) -> None:
    if not (isinstance(options.threshold, int | float) and options.threshold > 0):
        raise UsageError(f"--threshold must be > 0 for --until-decided; got {options.threshold!r}")
    if not 0 < options.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1; got {options.alpha!r}")
    if options.max_problems is not None and options.max_problems < 1:
        raise UsageError(f"--max-problems must be >= 1; got {options.max_problems!r}")
    if options.round_problems < 1:
        raise UsageError(f"--round-size must be >= 1; got {options.round_problems!r}")


def _check_comparable(base: ProblemFrame, task: ResolvedTask, source: str) -> None:
    """What compare would refuse at the end is refused before the first request: another
    grader, score key, denominator or timeout policy; a score that is not pass/fail."""
    mine = task.settings.model_dump(mode="json")
    for key in _MUST_MATCH:
        theirs, ours = base.settings.get(key), mine.get(key)
        if theirs is not None and ours is not None and theirs != ours:
            raise UsageError(
                f"{source}: task {task.name!r}: {key} differs ({theirs!r} in BASE, {ours!r} "
                "here): the runs would not be comparable; run with BASE's settings"
            )
    if mine.get("score_key", "correct") != "correct":
        raise UsageError(
            f"task {task.name!r} is graded by {mine.get('score_key')!r}: a sequential run "
            "compares pass@1 of pass/fail grading (score_key 'correct')"
        )


def _matched_ids(base: ProblemFrame, task: ResolvedTask, source: str) -> list[str]:
    """BASE's problem ids, refusing any the candidate lacks or holds with other content."""
    prompts = task.prompts
    missing = [pid for pid in base.ids if pid not in prompts]
    changed = [
        pid
        for pid, h in zip(base.ids, base.hashes)
        if pid in prompts and h is not None and prompts[pid].content_hash != h
    ]
    if missing or changed:
        what = []
        if missing:
            what.append(f"{len(missing)} not in the candidate's task (e.g. {missing[0]!r})")
        if changed:
            what.append(f"{len(changed)} with other content (e.g. {changed[0]!r})")
        raise UsageError(
            f"{source}: task {task.name!r}: BASE's problems must all be in the run with the "
            f"same content; {'; '.join(what)}: run the same task version and --limit as BASE"
        )
    return list(base.ids)


def prepare_sequential(
    options: SequentialOptions, tasks: list[ResolvedTask], seed: int
) -> Prepared:
    """Read BASE, check it against the run's tasks, draw the visit orders (no writing)."""
    _check_options(options)
    source = str(options.baseline)
    if not Path(source).exists():
        raise UsageError(f"{source}: --baseline not found (a run directory or a baseline file)")
    with collect_warnings():
        frames = load_frames(source)
    absent = [t.name for t in tasks if t.name not in frames]
    if absent:
        raise UsageError(
            f"{source}: BASE has no task {absent[0]!r} (it has: {', '.join(frames) or 'none'}); "
            "run the tasks BASE ran"
        )
    alpha_task = task_alpha(options.alpha, len(tasks))
    states = []
    budget = 0
    for ti, t in enumerate(tasks):
        base = frames[t.name]
        _check_comparable(base, t, source)
        ids = _matched_ids(base, t, source)
        order_rng = np.random.default_rng([seed, ti])
        order = [ids[i] for i in order_rng.permutation(len(ids))]
        if options.max_problems is not None:
            order = order[: options.max_problems]
        values = base.value("pass@1")
        states.append(
            _TaskState(
                name=t.name,
                order=order,
                alpha=alpha_task,
                baseline_value={pid: float(v) for pid, v in zip(base.ids, values)},
            )
        )
        budget = max(budget, len(order))
    first = next(iter(frames.values()))
    info = {
        "path": source,
        "kind": first.kind,
        "run_id": first.run_id,
        "model": first.model,
    }
    return Prepared(options, states, info, budget, seed)


def _design(prepared: Prepared, verdict: str | None, why: str | None) -> SequentialDesign:
    o = prepared.options
    return SequentialDesign(
        method=BETTING_METHOD,
        alpha=o.alpha,
        threshold=o.threshold,
        order_seed=prepared.seed,
        max_problems=prepared.budget,
        round_problems=o.round_problems,
        baseline=prepared.baseline_info,
        tasks={s.name: s.record() for s in prepared.states},
        verdict=verdict,
        stopping_reason=why,
    )


def _look(state: _TaskState, frame: ProblemFrame, threshold: float) -> None:
    """Extend ``d`` with the problems visited since the last look, update the sequence,
    apply the rule."""
    pos = {pid: i for i, pid in enumerate(frame.ids)}
    values = frame.value("pass@1")
    seen = state.looks[-1].problems if state.looks else 0
    for pid in state.order[seen : state.visited]:
        vb = state.baseline_value[pid]
        vc = float(values[pos[pid]])
        if math.isfinite(vb) and math.isfinite(vc):
            state.d.append(vc - vb)
    n_values = len(state.d)
    grew = not state.looks or n_values > state.looks[-1].values
    if n_values and grew:
        cs = betting_cs(state.d, alpha=state.alpha, looks=[n_values])
        state.lower = max(state.lower, float(cs.lower[0]))
        state.upper = min(state.upper, float(cs.upper[0]))
    spent = state.visited >= len(state.order)
    effect = math.fsum(state.d) / n_values if n_values else 0.0
    decision = sequential_verdict(
        state.lower, state.upper, effect=effect, threshold=threshold, spent=spent
    )
    state.looks.append(
        SequentialLook(
            problems=state.visited,
            values=n_values,
            lower=state.lower,
            upper=state.upper,
            effect=effect if n_values else None,
            verdict=decision.verdict,
        )
    )
    if decision.settled:
        state.verdict = decision.verdict
        state.reason = decision.reason
        state.stopped_after = state.visited


async def schedule_sequential(
    scheduler: Scheduler,
    writer: RunWriter,
    out: Path,
    prepared: Prepared,
    say: Callable[[str], None],
) -> Counters:
    """Rounds until every task is settled or spent (see the module docstring)."""
    o = prepared.options
    writer.manifest.sequential = _design(prepared, None, None)
    writer.write_manifest()
    while True:
        live = [(ti, s) for ti, s in enumerate(prepared.states) if s.verdict is None]
        if not live:
            break
        selection: dict[int, list[str]] = {}
        for ti, s in live:
            nxt = s.order[s.visited : s.visited + o.round_problems]
            selection[ti] = nxt
            s.visited += len(nxt)
        counters = await scheduler.run_round(selection)
        if counters.tripped:
            writer.manifest.sequential = _design(prepared, None, "stopped: the endpoint failed")
            return counters
        with collect_warnings():
            frames = frames_from_run(out)
        for _ti, s in live:
            _look(s, frames[s.name], o.threshold)
            last = s.looks[-1]
            say(
                f"{s.name}: {s.visited} of {len(s.order)} problems, sequence "
                f"[{last.lower:+.4f}, {last.upper:+.4f}]" + (f": {s.verdict}" if s.verdict else "")
            )
        writer.manifest.sequential = _design(prepared, None, None)
        writer.write_manifest()
    verdicts: dict[str, Any] = {s.name: s.verdict for s in prepared.states}
    overall, _code = sequential_overall(verdicts)
    why = "; ".join(
        f"{s.name}: stopped after {s.stopped_after} of {len(s.order)} problems: {s.verdict} ({s.reason})"
        for s in prepared.states
    )
    writer.manifest.sequential = _design(prepared, overall, why)
    writer.write_manifest()
    return scheduler.counters
