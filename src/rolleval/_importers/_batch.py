"""A batch of encoded record lines plus the report columns of the same records.

A streaming importer of millions of records (the lm-eval importer) hands the writer whole
problems at a time as the JSON lines of the three record streams, already encoded (by the
line structs of :mod:`rolleval.records._lines`, or by byte templates that give the same
bytes, checked by ``tests/importers/test_importers_fast.py``), together with the columns the task's
report reads (:class:`~rolleval.rundir._table.PromptRow` and
:class:`~rolleval.rundir._table.ScoredJudgementRow` fields), so neither the records nor their columns
are rebuilt from objects afterwards.

A producer that knows most columns hold one value (every judgement of a take_first import has
``index`` 0 and status ``ok``) appends only the varying columns (:attr:`LineBatch.varying`)
and calls :meth:`LineBatch.pad` before appending whole records; the constant columns are then
filled up to the same length.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ..records._lines import JudgementLine, PromptLine, RolloutLine, encode_lines
from ..rundir._table import JUDGEMENT_FIELDS, PromptRow

__all__ = ["LineBatch"]

_PROMPT_FIELDS = list(PromptRow.__struct_fields__)
_P_VARYING = ("problem_id", "content_hash")
_J_VARYING = ("problem_id", "extracted", "correct", "score", "cluster", "grader_error")
_P_CONST = {"cluster": None}
_J_CONST = {
    "index": 0,
    "status": "ok",
    "finish_reason": None,
    "output_tokens": None,
    "metrics": None,
    "reasoning_tokens": None,
    "thought_chars": None,
    "answer_chars": None,
    "in_thought": None,
}
_PGET = [(f, attrgetter(f)) for f in _PROMPT_FIELDS]
_JGET = [(f, attrgetter(f)) for f in JUDGEMENT_FIELDS if f != "metrics"]
assert set(_P_VARYING) | set(_P_CONST) == set(_PROMPT_FIELDS)
assert set(_J_VARYING) | set(_J_CONST) == set(JUDGEMENT_FIELDS)


class LineBatch:
    """Encoded lines (``prompts``, ``rollouts``, ``judgements``: lists of newline-terminated
    bytes) and the report columns ``pcols``/``jcols`` of the same records, in order."""

    def __init__(self) -> None:
        self.prompts: list[bytes] = []
        self.rollouts: list[bytes] = []
        self.judgements: list[bytes] = []
        self.pcols: dict[str, list[Any]] = {f: [] for f in _PROMPT_FIELDS}
        self.jcols: dict[str, list[Any]] = {f: [] for f in JUDGEMENT_FIELDS}
        self.any_reference = False
        self.more_rollouts = 0
        """Rollouts beyond one per problem (a producer of one rollout per problem adds 0)."""

    def varying(self) -> tuple[list[Any], ...]:
        """The lists a producer appends to per record, constant columns left to :meth:`pad`:
        prompt ``problem_id``, ``content_hash``; judgement ``problem_id``, ``extracted``,
        ``correct``, ``score``, ``cluster``, ``grader_error``."""
        return tuple(self.pcols[f] for f in _P_VARYING) + tuple(self.jcols[f] for f in _J_VARYING)

    def pad(self) -> None:
        """Fill the constant columns up to the length of the varying ones."""
        for cols, const in ((self.pcols, _P_CONST), (self.jcols, _J_CONST)):
            n = len(cols["problem_id"])
            for f, v in const.items():
                col = cols[f]
                if len(col) < n:
                    col.extend([v] * (n - len(col)))

    def add_lines(
        self,
        prompts: list[PromptLine],
        rollouts: list[RolloutLine],
        judgements: list[JudgementLine],
    ) -> None:
        """Append whole records given as line structs (encoded here, columns read off)."""
        self.pad()
        if prompts:
            self.prompts.append(encode_lines(prompts))
            for f, get in _PGET:
                self.pcols[f].extend(map(get, prompts))
            if not self.any_reference:
                self.any_reference = any(p.reference is not None for p in prompts)
        self.more_rollouts += len(rollouts) - len(prompts)
        if rollouts:
            self.rollouts.append(encode_lines(rollouts))
        if judgements:
            self.judgements.append(encode_lines(judgements))
            for f, get in _JGET:
                self.jcols[f].extend(map(get, judgements))
            self.jcols["metrics"].extend([j.metrics or None for j in judgements])

    @property
    def n_problems(self) -> int:
        return len(self.pcols["problem_id"])

    @property
    def n_rollouts(self) -> int:
        return self.n_problems + self.more_rollouts
