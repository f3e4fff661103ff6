"""The effective-record rules: which stored line counts when a stream holds several.

Streams are append-only, so a resumed or crashed run can hold more than one line for the
same problem or rollout. These rules, applied once by the typed readers
(:meth:`rolleval.rundir._store.TaskFiles.read_prompts` and friends), decide which one counts:

* prompts: the first record of a problem id counts; a repeat with the same
  ``content_hash`` is a counted duplicate, one with another hash is an input error;
* rollouts: the first attempt with status ``ok`` counts; without one, the last attempt
  (a resume appends a new attempt after an infra error or timeout). A second ``ok`` is a
  counted duplicate;
* judgements: the first record of a (problem, index) counts; later ones are counted
  duplicates.

The columnar reader behind reports (:mod:`rolleval.rundir._table`) applies the judgement rule in
numpy; ``tests/records/test_record_contract.py`` checks that both agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import DataError
from ._streams import GRADABLE_STATUS, JudgementRecord, PromptRecord, RolloutRecord

__all__ = [
    "JudgementSet",
    "PromptSet",
    "RolloutSet",
    "effective_judgements",
    "effective_rollouts",
]

Key = tuple[str, int]


def effective_rollouts(records: Sequence[RolloutRecord]) -> tuple[dict[Key, RolloutRecord], int]:
    """The rollout that counts for each (problem, index), and how many duplicates were ignored.

    Rule: the first record with status ``ok`` wins; without one, the last attempt wins. A
    second ``ok`` record for the same (problem, index) is a duplicate: ignored and counted.
    """
    chosen: dict[Key, RolloutRecord] = {}
    duplicates = 0
    for rec in records:
        key = (rec.problem_id, rec.index)
        prev = chosen.get(key)
        if prev is None:
            chosen[key] = rec
        elif prev.status == GRADABLE_STATUS:
            duplicates += rec.status == GRADABLE_STATUS
        else:
            chosen[key] = rec
    return chosen, duplicates


def effective_judgements(
    records: Sequence[JudgementRecord],
) -> tuple[dict[Key, JudgementRecord], int]:
    """The judgement that counts for each (problem, index) (the first), and the duplicates."""
    chosen: dict[Key, JudgementRecord] = {}
    for rec in records:
        chosen.setdefault((rec.problem_id, rec.index), rec)
    return chosen, len(records) - len(chosen)


@dataclass
class PromptSet:
    """A task's prompt records and the one that counts per problem (sorted by id)."""

    records: list[PromptRecord]
    by_id: dict[str, PromptRecord]
    duplicates: int = 0
    torn_line: int | None = None

    @classmethod
    def build(
        cls,
        records: list[PromptRecord],
        *,
        lines: Sequence[int] | None = None,
        path: object = "prompts.jsonl",
        torn_line: int | None = None,
    ) -> PromptSet:
        seen: dict[str, PromptRecord] = {}
        dups = 0
        for i, rec in enumerate(records):
            prev = seen.get(rec.problem_id)
            if prev is None:
                seen[rec.problem_id] = rec
            elif prev.content_hash != rec.content_hash:
                raise DataError(
                    f"problem {rec.problem_id!r} appears twice with different content; "
                    "remove one of the records",
                    path=path,
                    line=lines[i] if lines is not None else i + 1,
                )
            else:
                dups += 1
        return cls(records, dict(sorted(seen.items())), dups, torn_line)

    @property
    def ids(self) -> list[str]:
        """Problem ids in canonical (sorted) order."""
        return list(self.by_id)


@dataclass
class RolloutSet:
    """A task's rollout attempts and the one that counts per rollout."""

    records: list[RolloutRecord]
    effective: dict[Key, RolloutRecord]
    duplicates: int = 0
    attempts: dict[Key, int] = field(default_factory=dict)
    """Highest attempt number stored per rollout (the next request is attempt + 1)."""
    torn_line: int | None = None
    lines: list[int] | None = None
    """1-based line of each record (``None``: record ``i`` is on line ``i + 1``)."""

    @classmethod
    def build(
        cls,
        records: list[RolloutRecord],
        *,
        lines: list[int] | None = None,
        torn_line: int | None = None,
    ) -> RolloutSet:
        chosen, dups = effective_rollouts(records)
        attempts: dict[Key, int] = {}
        for r in records:
            key = (r.problem_id, r.index)
            attempts[key] = max(attempts.get(key, 0), r.attempt)
        return cls(records, chosen, dups, attempts, torn_line, lines)

    def line_of(self, i: int) -> int:
        return i + 1 if self.lines is None else self.lines[i]


@dataclass
class JudgementSet:
    """A task's judgement records and the one that counts per rollout."""

    records: list[JudgementRecord]
    effective: dict[Key, JudgementRecord]
    duplicates: int = 0
    torn_line: int | None = None

    @classmethod
    def build(cls, records: list[JudgementRecord], *, torn_line: int | None = None) -> JudgementSet:
        chosen, dups = effective_judgements(records)
        return cls(records, chosen, dups, torn_line)

    def by_problem(self) -> dict[str, dict[int, JudgementRecord]]:
        """Effective judgements grouped by problem id, then rollout index."""
        out: dict[str, dict[int, JudgementRecord]] = {}
        for (pid, idx), rec in self.effective.items():
            out.setdefault(pid, {})[idx] = rec
        return out
