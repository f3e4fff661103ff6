"""Math answer extractors (rolleval.grading._extract): one table per extractor."""

from __future__ import annotations

import pytest

from rolleval.grading import MathGrader
from rolleval.grading._extract import (
    extract_answer_line,
    extract_boxed,
    extract_gsm8k,
    extract_last_number,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so the result is \boxed{42}.", "42"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"nested \boxed{\frac{\sqrt{3}}{2}} done", r"\frac{\sqrt{3}}{2}"),
        (r"first \boxed{1} then \boxed{2}", "2"),  # the last box wins
        (r"\fbox{7}", "7"),
        (r"\boxed {x^2}", "x^2"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces are content
        (r"$\boxed{$-3$}$", "-3"),
        (r"\boxed{5} and then a truncated \boxed{12", "5"),  # unclosed last box skipped
        (r"\boxed{} \boxed{ }", None),  # empty boxes are not answers
        ("no box here", None),
        (r"\boxed{1} then \boxed{}", "1"),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: 42", "42"),
        ("so...\nThe answer is 17.", "17"),
        ("The final answer is $\\frac{3}{4}$. I hope it is correct.", r"\frac{3}{4}"),
        (
            "Final Answer: The final answer is $5$. I hope it is correct.",
            "5",
        ),  # Minerva format: the last statement wins
        ("**Answer:** 3.5", "3.5"),
        ("**Answer**: -2", "-2"),
        ("Answer:\n\n12", "12"),  # answer on the next non-empty line
        ("The answer is \\boxed{9}.", "9"),
        ("Answer: \\(x = 2\\)", "x = 2"),
        ("answer: 1\nthen on reflection the answer is 2", "2"),
        ("the answer is: 8 apples. Because...", "8"),
        ("The answer is $18.", "18"),
        ("Answer: 1,000 dollars", "1000"),
        ("Answer: 2x + 1", "2x + 1"),
        ("Answer: 3 + 4", "3 + 4"),
        ("I answered the question", None),
        ("Answer:", None),
        ("no statement here", None),
    ],
)
def test_extract_answer_line(text, expected):
    assert extract_answer_line(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("work...\n####  1,234", "1234"),
        ("#### 72", "72"),
        ("#### -5", "-5"),
        ("#### 3.25.", "3.25"),
        ("#### $18", "18"),
        ("#### 18 dollars", "18"),
        ("#### 1/2", "1/2"),
        ("#### 1\n#### 2", "2"),  # the last marker wins
        (r"#### \frac{1}{2}", r"\frac{1}{2}"),
        ("#### 2x+1", "2x+1"),  # not a bare number: kept as written
        ("####", None),
        ("#### \nnext line", None),
        ("no marker", None),
    ],
)
def test_extract_gsm8k(text, expected):
    assert extract_gsm8k(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I have 3 apples and 5 pears", "5"),
        ("the total is 1,000,000.", "1000000"),
        ("x = -3", "-3"),
        ("-3", "-3"),
        ("5-3 = 2", "2"),
        ("so 5-3", "3"),  # binary minus is not a sign
        ("it is 0.75 now", "0.75"),
        ("about .5 of it", ".5"),
        ("ratio 3/4", "3/4"),
        ("temperature −4 degrees", "-4"),  # unicode minus
        ("+7 points", "7"),
        ("H2O is water", None),  # digits glued to a word are not numbers
        ("10kg of flour", "10"),
        ("list 1,2,3", "3"),
        ("nothing numeric", None),
    ],
)
def test_extract_last_number(text, expected):
    assert extract_last_number(text) == expected


def test_math_extractors_are_tried_in_declared_order():
    text = "The answer is 3.\n#### 4\n\\boxed{5} and finally 6"
    assert MathGrader(["boxed", "answer_line"]).extract(text) == "5"
    assert MathGrader(["answer_line", "boxed"]).extract(text) == "3"
    assert MathGrader(["gsm8k", "boxed"]).extract(text) == "4"
    assert MathGrader(["last_number"]).extract(text) == "6"
    assert MathGrader(["boxed"]).extract("no box, just 6") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("answer" + " " * 20000 + "x", None),  # once quadratic in answer_line
        ("\\boxed{" * 20000, None),  # once quadratic in boxed
        ("answer: . " * 5000, None),
        ("1," * 20000, "1"),
        ("-" * 20000 + "1", "-1"),
    ],
    ids=["answer-spaces", "open-boxes", "empty-statements", "commas", "dashes"],
)
def test_degenerate_texts_are_handled_in_linear_passes(text, expected):
    # Regression guard for catastrophic backtracking: these finish at once when linear
    # and take minutes when quadratic (no clock is read here).
    assert MathGrader().extract(text) == expected
