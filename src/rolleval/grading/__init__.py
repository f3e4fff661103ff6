"""Grading: what a grader made of each rollout of a problem.

A grader (:class:`Grader`) judges all rollouts of one problem at once and returns one
:class:`Judgement` per rollout: the extracted answer, whether it is correct, and the maj@n
answer cluster it belongs to (labelled by the lowest rollout index of the cluster).
Graders are built from JSON specs by :func:`make_grader`:

* ``math`` (:class:`MathGrader`): rule-based extraction, equivalence by math-verify;
* ``mcq`` (:class:`McqGrader`): the chosen letter;
* ``short_answer`` (:class:`ShortAnswerGrader`): normalised exact match, numbers as numbers;
* ``qa`` (:class:`QaGrader`): exact match and token F1 by the SQuAD or DROP rules;
* ``code`` (:class:`CodeGrader`): the program's tests run in an isolated child process.

Before any grader sees a text, :func:`split_thought` keeps a reasoning model's thought
apart from its answer (the task's thinking delimiters); a rollout with no answer gets
:data:`NO_ANSWER` without being graded (:func:`grading_inputs`, :func:`judgement_of`).

:func:`grade_problems` grades a batch (in worker processes for the math grader, with a
per-problem timeout); :class:`GradingPool` does the same one problem at a time, returning
futures, for a runner that grades as rollouts arrive.
"""

from .._public import publish
from ._code import CodeGrader, extract_code
from ._judge import JudgeGrader, parse_judge_reply
from ._loglik import LoglikGrader, score_options
from ._math import MATH_EXTRACTORS, MathGrader
from ._mcq import McqGrader, extract_choice
from ._pool import GradingPool, default_workers, grade_problems
from ._protocol import Grader, Judgement, grading_reference
from ._qa import QaGrader, drop_metrics, squad_metrics
from ._registry import GRADER_TYPES, grader_versions, make_grader
from ._short import ShortAnswerGrader, normalize_short_answer
from ._thought import (
    NO_ANSWER,
    ThoughtSplit,
    check_thinking,
    grading_inputs,
    judgement_of,
    split_thought,
    thinking_of,
    thought_and_answer,
)

__all__ = [
    "GRADER_TYPES",
    "MATH_EXTRACTORS",
    "NO_ANSWER",
    "CodeGrader",
    "Grader",
    "GradingPool",
    "JudgeGrader",
    "Judgement",
    "LoglikGrader",
    "MathGrader",
    "McqGrader",
    "QaGrader",
    "ShortAnswerGrader",
    "ThoughtSplit",
    "check_thinking",
    "default_workers",
    "drop_metrics",
    "extract_choice",
    "extract_code",
    "grade_problems",
    "grader_versions",
    "grading_inputs",
    "grading_reference",
    "judgement_of",
    "make_grader",
    "normalize_short_answer",
    "parse_judge_reply",
    "score_options",
    "split_thought",
    "squad_metrics",
    "thinking_of",
    "thought_and_answer",
]

publish(__name__, globals(), __all__)
