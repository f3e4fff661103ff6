"""The short-answer grader: normalised exact match, numbers compared as numbers."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar

from ..errors import UsageError
from ._protocol import (
    BadReferenceError,
    Grader,
    Judgement,
    check_rollouts,
    check_spec_keys,
    failed_all,
    grade_by_key,
    reference_aliases,
)

__all__ = ["ShortAnswerGrader", "normalize_short_answer", "parse_short_number"]

_LOGIC_VERSION = "1"
_ARTICLE = re.compile(r"(?:a|an|the)\s+")
# "Answer:", "Final answer:", and the "A:" of a Q:/A: few-shot prompt (markdown allowed)
_ANSWER_PREFIX = re.compile(r"^[\s*_]*(?:(?:final\s+)?answer|a)[\s*_]*:[\s*_]*", re.IGNORECASE)
_NUMBER = re.compile(
    r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?:/\d+)?"
)
#: Punctuation kept at the edges: it changes the meaning ("50%", "C#", "AT&T", "@user").
_KEEP_AT_EDGES = frozenset("%#&@/\\")


def _strippable(char: str) -> bool:
    if char.isspace():
        return True
    return unicodedata.category(char).startswith("P") and char not in _KEEP_AT_EDGES


def _strip_edges(text: str) -> str:
    """Drop whitespace and punctuation at both ends, keeping a sign or decimal point that
    starts a number ("-5", ".5")."""
    start, end = 0, len(text)
    while start < end and _strippable(text[start]):
        nxt = text[start + 1] if start + 1 < end else ""
        if text[start] in "-.\u2212" and (nxt.isdigit() or (text[start] == "-" and nxt == ".")):
            break
        start += 1
    while end > start and _strippable(text[end - 1]):
        end -= 1
    return text[start:end]


def normalize_short_answer(text: str) -> str:
    """The normal form two short answers are compared in.

    Steps, in order: Unicode NFKC; ``casefold``; internal whitespace collapsed to one
    space; whitespace and punctuation stripped at both ends (Unicode categories ``P*``,
    except ``% # & @ / \\``, and except a ``-`` or ``.`` that starts a number); one leading
    article ``a``/``an``/``the`` dropped (``"the the"`` -> ``"the"``), then the ends are
    stripped again. Accents survive (``"sautéing"`` is not ``"sauteing"``); case does not
    (``"H2O"`` equals ``"h2o"``). ``" White."`` -> ``"white"``, ``"An apple"`` -> ``"apple"``.

    The form is not idempotent (``"the the x"`` -> ``"the x"`` -> ``"x"``): it is applied
    once, to the raw answer and to each raw gold alias.
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = " ".join(text.split())
    text = _strip_edges(text)
    article = _ARTICLE.match(text)
    if article is not None:
        text = _strip_edges(text[article.end() :])
    return text


def parse_short_number(text: str) -> Fraction | None:
    """The exact value of a normalised answer that is a plain number, else ``None``.

    Accepted: integers with optional thousands separators (``1,000``), decimals,
    exponents (``1e3``), simple fractions (``3/4``), a leading sign (``-``, ``+``, ``−``).
    Anything else (units, percent, words) is not a number.
    """
    candidate = text.replace("\u2212", "-")
    if not candidate or _NUMBER.fullmatch(candidate) is None:
        return None
    try:
        return Fraction(candidate.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


class ShortAnswerGrader(Grader):
    """Short free-text answers: normalised exact match, with numbers compared as numbers.

    Extraction
        A leading "Answer:" (or "Final answer:", or the "A:" of a Q:/A: prompt, markdown
        allowed) is removed; then, when
        ``first_line`` is true, the first non-empty line is kept. ``extracted`` is that text
        in normal form (:func:`normalize_short_answer`), ``None`` when nothing is left.

    Equality
        Two normalised answers are equal when the strings are equal, or when both parse as
        numbers (:func:`parse_short_number`) and ``|a - b| <= numeric_tolerance`` (exact
        equality when the tolerance is ``None``). So ``"100"`` equals ``"100.0"`` and
        ``"1,000"`` equals ``"1000"`` even without a tolerance, while ``"100 m"`` and
        ``"100"`` differ. ``correct`` means equal to any gold alias (normalised the same
        way). A gold alias that normalises to nothing gives every rollout a
        ``grader_error``.

    Clusters
        By the same equality, against the representative (lowest index) of each cluster in
        order of creation; with a tolerance the relation is not transitive, so this is what
        fixes the clusters.
    """

    id: ClassVar[str] = "short_answer"

    def __init__(self, numeric_tolerance: float | None = None, first_line: bool = True) -> None:
        if numeric_tolerance is not None and (
            isinstance(numeric_tolerance, bool)
            or not isinstance(numeric_tolerance, (int, float))
            or not math.isfinite(numeric_tolerance)
            or numeric_tolerance < 0
        ):
            raise UsageError(
                "short_answer grader option 'numeric_tolerance' must be null or a finite "
                f"number >= 0; got {numeric_tolerance!r}"
            )
        if not isinstance(first_line, bool):
            raise UsageError(
                f"short_answer grader option 'first_line' must be true or false; got {first_line!r}"
            )
        self.numeric_tolerance = None if numeric_tolerance is None else float(numeric_tolerance)
        self.first_line = first_line
        self.spec = {
            "type": self.id,
            "numeric_tolerance": self.numeric_tolerance,
            "first_line": first_line,
        }
        self.version = _LOGIC_VERSION

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> ShortAnswerGrader:
        """Build from ``{"type": "short_answer", "numeric_tolerance": ..., "first_line": ...}``."""
        check_spec_keys(spec, ("numeric_tolerance", "first_line"))
        return cls(spec.get("numeric_tolerance"), spec.get("first_line", True))

    def extract(self, text: str) -> str | None:
        """The normalised answer (rules in the class docstring), or ``None``."""
        text = _ANSWER_PREFIX.sub("", text.lstrip(), count=1)
        if self.first_line:
            text = next((line for line in text.splitlines() if line.strip()), "")
        return normalize_short_answer(text) or None

    def equal(self, a: str, b: str) -> bool:
        """Whether two normalised answers are equal (rules in the class docstring)."""
        if a == b:
            return True
        x, y = parse_short_number(a), parse_short_number(b)
        if x is None or y is None:
            return False
        if self.numeric_tolerance is None:
            return x == y
        return abs(x - y) <= Fraction(repr(self.numeric_tolerance))

    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout of one problem (rules in the class docstring)."""
        ordered = check_rollouts(rollouts)
        try:
            golds = []
            for alias in reference_aliases(reference):
                gold = normalize_short_answer(alias)
                if not gold:
                    raise BadReferenceError(f"gold alias {alias!r} is empty once normalised")
                golds.append(gold)
        except BadReferenceError as exc:
            return failed_all(ordered, f"reference unusable: {exc}", self.extract)
        return grade_by_key(
            ordered,
            extract=self.extract,
            equivalent=self.equal,
            is_correct=lambda answer: any(self.equal(gold, answer) for gold in golds),
            render=str,
        )
