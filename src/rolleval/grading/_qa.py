"""The reading-comprehension grader: exact match and token F1 per answer (SQuAD and DROP rules).

The rules follow the published evaluation definitions (re-implemented here):

SQuAD v1.1 (also the usual NaturalQuestions-open rule)
    normal form = lower case, ASCII punctuation removed, the words ``a``/``an``/``the``
    removed, whitespace collapsed. EM: normal forms equal. F1: over the normal form's
    tokens, counted with multiplicity; 0 when no token is shared.

DROP
    A gold answer is a list of spans (a single span for numbers and dates). Each span is
    split on spaces and hyphens; each token is lower-cased, stripped of punctuation unless it
    is a number, written as ``str(float(token))`` when it is a number, and article-free;
    empty tokens are dropped. EM: the set of normalised spans equals the gold's, with as many
    spans. F1: each span is a bag (set) of tokens; gold and predicted bags are paired by a
    maximum-weight assignment on bag F1, where a pair scores 0 when the gold bag holds
    numbers and the predicted bag none of them; F1 is the mean over
    ``max(#gold, #predicted)`` slots, rounded to 2 decimals. Over several gold answers EM and
    F1 each take their maximum. The prediction is one span (the extracted answer), as in
    lm-evaluation-harness and OLMES.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import UsageError
from ._protocol import (
    BadReferenceError,
    Grader,
    Judgement,
    check_rollouts,
    check_spec_keys,
    describe_exception,
    failed_all,
)

__all__ = [
    "QA_STYLES",
    "QaGrader",
    "drop_metrics",
    "drop_normalize",
    "squad_metrics",
    "squad_normalize",
]

_LOGIC_VERSION = "1"
QA_STYLES = ("squad", "drop")
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_ANSWER_PREFIX = re.compile(r"^[\s*_]*(?:(?:final\s+)?answer|a)[\s*_]*:[\s*_]*", re.IGNORECASE)


# --------------------------------------------------------------------------- SQuAD


def squad_normalize(text: str) -> str:
    """SQuAD's normal form: lower case, no ASCII punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _squad_f1(prediction: str, gold: str) -> float:
    pred_tokens = squad_normalize(prediction).split()
    gold_tokens = squad_normalize(gold).split()
    shared = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(pred_tokens)
    recall = shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_metrics(prediction: str, golds: Sequence[str]) -> tuple[float, float]:
    """``(em, f1)`` of one prediction against gold aliases: the maximum over the aliases."""
    norm = squad_normalize(prediction)
    em = max(float(norm == squad_normalize(g)) for g in golds)
    f1 = max(_squad_f1(prediction, g) for g in golds)
    return em, f1


# --------------------------------------------------------------------------- DROP


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _drop_token(token: str) -> str:
    token = token.lower()
    if not _is_number(token):
        token = "".join(ch for ch in token if ch not in _PUNCTUATION)
    if _is_number(token):
        token = str(float(token))
    token = _ARTICLES.sub(" ", token)
    return " ".join(token.split())


def drop_normalize(span: str) -> str:
    """DROP's normal form of one span (rules in the module docstring)."""
    parts = [_drop_token(token) for token in re.split(" |-", span)]
    return " ".join(part for part in parts if part.strip()).strip()


def _bags(spans: Sequence[str]) -> tuple[list[str], list[set[str]]]:
    normalized = [drop_normalize(span) for span in spans]
    return normalized, [set(span.split()) for span in normalized]


def _bag_f1(predicted: set[str], gold: set[str]) -> float:
    shared = len(gold & predicted)
    precision = shared / len(predicted) if predicted else 1.0
    recall = shared / len(gold) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _numbers_agree(gold: set[str], predicted: set[str]) -> bool:
    gold_numbers = {w for w in gold if _is_number(w)}
    predicted_numbers = {w for w in predicted if _is_number(w)}
    return not gold_numbers or bool(gold_numbers & predicted_numbers)


def _drop_one(predicted: Sequence[str], gold: Sequence[str]) -> tuple[float, float]:
    pred_spans, pred_bags = _bags(predicted)
    gold_spans, gold_bags = _bags(gold)
    em = float(set(pred_spans) == set(gold_spans) and len(pred_spans) == len(gold_spans))
    if len(gold_bags) == 1 and len(pred_bags) == 1:  # the common case: no assignment needed
        g, p = gold_bags[0], pred_bags[0]
        return em, round(_bag_f1(p, g) if _numbers_agree(g, p) else 0.0, 2)
    scores = np.zeros((len(gold_bags), len(pred_bags)))
    for i, g in enumerate(gold_bags):
        for j, p in enumerate(pred_bags):
            if _numbers_agree(g, p):
                scores[i, j] = _bag_f1(p, g)
    from scipy.optimize import linear_sum_assignment  # only for multi-span answers

    rows, cols = linear_sum_assignment(-scores)
    best = np.zeros(max(len(gold_bags), len(pred_bags)))
    for r, c in zip(rows, cols, strict=True):
        best[r] = max(best[r], scores[r, c])
    return em, round(float(np.mean(best)), 2)


