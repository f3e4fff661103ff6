"""Grading: what a grader made of each rollout of a problem.

A grader (:class:`Grader`) judges all rollouts of one problem at once and returns one
:class:`Verdict` per rollout: the extracted answer, whether it is correct, and the maj@n
answer cluster it belongs to (labelled by the lowest rollout index of the cluster).
Graders are built from JSON specs by :func:`make_grader`:

* ``math`` (:class:`MathGrader`): rule-based extraction, equivalence by math-verify;
* ``mcq`` (:class:`McqGrader`): the chosen letter;
* ``short_answer`` (:class:`ShortAnswerGrader`): normalised exact match, numbers as numbers;
* ``qa`` (:class:`QaGrader`): exact match and token F1 by the SQuAD or DROP rules;
* ``code`` (:class:`CodeGrader`): the program's tests run in an isolated child process.

:func:`grade_problems` grades a batch (in worker processes for the math grader, with a
per-problem timeout); :class:`GradingPool` does the same one problem at a time, returning
futures, for a runner that grades as rollouts arrive.
"""

from .._public import publish
from ._base import Grader, Verdict, grading_reference
from ._code import CodeGrader, extract_code
from ._judge import JudgeGrader, parse_judge_verdict
from ._loglik import LoglikGrader, score_options
from ._math import MATH_EXTRACTORS, MathGrader
from ._mcq import McqGrader, extract_choice
from ._pool import GradingPool, default_workers, grade_problems
from ._qa import QaGrader, drop_metrics, squad_metrics
from ._registry import GRADER_TYPES, grader_versions, make_grader
from ._short import ShortAnswerGrader, normalize_short_answer

__all__ = [
    "GRADER_TYPES",
    "MATH_EXTRACTORS",
    "CodeGrader",
    "Grader",
    "GradingPool",
    "JudgeGrader",
    "LoglikGrader",
    "MathGrader",
    "McqGrader",
    "QaGrader",
    "ShortAnswerGrader",
    "Verdict",
    "default_workers",
    "drop_metrics",
    "extract_choice",
    "extract_code",
    "grade_problems",
    "grader_versions",
    "grading_reference",
    "make_grader",
    "normalize_short_answer",
    "parse_judge_verdict",
    "score_options",
    "squad_metrics",
]

publish(__name__, globals(), __all__)
