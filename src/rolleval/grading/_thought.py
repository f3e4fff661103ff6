"""The thought of a reasoning model, kept apart from the answer before anything is graded.

A server with a reasoning parser sends the thought in its own field (stored as the rollout's
``reasoning``); without one the thought arrives inline in the text, between thinking
delimiters (``<think>...</think>answer``). :func:`split_thought` applies the task's
delimiters (``docs/contract.md``, "Reasoning models"):

* the answer is the text after the **last** closing delimiter;
* a closing delimiter with no opening one before it means everything before it is thought
  (the chat template opened the thought in the prompt);
* an opening delimiter never closed means no answer, whatever the thought holds (a budget
  run out mid-thought: no letter or number in an unfinished thought is ever graded);
* an empty opening delimiter (``["", "</think>"]``) says the chat template opens the thought
  in the prompt (Qwen3.5-style, R1): every text starts inside it, so a text with no closing
  delimiter (cut at the budget, no tag ever written) is no answer;
* an answer that is empty or only whitespace is no answer.

A rollout with no answer is never shown to the grader: it gets :data:`NO_ANSWER` (wrong,
nothing extracted). The split is recomputed from the stored text at every grading, so a
delimiter fix costs a regrade, never a re-run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ._protocol import Judgement

__all__ = [
    "NO_ANSWER",
    "ThoughtSplit",
    "check_thinking",
    "grading_inputs",
    "judgement_of",
    "split_thought",
    "thinking_of",
    "thought_and_answer",
]

Thinking = tuple[str, str] | None
"""An ``(open, close)`` delimiter pair, or ``None``: no inline thought (texts graded whole)."""

#: The judgement of a rollout with no answer (empty, or ended inside its thought).
NO_ANSWER = Judgement(extracted=None, correct=False, cluster=None)


@dataclass(frozen=True, slots=True)
class ThoughtSplit:
    """One rollout's text split into thought and answer."""

    answer: str | None
    """What the grader judges; ``None``: no answer (never shown to the grader)."""
    thought_chars: int | None
    """Characters of the thought (the separate field plus the inline thought, delimiters
    left out); ``None`` when the rollout holds no thought at all."""
    answer_chars: int
    """Characters of ``answer`` (0 when there is none)."""
    in_thought: bool
    """The text ended inside the thought: an unclosed opening delimiter, or no answer
    after a thought (a null or empty ``content`` beside a non-empty ``reasoning``)."""


def check_thinking(value: Any, *, where: str = "thinking") -> Thinking:
    """The delimiter pair of a setting: ``"none"`` (or ``None``) turns inline thoughts off;
    otherwise two distinct strings ``[open, close]``, ``close`` non-empty. An empty ``open``
    says the chat template opens the thought in the prompt: every text starts inside it.
    Anything else is refused."""
    if value is None or value == "none":
        return None
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, str) for v in value)
        and value[1]
        and value[0] != value[1]
    ):
        return (value[0], value[1])
    raise UsageError(
        f"{where} must be 'none' or a pair of distinct strings [open, close] with a "
        f"non-empty close (e.g. ['<think>', '</think>'], or ['', '</think>'] when the chat "
        f"template opens the thought), got {value!r}"
    )


def split_thought(
    text: str | None, reasoning: str | None = None, thinking: Thinking = ("<think>", "</think>")
) -> ThoughtSplit:
    """Split ``text`` (the server's content, ``None`` for ``null``) by the delimiters
    ``thinking``; ``reasoning`` is the thought the server sent apart (see the module
    docstring for the rules)."""
    content = text or ""
    thought = len(reasoning) if reasoning else 0
    has_thought = bool(reasoning)
    answer: str | None = content
    unclosed = False
    if thinking is not None:
        open_, close = thinking
        end = content.rfind(close)
        if end >= 0:
            inline = content[:end].replace(close, "")
            if open_:
                inline = inline.replace(open_, "")
            thought += len(inline)
            has_thought = True
            answer = content[end + len(close) :]
        else:
            start = content.find(open_) if open_ else 0  # "": opened by the prompt
            if start >= 0:
                thought += len(content[start:].replace(open_, "") if open_ else content)
                has_thought = True
                unclosed = True
                answer = None
    if answer is not None and not answer.strip():
        answer = None
    return ThoughtSplit(
        answer=answer,
        thought_chars=thought if has_thought else None,
        answer_chars=len(answer) if answer is not None else 0,
        in_thought=unclosed or (answer is None and has_thought),
    )


def thought_and_answer(
    text: str | None, reasoning: str | None, thinking: Thinking
) -> tuple[str | None, str]:
    """For display (``show``, the HTML report): the thought (the separate field, then the
    inline thought; ``None`` when there is none) and the rest of the text (the answer, or
    ``""`` when the text ended inside the thought). Same rules as :func:`split_thought`."""
    content = text or ""
    parts = [reasoning] if reasoning else []
    answer = content
    if thinking is not None:
        open_, close = thinking
        end = content.rfind(close)
        if end >= 0:
            inline = content[:end].replace(close, "")
            parts.append((inline.replace(open_, "") if open_ else inline).strip())
            answer = content[end + len(close) :]
        elif (start := content.find(open_) if open_ else 0) >= 0:
            parts.append(content[start + len(open_) :].strip())
            answer = content[:start]
    thought = "\n\n".join(p for p in parts if p)
    return (thought or None), answer


def grading_inputs(
    rollouts: Iterable[Any], thinking: Thinking
) -> tuple[list[tuple[int, str]], dict[int, ThoughtSplit]]:
    """What the grader gets of a problem's completed rollouts (``RolloutRecord`` s): the
    ``(index, answer)`` pairs of those with an answer, and every rollout's split. A
    log-likelihood rollout (``options``) is passed whole and has no split."""
    items: list[tuple[int, str]] = []
    splits: dict[int, ThoughtSplit] = {}
    for r in rollouts:
        if r.status != "ok":
            continue
        if r.options is not None:
            items.append((r.index, r.grader_input()))
            continue
        split = split_thought(r.text, r.reasoning, thinking)
        splits[r.index] = split
        if split.answer is not None:
            items.append((r.index, split.answer))
    return items, splits


def judgement_of(
    index: int,
    judgements: Mapping[int, Judgement] | None,
    splits: Mapping[int, ThoughtSplit],
    failed: Judgement | None = None,
) -> Judgement | None:
    """The judgement of completed rollout ``index``: :data:`NO_ANSWER` when it had none,
    else the grader's (``failed`` when the whole problem's grading failed)."""
    split = splits.get(index)
    if split is not None and split.answer is None:
        return NO_ANSWER
    if judgements is None:
        return failed
    return judgements.get(index)


def thinking_of(settings: Any) -> Thinking:
    """The delimiter pair of a :class:`~rolleval.records.TaskSettings` (``None`` for ``"none"``)."""
    return check_thinking(getattr(settings, "thinking", "none"))
