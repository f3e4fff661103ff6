"""Short-answer normalisation, extraction, equality and grading."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rolleval.grading import Judgement, ShortAnswerGrader, normalize_short_answer
from rolleval.grading._short import parse_short_number


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        (" White.", "white"),
        ("An apple", "apple"),
        ("the the", "the"),  # only one article is dropped
        ("The Beatles", "beatles"),
        ("a", "a"),  # an article alone is the answer itself
        ("H2O", "h2o"),
        ("sautéing", "sautéing"),  # NFKC keeps the accent
        ("ＡＢＣ", "abc"),  # full-width letters fold to ASCII under NFKC
        ("\u201cParis\u201d", "paris"),  # curly quotes are punctuation
        ("**New   York**", "new york"),  # markup stripped, inner spaces collapsed
        ("Mr. Smith's dog.", "mr. smith's dog"),  # inner punctuation kept
        ("-5", "-5"),  # a sign that starts a number is kept
        (".5", ".5"),
        ("50%", "50%"),  # percent changes the meaning: kept
        ("C#", "c#"),
        ("(42)", "42"),
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # casefold, not lower
        ("   ", ""),
    ],
)
def test_normalize_short_answer(raw, normal):
    assert normalize_short_answer(raw) == normal


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("100", Fraction(100)),
        ("100.0", Fraction(100)),
        ("1,000", Fraction(1000)),
        ("-2.5", Fraction(-5, 2)),
        ("3/4", Fraction(3, 4)),
        ("1e3", Fraction(1000)),
        ("\u22123", Fraction(-3)),
        ("100 m", None),
        ("50%", None),
        ("1/0", None),
        ("e5", None),
        ("", None),
    ],
)
def test_parse_short_number(text, number):
    assert parse_short_number(text) == number


@pytest.mark.parametrize(
    ("text", "extracted"),
    [
        ("Paris\nBecause it is the capital.", "paris"),
        ("\n\n  The Nile  \nlong explanation", "nile"),
        ("Answer: Mount Everest", "mount everest"),
        ("**Final answer:** 42.", "42"),
        ("Answer:\nBlue whale", "blue whale"),
        ("...", None),
        ("", None),
    ],
)
def test_extract(text, extracted):
    assert ShortAnswerGrader().extract(text) == extracted


def test_extract_whole_text_when_first_line_is_off():
    assert ShortAnswerGrader(first_line=False).extract("New\nYork") == "new york"


@pytest.mark.parametrize(
    ("tolerance", "a", "b", "equal"),
    [
        (None, "100", "100.0", True),  # numbers compare as numbers even without tolerance
        (None, "1,000", "1000", True),
        (None, "h2o", "h2o", True),
        (None, "sautéing", "sauteing", False),
        (None, "100", "100.01", False),
        (0.05, "100", "100.01", True),
        (0.1, "1.1", "1.0", True),  # the tolerance is the decimal 0.1, inclusive
        (0.05, "100", "100.1", False),
        (0.5, "100 m", "100", False),  # not a number: exact string match only
    ],
)
def test_equal(tolerance, a, b, equal):
    grader = ShortAnswerGrader(numeric_tolerance=tolerance)
    assert grader.equal(a, b) is equal
    assert grader.equal(b, a) is equal


def test_grade_problem():
    grader = ShortAnswerGrader()
    rollouts = [(3, "Paris."), (0, "London"), (1, "paris"), (2, "..."), (4, "The Paris")]
    judgements = grader.grade_problem(["Paris", "Paris, France"], rollouts)
    assert judgements == {
        0: Judgement(extracted="london", correct=False, cluster=0),
        1: Judgement(extracted="paris", correct=True, cluster=1),
        2: Judgement(extracted=None, correct=False, cluster=None),
        3: Judgement(extracted="paris", correct=True, cluster=1),
        4: Judgement(extracted="paris", correct=True, cluster=1),
    }


def test_numeric_clusters_follow_the_lowest_index_representative():
    grader = ShortAnswerGrader(numeric_tolerance=1.0)
    rollouts = [(0, "10"), (1, "10.8"), (2, "11.5"), (3, "12")]
    judgements = grader.grade_problem("11", rollouts)
    # 10.8 is within 1 of 10; 11.5 is not (though within 1 of 10.8): representatives decide
    assert [judgements[i].cluster for i in range(4)] == [0, 0, 2, 2]
    assert [judgements[i].correct for i in range(4)] == [True, True, True, True]


def test_reference_that_normalises_to_nothing_is_a_grader_error():
    judgement = ShortAnswerGrader().grade_problem(["Paris", "..."], [(0, "Paris")])[0]
    assert judgement.correct is None and "empty once normalised" in judgement.grader_error
    assert judgement.extracted == "paris"


def test_identity_and_spec():
    grader = ShortAnswerGrader(numeric_tolerance=0.01)
    assert grader.identity == "short_answer@1"
    assert grader.spec == {"type": "short_answer", "numeric_tolerance": 0.01, "first_line": True}


@pytest.mark.parametrize(
    ("text", "extracted"),
    [
        ("A: yellow", "yellow"),
        ("a: Yellow.", "yellow"),
        ("**A:** grey", "grey"),
        ("A cat", "cat"),
        ("Answer: the sky", "sky"),
    ],
)
def test_few_shot_answer_prefix_is_stripped(text, extracted):
    out = ShortAnswerGrader.from_spec({"type": "short_answer"}).grade_problem("x", [(0, text)])
    assert out[0].extracted == extracted
