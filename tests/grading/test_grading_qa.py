"""The qa grader: SQuAD and DROP exact match and F1, checked against values worked by hand
from the published definitions (fractions in the comments)."""

from __future__ import annotations

import pytest

from rolleval.errors import UsageError
from rolleval.grading import QaGrader, drop_metrics, make_grader, squad_metrics
from rolleval.grading._qa import drop_normalize, squad_normalize


def test_squad_normal_form():
    assert squad_normalize("  The Cat, sat on a MAT! ") == "cat sat on mat"
    assert squad_normalize("an apple-pie") == "applepie"  # ASCII punctuation removed, not split
    assert squad_normalize("théâtre") == "théâtre"  # accents kept


@pytest.mark.parametrize(
    ("prediction", "golds", "em", "f1"),
    [
        ("the 23 years.", ["23 years", "23"], 1.0, 1.0),
        # shared 2 tokens; precision 2/3, recall 1 -> F1 = 2*(2/3)/(5/3) = 4/5
        ("Denver Broncos team", ["Denver Broncos"], 0.0, 4 / 5),
        # multiset overlap: red x1 + blue x1 = 2; P = R = 2/3 -> F1 = 2/3
        ("red red blue", ["red blue blue"], 0.0, 2 / 3),
        ("Paris", ["London"], 0.0, 0.0),
        # EM from the second alias, F1 maximum over aliases: "23" vs "23 years" = 2*(1)(1/2)/(3/2) = 2/3
        ("23", ["23 years", "twenty three", "23"], 1.0, 1.0),
        ("23", ["23 years", "twenty three"], 0.0, 2 / 3),
    ],
)
def test_squad_metrics(prediction, golds, em, f1):
    got_em, got_f1 = squad_metrics(prediction, golds)
    assert got_em == em
    assert got_f1 == pytest.approx(f1, abs=1e-15)


def test_drop_normal_form():
    assert drop_normalize("2") == "2.0" == drop_normalize("2.0")
    assert drop_normalize("1,000 yards") == "1000.0 yards"  # punctuation out, then a number
    assert drop_normalize("forty-two") == "forty two"  # hyphens split tokens
    assert drop_normalize("The Bears'") == "bears"
    assert drop_normalize("-3.5") == "3.5"  # the hyphen splits: the sign is lost, by the rule


@pytest.mark.parametrize(
    ("prediction", "golds", "em", "f1"),
    [
        (["3"], [["3.0"]], 1.0, 1.0),
        # the gold holds a number the prediction lacks: the pair scores 0 (bag F1 would be 1/2)
        (["4 touchdowns"], [["3 touchdowns"]], 0.0, 0.0),
        # one predicted span against two gold spans: slots [1, 0] -> mean 1/2
        (["Alice"], [["Alice", "Bob"]], 0.0, 0.5),
        # spans in any order, same count: exact match
        (["Bob", "Alice"], [["Alice", "Bob"]], 1.0, 1.0),
        # P = 1/2, R = 1/4 -> F1 = 1/3, rounded to 0.33
        (["x q"], [["x y z w"]], 0.0, 0.33),
        # maximum over gold answers, each metric on its own
        (["Chicago"], [["Chicago Bears"], ["Chicago"]], 1.0, 1.0),
        # "3 touchdowns" vs "3": bags {3.0, touchdowns} and {3.0}: P 1/2, R 1 -> 2/3 -> 0.67
        (["3 touchdowns"], [["3"]], 0.0, 0.67),
    ],
)
def test_drop_metrics(prediction, golds, em, f1):
    assert drop_metrics(prediction, golds) == (em, f1)


def test_grader_records_both_metrics_and_declares_f1_as_score():
    grader = make_grader({"type": "qa", "style": "drop"})
    judgements = grader.grade_problem(
        ["3", "three"],
        [
            (0, "Answer: 3 touchdowns\nbecause ..."),
            (1, "3"),
            (2, "  \n"),
            (3, "three."),
            (4, "3.0"),
        ],
    )
    v = judgements[0]
    assert (v.extracted, v.correct, v.score, v.metrics) == (
        "3 touchdowns",
        False,
        0.67,
        {"em": 0.0, "f1": 0.67},
    )
    assert judgements[1].correct is True and judgements[1].metrics == {"em": 1.0, "f1": 1.0}
    assert judgements[2].extracted is None and judgements[2].metrics == {"em": 0.0, "f1": 0.0}
    assert judgements[3].correct is True
    # "3" and "3.0" share DROP's normal form: one cluster, labelled by the lowest index
    assert judgements[4].cluster == judgements[1].cluster == 1
    assert judgements[0].cluster == 0


def test_grader_spec_and_bad_reference():
    assert make_grader({"type": "qa"}).spec == {"type": "qa", "style": "squad"}
    with pytest.raises(UsageError, match="style"):
        make_grader({"type": "qa", "style": "nq"})
    v = QaGrader("squad").grade_problem([], [(0, "x")])[0]
    assert v.correct is None and v.grader_error.startswith("reference unusable")