def drop_metrics(
    prediction: str | Sequence[str], golds: Sequence[Sequence[str]]
) -> tuple[float, float]:
    """``(em, f1)`` of a prediction (a span or a list of spans) against gold answers (each a
    list of spans): the maximum of each over the answers."""
    predicted = [prediction] if isinstance(prediction, str) else list(prediction)
    pairs = [_drop_one(predicted, gold) for gold in golds]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


# --------------------------------------------------------------------------- grader


def _drop_golds(reference: Any) -> list[list[str]]:
    """DROP references: each alias is one answer; ``" | "`` separates the spans of a
    multi-span answer (the loader writes them so)."""
    aliases = [reference] if isinstance(reference, str) else reference
    if not isinstance(aliases, (list, tuple)) or not aliases:
        raise BadReferenceError("the reference must be a non-empty string or list of strings")
    golds = []
    for alias in aliases:
        if not isinstance(alias, str) or not alias.strip():
            raise BadReferenceError(f"gold answer {alias!r} is not a non-empty string")
        golds.append([span.strip() for span in alias.split(" | ")])
    return golds


class QaGrader(Grader):
    """Short answers scored by exact match and token F1 (``metrics``: ``em``, ``f1``).

    Extraction
        A leading "Answer:" is removed and the first non-empty line is kept (stripped);
        ``None`` when nothing is left.

    Judgement
        ``metrics = {"em": 0 or 1, "f1": F1}`` against the best gold alias, by the rules of
        ``style`` (``squad`` or ``drop``, see the module docstring); ``correct`` is
        ``em == 1`` and ``score`` is F1. Clusters group answers with the same normal form.

    Reference
        ``squad``: a gold answer or a list of aliases. ``drop``: a list of answers, each a
        string whose spans are separated by ``" | "``.
    """

    id: ClassVar[str] = "qa"

    def __init__(self, style: str = "squad") -> None:
        if style not in QA_STYLES:
            raise UsageError(
                f"qa grader option 'style' must be one of {', '.join(QA_STYLES)}; got {style!r}"
            )
        self.style = style
        self.spec = {"type": self.id, "style": style}
        self.version = _LOGIC_VERSION

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> QaGrader:
        """Build from ``{"type": "qa", "style": "squad" | "drop"}``."""
        check_spec_keys(spec, ("style",))
        return cls(spec.get("style", "squad"))

    def extract(self, text: str) -> str | None:
        """The first non-empty line after an optional "Answer:" prefix, stripped."""
        text = _ANSWER_PREFIX.sub("", text.lstrip(), count=1)
        line = next((line for line in text.splitlines() if line.strip()), "")
        return line.strip() or None

    def _normal(self, answer: str) -> str:
        return squad_normalize(answer) if self.style == "squad" else drop_normalize(answer)

    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout of one problem (rules in the class docstring)."""
        ordered = check_rollouts(rollouts)
        try:
            if self.style == "drop":
                drop_golds = _drop_golds(reference)
            else:
                squad_golds = [reference] if isinstance(reference, str) else list(reference)
                if not squad_golds or not all(isinstance(g, str) for g in squad_golds):
                    raise BadReferenceError("the reference must be a string or list of strings")
        except BadReferenceError as exc:
            return failed_all(ordered, f"reference unusable: {exc}", self.extract)
        judgements: dict[int, Judgement] = {}
        labels: dict[str, int] = {}
        for index, text in ordered:
            answer = None
            try:
                answer = self.extract(text)
                if answer is None:
                    judgements[index] = Judgement(None, False, None, metrics={"em": 0.0, "f1": 0.0})
                    continue
                if self.style == "drop":
                    em, f1 = drop_metrics(answer, drop_golds)
                else:
                    em, f1 = squad_metrics(answer, squad_golds)
                label = labels.setdefault(self._normal(answer), index)
                judgements[index] = Judgement(
                    extracted=answer,
                    correct=em == 1.0,
                    cluster=label,
                    score=f1,
                    metrics={"em": em, "f1": f1},
                )
            except Exception as exc:  # one rollout's failure must not hide the others
                judgements[index] = Judgement.failed(describe_exception(exc), extracted=answer)
        return judgements
