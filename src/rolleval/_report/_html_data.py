"""What the HTML page shows per problem, read from a run directory through the typed readers.

:func:`read_side` returns, per task, every problem's prompt, reference and rollouts (text,
extracted answer, verdict, finish reason, tokens, latency, answer cluster) and the run's
health distributions (output tokens, latency). Nothing here is rendered: the page builder
(:mod:`rolleval._report._html`) embeds it, and the page's script shows it with ``textContent`` only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RollevalError
from ..records import Message
from ..rundir._store import RunDir, TaskFiles

__all__ = ["ProblemView", "SideView", "TaskView", "read_side"]


@dataclass
class ProblemView:
    id: str
    prompt: str
    reference: str
    rollouts: list[dict[str, Any]]
    gradable: int = 0
    correct: int = 0
    unextracted: int = 0
    errored: int = 0

    @property
    def rate(self) -> float | None:
        return self.correct / self.gradable if self.gradable else None


@dataclass
class TaskView:
    name: str
    problems: dict[str, ProblemView] = field(default_factory=dict)
    output_tokens: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


@dataclass
class SideView:
    source: str
    tasks: dict[str, TaskView] = field(default_factory=dict)
    note: str | None = None
    """Why nothing could be read (e.g. a baseline file holds counts, not rollouts)."""


def _prompt_text(prompt: list[Message] | str | None) -> str:
    if prompt is None:
        return "(prompt not stored: the source this run was imported from lacks it)"
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in prompt)


def _reference_text(ref: str | list[str] | None) -> str:
    if ref is None:
        return "(decided by a procedure, no reference string)"
    return ref if isinstance(ref, str) else " | ".join(ref)


def _text_or_error(text: str | None, error: str | None) -> str:
    return text if text is not None else (error or "")


def read_task(task: TaskFiles) -> TaskView:
    from ..grading import thinking_of, thought_and_answer

    view = TaskView(task.name)
    thinking = thinking_of(task.read_settings())
    prompts = task.read_prompts()
    rollouts = task.read_rollouts()
    judgements = task.read_judgements().effective
    for pid, rec in prompts.by_id.items():
        view.problems[pid] = ProblemView(
            pid, _prompt_text(rec.prompt), _reference_text(rec.reference), []
        )
    for key in sorted(rollouts.effective):
        r = rollouts.effective[key]
        p = view.problems.get(r.problem_id)
        if p is None:
            continue
        j = judgements.get(key)
        tokens = r.usage.completion_tokens if r.usage else None
        if tokens is None and j is not None:
            tokens = j.output_tokens
        thought, answer = (
            thought_and_answer(r.text, r.reasoning, thinking)
            if r.status == "ok" and r.options is None
            else (None, "")
        )
        row: dict[str, Any] = {
            "i": r.index,
            "status": r.status,
            "text": answer if thought is not None else _text_or_error(r.text, r.error),
            "finish": r.finish_reason,
            "tokens": tokens,
            "latency": r.latency_s,
            "extracted": j.extracted if j else None,
            "correct": j.correct if j else None,
            "cluster": j.cluster if j else None,
            "grader_error": j.grader_error if j else None,
        }
        if thought is not None:
            row["thought"] = thought  # shown collapsed above the answer, as text only
        p.rollouts.append(row)
        gradable = j is not None and j.gradable
        if gradable:
            p.gradable += 1
            p.correct += bool(j.correct)  # type: ignore[union-attr]
            p.unextracted += j.extracted is None  # type: ignore[union-attr]
        if r.status in ("infra_error", "timeout") or (j is not None and j.grader_error):
            p.errored += 1
        if r.status == "ok" and tokens is not None:
            view.output_tokens.append(int(tokens))
        if r.latency_s is not None:
            view.latencies.append(float(r.latency_s))
    return view


def read_side(source: str | os.PathLike[str], tasks: list[str] | None = None) -> SideView:
    """The problems of a run directory (``tasks``: only these). A source that is not a run
    directory (a baseline file) or cannot be read gives an empty view with the reason."""
    side = SideView(str(source))
    if not Path(source).is_dir():
        side.note = "a baseline file holds per-problem counts only, no rollout text"
        return side
    try:
        run = RunDir.open(source)
        names = [n for n in run.task_names() if tasks is None or n in tasks]
        for name in names:
            side.tasks[name] = read_task(run.task(name))
    except RollevalError as exc:
        side.tasks.clear()
        side.note = f"rollouts not shown: {exc}"
    return side
