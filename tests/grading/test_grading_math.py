"""The math grader against the real math-verify: correctness, clusters, caching, failures."""

from __future__ import annotations

import random
import subprocess
import sys
import threading

import pytest

from rolleval.errors import MissingDependencyError, UsageError
from rolleval.grading import Judgement, MathGrader, _math, grade_problems, make_grader

pytest.importorskip("math_verify")


@pytest.fixture
def grader() -> MathGrader:
    return MathGrader()


def test_half_in_three_notations_is_one_cluster_and_correct(grader):
    rollouts = [
        (0, r"Thus \boxed{\frac{1}{2}}."),
        (1, "The answer is 0.5"),
        (2, "#### 1/2"),
    ]
    judgements = grader.grade_problem(r"\frac12", rollouts)
    assert [judgements[i].extracted for i in range(3)] == [r"\frac{1}{2}", "0.5", "1/2"]
    assert all(judgements[i].correct for i in range(3))
    assert {judgements[i].cluster for i in range(3)} == {0}
    assert all(judgements[i].grader_error is None for i in range(3))


def test_distinct_answers_get_distinct_clusters_labelled_by_lowest_index(grader):
    rollouts = [
        (0, r"\boxed{7}"),
        (1, r"\boxed{3}"),
        (2, r"\boxed{7.0}"),
        (3, r"\boxed{\frac{6}{2}}"),
        (4, r"\boxed{x = 7}"),
        (5, r"\boxed{11}"),
    ]
    judgements = grader.grade_problem("7", rollouts)
    assert {i: v.cluster for i, v in judgements.items()} == {0: 0, 1: 1, 2: 0, 3: 1, 4: 0, 5: 5}
    assert {i: v.correct for i, v in judgements.items()} == {
        0: True,
        1: False,
        2: True,
        3: False,
        4: True,
        5: False,
    }


def test_unextracted_rollout_is_wrong_and_in_no_cluster():
    grader = MathGrader(["boxed"])
    judgements = grader.grade_problem("4", [(0, "I think it is 4"), (1, r"\boxed{4}")])
    assert judgements[0] == Judgement(extracted=None, correct=False, cluster=None)
    assert judgements[1] == Judgement(extracted="4", correct=True, cluster=1)


def test_shuffled_rollouts_give_the_same_verdicts(grader):
    texts = [r"\boxed{2}", "#### 5", r"\boxed{\frac{4}{2}}", "no answer", "Answer: 5.0", "2"]
    ordered = list(enumerate(texts))
    expected = grader.grade_problem("2", ordered)
    assert {i: v.cluster for i, v in expected.items()} == {0: 0, 1: 1, 2: 0, 3: None, 4: 1, 5: 0}
    shuffled = ordered[:]
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert grader.grade_problem("2", shuffled) == expected


def test_every_rollout_gets_a_verdict(grader):
    rollouts = [(i, f"\\boxed{{{i % 3}}}") for i in range(10)]
    judgements = grader.grade_problem("1", rollouts)
    assert sorted(judgements) == list(range(10))
    assert [v.correct for _, v in sorted(judgements.items())] == [i % 3 == 1 for i in range(10)]


def test_gold_aliases_any_match_is_correct(grader):
    judgements = grader.grade_problem(
        ["7", r"\frac{1}{2}"], [(0, r"\boxed{0.5}"), (1, r"\boxed{7}"), (2, r"\boxed{3}")]
    )
    assert [judgements[i].correct for i in range(3)] == [True, True, False]


@pytest.mark.parametrize(
    ("gold", "answer", "correct"),
    [
        ("1234", "#### 1,234", True),
        ("-3", "x = -3", True),
        (r"\sqrt{2}", r"\boxed{\frac{2}{\sqrt{2}}}", True),
        (r"\pi", r"\boxed{3.14}", False),
        ("[1,2)", r"\boxed{[1, 2)}", True),
        ("10", r"\boxed{10\%}", True),  # math-verify's rule: a percent sign may be dropped
        (r"\frac{1}{3}", r"\boxed{0.33}", False),
        ("0.25", r"\boxed{\dfrac{1}{4}}", True),
    ],
)
def test_realistic_equivalences(grader, gold, answer, correct):
    assert grader.grade_problem(gold, [(0, answer)])[0].correct is correct


def test_unparseable_gold_is_a_grader_error_for_every_rollout(grader):
    judgements = grader.grade_problem(r"\text{}", [(0, r"\boxed{1}"), (1, "nothing")])
    assert all(v.correct is None and v.cluster is None for v in judgements.values())
    assert all("gold" in v.grader_error for v in judgements.values())
    assert judgements[0].extracted == "1"  # what was extracted is still recorded


