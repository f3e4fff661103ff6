"""The texts a drift measurement scores: a JSONL corpus, or a task's problems.

``--texts FILE.jsonl`` (:func:`load_texts`): one ``{"id": ..., "text": ...}`` record a line,
scored as given (a corpus, as llama.cpp's ``llama-perplexity`` takes).

``--task T``: each problem's prompt text (a chat prompt's message contents joined by blank
lines) and a newline (:func:`task_prompts`), followed by a continuation:

* ``--continuation sampled`` (the default): the baseline's own continuation, sampled in the
  same command with a recorded seed (:class:`rolleval.drift.SampledContinuation`);
* ``--continuation reference`` (:func:`task_texts`): the problem's reference answer, the
  answer a correct model would give.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError, UsageError

__all__ = ["load_texts", "task_prompts", "task_texts"]


def load_texts(path: str | Path, *, limit: int | None = None) -> list[tuple[str, str]]:
    """``(id, text)`` pairs of a JSONL file of ``{"id": ..., "text": ...}`` records.
    :class:`DataError` naming the file, the line and the fix for a bad record."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"{p}: file not found (--texts takes a JSONL file)") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 ({exc.reason}); save the file as UTF-8", path=p) from None
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise DataError(
                'not a JSON object; each line must be {"id": ..., "text": ...}', path=p, line=n
            ) from None
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or not rec["text"]:
            raise DataError(
                'needs a non-empty string "text" (each line {"id": ..., "text": ...})',
                path=p,
                line=n,
            )
        text_id = str(rec.get("id", n))
        if text_id in seen:
            raise DataError(f"duplicate id {text_id!r}; give every text its own id", path=p, line=n)
        seen.add(text_id)
        out.append((text_id, rec["text"]))
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise DataError('no texts; add lines {"id": ..., "text": ...}', path=p)
    return out


def _problems(task: str, limit: int | None) -> list[tuple[str, str, str]]:
    from ..tasks import get_task

    out = []
    for problem in get_task(task).load(limit=limit):
        prompt = problem.prompt
        if isinstance(prompt, str):
            head = prompt
        else:
            head = "\n\n".join(str(m.get("content") or "") for m in prompt)
        out.append((problem.problem_id, f"{head}\n", str(problem.reference)))
    if not out:
        raise UsageError(f"task {task!r} has no problems")
    return out


def task_prompts(task: str, *, limit: int | None = None) -> list[tuple[str, str]]:
    """``(problem id, prompt + newline)`` of each problem of ``task``: the texts the
    baseline continues with ``--continuation sampled``."""
    return [(i, head) for i, head, _ in _problems(task, limit)]


def task_texts(task: str, *, limit: int | None = None) -> list[tuple[str, str]]:
    """``(problem id, prompt + newline + reference)`` of each problem of ``task``
    (``--continuation reference``)."""
    return [(i, head + ref) for i, head, ref in _problems(task, limit)]
