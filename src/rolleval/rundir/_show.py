"""The Python API behind ``rolleval show``: a run's records joined for reading.

The function does everything its CLI command does; the CLI only parses flags and prints.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import UsageError
from ._store import RunDir, collect_warnings

__all__ = ["show_records"]


def show_records(
    run: str | os.PathLike[str] | RunDir,
    *,
    task: str | None = None,
    problem: str | None = None,
    failures: bool = False,
    unextracted: bool = False,
) -> list[dict[str, Any]]:
    """Joined records for reading: one dict per problem with its prompt, reference and rollouts.

    Each rollout carries the raw text and its judgement. ``failures`` keeps rollouts that are
    not correct (wrong, unextracted, infra or grader errors); ``unextracted`` keeps gradable
    rollouts with no extracted answer. Problems with no rollout left are dropped.
    """
    rd = run if isinstance(run, RunDir) else RunDir.open(run)
    names = [task] if task else rd.task_names()
    out: list[dict[str, Any]] = []
    found = False
    with collect_warnings():
        for name in names:
            tf = rd.require_task(name)
            prompts = tf.read_prompts().by_id
            if problem is not None and problem not in prompts:
                continue
            found = True
            rolls = tf.read_rollouts().effective
            judg = tf.read_judgements().effective
            if problem is not None:
                rolls = {k: v for k, v in rolls.items() if k[0] == problem}
                judg = {k: v for k, v in judg.items() if k[0] == problem}
            keys = sorted(set(rolls) | set(judg))
            per: dict[str, list[dict[str, Any]]] = {}
            for key in keys:
                jr = judg.get(key)
                rr = rolls.get(key)
                item = {
                    "index": key[1],
                    "status": rr.status if rr is not None else jr.status if jr else None,
                    "text": rr.text if rr is not None else None,
                    "reasoning": rr.reasoning if rr is not None else None,
                    "finish_reason": (
                        rr.finish_reason
                        if rr is not None and rr.finish_reason is not None
                        else jr.finish_reason
                        if jr is not None
                        else None
                    ),
                    "error": rr.error if rr is not None else None,
                    "extracted": jr.extracted if jr is not None else None,
                    "correct": jr.correct if jr is not None else None,
                    "cluster": jr.cluster if jr is not None else None,
                    "grader_error": jr.grader_error if jr is not None else None,
                    "metrics": dict(jr.metrics) if jr is not None and jr.metrics else {},
                    "judge_raw": jr.judge_raw if jr is not None else None,
                }
                gradable = item["status"] == "ok" and item["grader_error"] is None and jr
                if failures and item["correct"] is True:
                    continue
                if unextracted and not (gradable and item["extracted"] is None):
                    continue
                per.setdefault(key[0], []).append(item)
            for pid in sorted(
                per
                if (failures or unextracted)
                else set(per) | ({problem} if problem else set(prompts))
            ):
                p = prompts.get(pid)
                out.append(
                    {
                        "task": name,
                        "problem_id": pid,
                        "prompt": p.model_dump()["prompt"] if p is not None else None,
                        "reference": p.reference if p is not None else None,
                        "rollouts": per.get(pid, []),
                    }
                )
    if problem is not None and not found:
        raise UsageError(f"no problem {problem!r} in {rd.path} (tasks: {', '.join(names)})")
    return out
