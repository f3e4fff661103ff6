"""The data a task is made of: its problems, where its rows come from, how to build them.

No task logic here, so that :mod:`._build` (rows to problems) and :mod:`._spec` (configs to
tasks) both import these types and neither imports the other's dependants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..records import PromptRecord, content_hash

__all__ = ["Problem", "Recipe", "RowSource"]


@dataclass(frozen=True)
class Problem:
    """One problem of a task: the prompt as it will be sent and the reference answer."""

    problem_id: str
    """Stable id from the data, ``"<task>/<id>"``; never random."""
    prompt: list[dict[str, str]] | str
    """Chat messages ``[{"role": ..., "content": ...}]``, or the raw text for completions."""
    reference: str | list[str]
    """Gold answer, or a list of accepted answers (aliases)."""
    cluster: str | None = None
    """Cluster key for clustered standard errors (e.g. the MMLU subject)."""
    extras: dict[str, Any] = field(default_factory=dict)
    """Task-specific JSON-serialisable facts, e.g. ``{"choices": [...], "permutation": [...]}``."""

    @property
    def content_hash(self) -> str:
        """:func:`rolleval.records.content_hash` of prompt and reference."""
        return content_hash(self.prompt, self.reference)

    def to_record(self) -> PromptRecord:
        """The :class:`~rolleval.records.PromptRecord` of this problem."""
        return PromptRecord.build(
            self.problem_id,
            self.prompt,
            self.reference,
            cluster=self.cluster,
            extras=self.extras,
        )


@dataclass(frozen=True)
class RowSource:
    """Where a task's rows come from: a callable returning ``(number, line, row)`` triples."""

    read: Callable[[], list[tuple[int, int | None, dict[str, Any]]]]
    path: str | None
    """Shown in error messages (the user's file, or the packaged data file)."""


@dataclass(frozen=True)
class Recipe:
    """Everything :mod:`._build` needs to turn rows into problems (parsed task config)."""

    rows: RowSource
    id_field: str | None
    question_field: str
    answer_field: str
    choices_field: str | list[str] | None
    extras_fields: tuple[str, ...]
    template: str
    system: str | None
    chat: bool
    letters: str
    answer_format: str
    aliases: dict[str, list[str]]
    fewshot: list[dict[str, str]]