@pytest.mark.parametrize("reference", [None, [], [""], ["1", 2]])
def test_missing_or_bad_reference_is_a_grader_error(grader, reference):
    judgements = grader.grade_problem(reference, [(0, r"\boxed{1}")])
    assert judgements[0].grader_error is not None and judgements[0].correct is None


def test_unparseable_answer_is_extracted_but_wrong(grader):
    judgements = grader.grade_problem("1", [(0, r"\boxed{}}}"), (1, r"\boxed{\text{}}")])
    assert judgements[1].extracted == r"\text{}"
    assert judgements[1].correct is False and judgements[1].cluster == 1


def test_distinct_answers_are_parsed_once(grader):
    def calls(n):
        rollouts = [(i, r"\boxed{\frac{1}{2}}" if i % 2 else "#### 3") for i in range(n)]
        before = _math.CALLS.copy()
        judgements = grader.grade_problem("3", rollouts)
        assert {v.cluster for v in judgements.values()} == {0, 1}
        return {k: _math.CALLS[k] - before[k] for k in ("parse", "parse_gold", "verify")}

    few, many = calls(8), calls(80)
    assert few["parse"] == 2  # one parse per distinct answer
    assert few["parse_gold"] == 1
    assert many == few  # memoised by string: cost does not grow with n


class _ExplodingMath(MathGrader):
    """Extraction raises on one rollout (a bug at our own seam)."""

    def extract(self, text):
        if "BOOM" in text:
            raise RuntimeError("extractor bug")
        return super().extract(text)


def test_exception_in_one_rollout_only_marks_that_rollout():
    judgements = _ExplodingMath().grade_problem(
        "2", [(0, r"\boxed{2}"), (1, "BOOM"), (2, "#### 2")]
    )
    assert judgements[1].grader_error == "extraction failed: RuntimeError: extractor bug"
    assert judgements[1].correct is None
    assert judgements[0].correct and judgements[2].correct and judgements[2].cluster == 0


def test_grading_off_the_main_thread_is_refused(grader):
    errors = []

    def run():
        try:
            grader.grade_problem("1", [(0, r"\boxed{1}")])
        except UsageError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert errors and "main thread" in str(errors[0])


def test_identity_names_math_verify_version(grader):
    from importlib.metadata import version

    assert grader.identity == f"math@1+math-verify-{version('math-verify')}"
    assert make_grader(grader.spec) == grader


def test_missing_math_verify_is_detected(monkeypatch):
    monkeypatch.setitem(sys.modules, "math_verify", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'rolleval\[math\]'"):
        MathGrader().check_available()
    with pytest.raises(MissingDependencyError):
        list(grade_problems(MathGrader(), [("1", [(0, "1")])], workers=0))


def test_import_does_not_need_math_verify():
    code = (
        "import sys; sys.modules['math_verify'] = None\n"
        "from rolleval.errors import MissingDependencyError\n"
        "import rolleval.grading as g\n"
        "grader = g.make_grader({'type': 'math'})\n"
        "print(grader.extract('\\\\boxed{3}'))\n"
        "try:\n"
        "    grader.check_available()\n"
        "except MissingDependencyError:\n"
        "    print('missing')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", "missing"]


def test_math_verify_timeout_is_a_grader_error_not_a_wrong_answer(grader):
    # 9^(9^9) has ~370 million digits: math-verify's own 5 s alarm stops the comparison
    judgements = grader.grade_problem("1", [(0, r"\boxed{9^{9^{9}}}"), (1, r"\boxed{1}")])
    assert judgements[0].grader_error == "math-verify verify timed out after 5s"
    assert judgements[0].extracted == "9^{9^{9}}" and judgements[0].correct is None
    assert judgements[1] == Judgement(extracted="1", correct=True, cluster=1)


def test_currency_gold_with_escaped_dollar_and_thin_space():
    # MATH gold answers such as "\$32,\!348" (3 in MATH-500) must be usable references
    g = make_grader({"type": "math"})
    out = g.grade_problem(
        "\\$32,\\!348",
        [(0, "The total is \\boxed{32348}."), (1, "\\boxed{\\$32,\\!348}"), (2, "\\boxed{32000}")],
    )
    assert out[0].grader_error is None and out[0].correct is True
    assert out[1].correct is True and out[1].cluster == 0
    assert out[2].correct is False
