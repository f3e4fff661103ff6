"""The grading package surface: exports, make_grader, Judgement invariants, provenance."""

from __future__ import annotations

import json
import re

import pytest

import rolleval.grading as grading
from rolleval.errors import UsageError
from rolleval.grading import (
    GRADER_TYPES,
    Judgement,
    MathGrader,
    McqGrader,
    ShortAnswerGrader,
    grader_versions,
    make_grader,
)


def _isort_key(name: str) -> tuple[int, str]:
    """ruff RUF022's order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1 if name[:1].isupper() else 2, name)


def test_all_is_sorted_and_complete():
    assert grading.__all__ == sorted(grading.__all__, key=_isort_key)
    assert len(set(grading.__all__)) == len(grading.__all__)
    for name in grading.__all__:
        obj = getattr(grading, name)
        if hasattr(obj, "__module__") and not isinstance(obj, (tuple, dict)):
            assert obj.__module__ == "rolleval.grading", name


def test_grader_types():
    assert GRADER_TYPES == ("code", "judge", "loglik", "math", "mcq", "qa", "short_answer")


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ({"type": "math"}, MathGrader),
        ({"type": "math", "extractors": ["gsm8k", "last_number"]}, MathGrader),
        ({"type": "mcq", "letters": "ABCDEFGHIJ"}, McqGrader),
        ({"type": "mcq"}, McqGrader),
        (
            {"type": "short_answer", "numeric_tolerance": None, "first_line": True},
            ShortAnswerGrader,
        ),
        ({"type": "short_answer", "numeric_tolerance": 1}, ShortAnswerGrader),
    ],
)
def test_make_grader_round_trips_through_json(spec, cls):
    grader = make_grader(spec)
    assert type(grader) is cls
    rebuilt = make_grader(json.loads(json.dumps(grader.spec)))
    assert rebuilt == grader and rebuilt.spec == grader.spec and rebuilt.identity == grader.identity
    assert {k: v for k, v in grader.spec.items() if k in spec} == spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"type": "regex"},
            "unknown type 'regex'; accepted types: code, judge, loglik, math, mcq, qa, short_answer",
        ),
        ({}, "no 'type' key; accepted types: code, judge, loglik, math, mcq, qa, short_answer"),
        ("math", "must be a JSON object"),
        (
            {"type": "math", "extractor": ["boxed"]},
            "key 'extractor' is not accepted for type 'math'; accepted keys: extractors, type",
        ),
        (
            {"type": "math", "extractors": ["boxed", "latex"]},
            "unknown extractor 'latex'; allowed: boxed, answer_line, gsm8k, last_number",
        ),
        ({"type": "math", "extractors": []}, "'extractors' must name at least one of boxed"),
        ({"type": "math", "extractors": "boxed"}, "'extractors' must be a list of names"),
        ({"type": "math", "extractors": ["boxed", "boxed"]}, "names an extractor twice"),
        (
            {"type": "mcq", "letters": "abcd"},
            "'letters' must be a string of at least 2 distinct capital letters",
        ),
        ({"type": "mcq", "letters": "A"}, "'letters' must be"),
        ({"type": "mcq", "letters": "AAB"}, "'letters' must be"),
        ({"type": "mcq", "letters": ["A", "B"]}, "'letters' must be"),
        (
            {"type": "mcq", "choices": "AB"},
            "key 'choices' is not accepted for type 'mcq'; accepted keys: letters, type",
        ),
        (
            {"type": "short_answer", "numeric_tolerance": -1},
            "'numeric_tolerance' must be null or a finite number >= 0",
        ),
        ({"type": "short_answer", "numeric_tolerance": "0.1"}, "'numeric_tolerance' must be"),
        ({"type": "short_answer", "numeric_tolerance": True}, "'numeric_tolerance' must be"),
        (
            {"type": "short_answer", "numeric_tolerance": float("nan")},
            "'numeric_tolerance' must be",
        ),
        ({"type": "short_answer", "first_line": "yes"}, "'first_line' must be true or false"),
        (
            {"type": "short_answer", "tolerance": 0.1},
            "accepted keys: first_line, numeric_tolerance, type",
        ),
    ],
)
def test_make_grader_errors(spec, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        make_grader(spec)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"extracted": "", "correct": False, "cluster": None},  # "" is never an answer
        {"extracted": None, "correct": None, "cluster": None},  # correct None needs an error
        {"extracted": None, "correct": False, "cluster": 0},  # no answer, no cluster
        {"extracted": "1", "correct": True, "cluster": None},  # an answer has a cluster
        {"extracted": "1", "correct": True, "cluster": -1},
        {"extracted": "1", "correct": None, "cluster": 0, "grader_error": "x"},
        {"extracted": "1", "correct": True, "cluster": None, "grader_error": "x"},
        {"extracted": "1", "correct": True, "cluster": 0, "score": 1.5},
    ],
)
def test_verdict_invariants(kwargs):
    with pytest.raises(ValueError, match="Judgement"):
        Judgement(**kwargs)


def test_verdict_failed():
    judgement = Judgement.failed("timeout after 30s", extracted="7")
    assert (judgement.correct, judgement.cluster, judgement.grader_error) == (
        None,
        None,
        "timeout after 30s",
    )


def test_grader_versions_lists_dependencies():
    from importlib.metadata import version

    from rolleval import __version__

    versions = grader_versions()
    assert versions["math-verify"] == version("math-verify")
    assert versions["rolleval"] == __version__
    assert set(versions) >= {"rolleval", "math-verify", "sympy", "latex2sympy2_extended"}


@pytest.mark.parametrize(
    "rollouts",
    [[(0, "a"), (0, "b")], [(-1, "a")], [("0", "a")], [(0, None)], [(True, "a")], ["ab c"]],
)
def test_bad_rollouts_are_usage_errors(rollouts):
    with pytest.raises(UsageError):
        ShortAnswerGrader().grade_problem("a", rollouts)


def test_no_rollouts_no_verdicts():
    for grader in (MathGrader(), McqGrader(), ShortAnswerGrader()):
        assert grader.grade_problem("1", []) == {}
