"""Multiple-choice letter extraction and grading."""

from __future__ import annotations

import pytest

from rolleval.grading import Judgement, McqGrader, extract_choice

ABCD = "ABCD"
TEN = "ABCDEFGHIJ"

# (text, letters, expected). Realistic model outputs, explicit statements first.
CASES = [
    # explicit answer statements
    ("Answer: B", ABCD, "B"),
    ("The answer is (C).", ABCD, "C"),
    ("answer is (B)", ABCD, "B"),
    ("The answer is B.", ABCD, "B"),
    ("answer: b", ABCD, "B"),
    ("**Answer:** (b) mitochondria", ABCD, "B"),
    ("The answer is: \n\nC", ABCD, "C"),
    ("The correct option is **B**.", ABCD, "B"),
    ("Final Answer: $\\boxed{D}$", ABCD, "D"),
    ("\\boxed{\\text{C}}", ABCD, "C"),
    ("Answer: A. A cat is not a dog.", ABCD, "A"),
    ("answer is b, because the others fail", ABCD, "B"),
    ("I believe the answer is (H).", TEN, "H"),
    ("Answer: J", TEN, "J"),
    # the last explicit statement wins over earlier mentions
    ("Option A is wrong. Option B is wrong. So the answer is C.", ABCD, "C"),
    ("I think the answer is B because A is too small.", ABCD, "B"),
    ("The options are A) 2 B) 4 C) 6 D) 8. The answer is C) 6", ABCD, "C"),
    ("A cat is a mammal. Therefore the answer is D.", ABCD, "D"),
    # affirmations
    ("B is correct because A and C are wrong.", ABCD, "B"),
    ("Hmm... A is right, since option B fails.", ABCD, "A"),
    ("After analysis, I'd choose C.", ABCD, "C"),
    # a letter opening the text, with a trailing explanation
    ("B", ABCD, "B"),
    ("(B)", ABCD, "B"),
    ("**D**", ABCD, "D"),
    ("B.", ABCD, "B"),
    ("B)", ABCD, "B"),
    ("C. Because the mitochondria is the powerhouse of the cell.", ABCD, "C"),
    ("A) Paris is the capital of France.", ABCD, "A"),
    ("(A) Paris", ABCD, "A"),
    ("A is the answer", ABCD, "A"),
    ("B because unlike A, it scales.", ABCD, "B"),
    ("a", ABCD, "A"),
    ("I", TEN, "I"),
    # a line holding only a letter
    ("Let me reason step by step...\n\n**C**\n", ABCD, "C"),
    # last resort: last standalone capital, never the article "A" or the pronoun "I"
    ("I think it's B", ABCD, "B"),
    ("I am not sure, but I would say D.", ABCD, "D"),
    ("The answer is not A; it is D.", ABCD, "D"),
    ("A cat is a mammal, which matches option C.", ABCD, "C"),
    ("I'm fairly sure it's J", TEN, "J"),
    # nothing to extract
    ("A cat is a mammal, so the statement holds.", ABCD, None),
    ("The answer is a cat.", ABCD, None),
    ("I think so too.", TEN, None),
    ("None of the options are correct.", ABCD, None),
    ("Answer: E", ABCD, None),  # not a valid choice
    ("An X-ray shows nothing.", "ABCDX", None),
    ("", ABCD, None),
]


@pytest.mark.parametrize(("text", "letters", "expected"), CASES)
def test_extract_choice(text, letters, expected):
    assert extract_choice(text, letters) == expected


def test_table_is_large_enough():
    assert len(CASES) >= 25


def test_grade_problem_clusters_by_letter():
    grader = McqGrader("ABCD")
    rollouts = [(4, "Answer: B"), (1, "The answer is (C)."), (2, "b"), (0, "no idea"), (3, "(C)")]
    judgements = grader.grade_problem("C", rollouts)
    assert judgements == {
        0: Judgement(extracted=None, correct=False, cluster=None),
        1: Judgement(extracted="C", correct=True, cluster=1),
        2: Judgement(extracted="B", correct=False, cluster=2),
        3: Judgement(extracted="C", correct=True, cluster=1),
        4: Judgement(extracted="B", correct=False, cluster=2),
    }


@pytest.mark.parametrize("reference", [" c ", "(C)", "c", ["C"], ["A", "C"]])
def test_reference_forms(reference):
    assert McqGrader().grade_problem(reference, [(0, "Answer: C")])[0].correct is True


@pytest.mark.parametrize("reference", ["E", "CC", "", None, []])
def test_reference_outside_letters_is_a_grader_error(reference):
    judgement = McqGrader().grade_problem(reference, [(0, "Answer: C")])[0]
    assert judgement.grader_error is not None and judgement.correct is None
    if reference == "E":
        assert "not one of the letters ABCD" in judgement.grader_error
        assert judgement.extracted == "C"


def test_identity_and_spec():
    grader = McqGrader(TEN)
    assert grader.identity == "mcq@1"
    assert grader.spec == {"type": "mcq", "letters": TEN}
