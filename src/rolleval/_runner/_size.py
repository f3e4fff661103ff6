"""``rolleval run --dry-run``: what a run would request, before anything is requested or written.

:func:`run_size` resolves the config's tasks exactly as a run does (their data is loaded and
checked, so a bad task file fails here too) and checks ``--out`` as a run would, then counts
per task: problems, rollouts, requests (one per rollout, or one per problem with
``server_n``) and an estimate of the tokens. On ``--resume`` it counts only what the run
still needs, from the stored records. Nothing is written, no server is started or asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._config import RunConfig
from ._open import check_new, check_resumable
from ._plan import plan_task
from ._resolve import ResolvedTask, resolve_tasks

__all__ = ["CHARS_PER_TOKEN", "RunSize", "TaskSize", "run_size"]

#: The token estimate's rule of thumb: about 4 characters of English text a token.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class TaskSize:
    """One task of a planned run."""

    name: str
    problems: int
    n_rollouts: int
    rollouts: int
    """Rollouts to request (all of them; on a resume, the missing or failed ones)."""
    requests: int
    prompt_tokens: int
    """Estimated prompt tokens sent: each request's prompt, characters / :data:`CHARS_PER_TOKEN`."""
    max_output_tokens: int | None
    """At most ``max_tokens`` a rollout: None when the task sets no ``max_tokens``."""


@dataclass(frozen=True)
class RunSize:
    """What :func:`run_size` counted."""

    tasks: list[TaskSize]
    resume: bool

    @property
    def rollouts(self) -> int:
        return sum(t.rollouts for t in self.tasks)

    @property
    def requests(self) -> int:
        return sum(t.requests for t in self.tasks)

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.tasks)

    @property
    def max_output_tokens(self) -> int | None:
        caps = [t.max_output_tokens for t in self.tasks]
        return None if any(c is None for c in caps) else sum(c or 0 for c in caps)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            "resume": self.resume,
            "rollouts": self.rollouts,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "max_output_tokens": self.max_output_tokens,
            "chars_per_token": CHARS_PER_TOKEN,
            "tasks": [asdict(t) for t in self.tasks],
        }


def _prompt_chars(prompt: Any) -> int:
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(str(m.content)) for m in prompt or ())


def _pending(t: ResolvedTask, ti: int, n: int, out: Path, resume: bool) -> dict[str, int]:
    """Rollouts still to request per problem (all n on a fresh run)."""
    if not resume:
        return dict.fromkeys(t.problem_ids, n)
    from ..rundir._store import RunDir, collect_warnings

    files = RunDir.open(out).task(t.name)
    with collect_warnings():
        plan = plan_task(ti, t.problem_ids, n, files.read_rollouts(), files.read_judgements())
    return {pid: len(indices) for pid, (indices, _) in plan.wanted.items()}


def _task_size(t: ResolvedTask, ti: int, config: RunConfig, out: Path, resume: bool) -> TaskSize:
    n = t.settings.n_rollouts or config.n_rollouts
    pending = _pending(t, ti, n, out, resume)
    rollouts = sum(pending.values())
    per_problem_requests = {pid: (1 if config.server_n and k else k) for pid, k in pending.items()}
    chars = sum(
        _prompt_chars(t.prompts[pid].prompt) * k for pid, k in per_problem_requests.items() if k
    )
    cap = t.sampling.max_tokens
    return TaskSize(
        name=t.name,
        problems=len(t.problem_ids),
        n_rollouts=n,
        rollouts=rollouts,
        requests=sum(per_problem_requests.values()),
        prompt_tokens=-(-chars // CHARS_PER_TOKEN),
        max_output_tokens=None if cap is None or t.loglik else cap * rollouts,
    )


def run_size(config: RunConfig, out: str | Path, *, resume: bool = False) -> RunSize:
    """What ``run_eval(config, out, resume=resume)`` would request; reads only."""
    out = Path(out)
    if not resume:
        check_new(out)
    tasks = resolve_tasks(config)
    if resume:
        check_resumable(out, config, tasks)
    return RunSize([_task_size(t, i, config, out, resume) for i, t in enumerate(tasks)], resume)


def render_size(size: RunSize) -> str:
    """The text ``rolleval run --dry-run`` prints."""
    what = "still to request" if size.resume else "to request"
    lines = [f"rolleval run --dry-run: nothing requested, nothing written ({what}):"]
    for t in size.tasks:
        out_tok = (
            "N/A (no max_tokens)" if t.max_output_tokens is None else f"{t.max_output_tokens:,}"
        )
        lines.append(
            f"  {t.name}: {t.problems:,} problems x {t.n_rollouts} rollouts; {t.rollouts:,} rollouts "
            f"in {t.requests:,} requests;"
        )
        lines.append(
            f"    about {t.prompt_tokens:,} prompt tokens, at most {out_tok} output tokens"
        )
    total_out = size.max_output_tokens
    lines.append(f"total: {size.rollouts:,} rollouts in {size.requests:,} requests;")
    lines.append(
        f"  about {size.prompt_tokens:,} prompt tokens ({CHARS_PER_TOKEN} characters a token), at most "
        + ("N/A (a task sets no max_tokens)" if total_out is None else f"{total_out:,}")
        + " output tokens"
    )
    return "\n".join(lines)
