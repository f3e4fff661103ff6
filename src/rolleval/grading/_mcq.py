"""The multiple-choice grader: one letter per rollout, judged by equality."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
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

__all__ = ["McqGrader", "extract_choice"]

_LOGIC_VERSION = "1"

#: Words that, after a capital letter, show it is used as a choice ("A is correct"), not as
#: the article "A" or the pronoun "I".
_LETTER_FOLLOWERS = frozenset(
    {
        "is",
        "was",
        "would",
        "seems",
        "appears",
        "should",
        "could",
        "must",
        "will",
        "and",
        "or",
        "because",
        "since",
    }
)
_WORD_AFTER = re.compile(r"\s+([a-z][a-z'’]*)")
_OPENING_MARKS = " \t\r\n*_\"'“‘([>#-"


class _Patterns:
    """The regular expressions for one set of valid letters."""

    def __init__(self, letters: str) -> None:
        both = f"[{letters}{letters.lower()}]"
        upper = f"[{letters}]"
        end = r"(?![A-Za-z0-9'’])"
        open_ = r"(?:(?P<open>[\(\[])[\s*_]*)?"
        close = r"(?P<close>[\s*_]*[\)\]])?"
        # "Answer: B", "the answer is (B)", "**Final answer:** b", "correct option is C".
        self.statement = re.compile(
            r"(?i:\b(?:answer|(?:correct|right|best|final)\s+(?:option|choice|letter))\b)"
            r"(?:[\s*_:=\-–—]|(?i:\b(?:is|would\s+be|should\s+be|must\s+be|will\s+be|"
            r"therefore|thus|clearly)\b))*"
            r"(?:(?i:option|choice|letter)\s*)?" + open_ + rf"(?P<letter>{both}){end}" + close
        )
        # "\boxed{B}", "\boxed{\text{(C)}}".
        self.boxed = re.compile(
            r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*)?\(?\s*"
            rf"(?P<letter>{both})\s*\)?\s*\}}"
        )
        # "Option B is correct", "(C) is the right one", "I'd choose D", "I pick (A)".
        self.affirmation = re.compile(
            r"(?<![A-Za-z0-9])(?:(?i:option|choice|letter)\s*)?"
            + open_
            + rf"(?P<letter>{upper}){end}"
            + close
            + r"[\s*_]*(?i:is\s+(?:the\s+)?(?:correct|right|best|true)\b)"
        )
        self.choose = re.compile(
            r"(?i:\b(?:choose|pick|select|go\s+with)\b)\s+(?:(?i:option|choice|answer)\s*)?"
            + open_
            + rf"(?P<letter>{both}){end}"
            + close
        )
        # Start of the text: "B", "(B)", "**B**", "B. Paris", "Option B: ...".
        self.start = re.compile(
            r"^[\s*_#>]*(?:(?i:option|choice)\s*)?" + open_ + rf"(?P<letter>{both}){end}" + close
        )
        # A line holding nothing but the letter: "(b)", "**C**", "D."
        self.alone = re.compile(
            r"^[ \t*_#>]*(?:[\(\[][ \t]*)?" + rf"(?P<letter>{both})"
            r"[ \t*_.:!]*(?:[\)\]][ \t*_.:!]*)?$",
            re.MULTILINE,
        )
        # Any standalone capital letter in the valid set.
        self.standalone = re.compile(rf"(?<![A-Za-z0-9_'’\\])(?P<letter>{upper}){end}")


@functools.lru_cache(maxsize=32)
def _patterns(letters: str) -> _Patterns:
    return _Patterns(letters)


def _is_choice_use(text: str, start: int, end: int) -> bool:
    """False when the capital at ``text[start:end]`` reads as a word, not a choice.

    Rejected: the article "A" opening a sentence before a lowercase word ("A cat is...");
    the pronoun "I" before a lowercase word or an apostrophe ("I think", "I'm");
    abbreviations and compounds ("U.S.", "X-ray", "type-A"). A following verb from a short
    list ("A is correct", "I would be wrong") keeps it a choice.
    """
    after = text[end : end + 40]
    before = text[max(0, start - 2) : start]
    if len(before) == 2 and before[0].isalpha() and before[1] in ".-‐":
        return False
    if len(after) >= 2 and after[0] in ".-‐" and after[1].isalpha():
        return False
    letter = text[start:end]
    if letter not in ("A", "I"):
        return True
    if after[:1] in ("'", "’"):
        return letter != "I"
    word = _WORD_AFTER.match(after)
    if word is None or word.group(1) in _LETTER_FOLLOWERS:
        return True
    if letter == "I":
        return False
    return not _opens_sentence(text, start)


def _opens_sentence(text: str, start: int) -> bool:
    """True when only quotes, brackets or markup separate ``start`` from the start of the
    text, a line break or a sentence end (``.!?:``). Looks back 200 characters at most."""
    head = text[max(0, start - 200) : start]
    trimmed = head.rstrip(_OPENING_MARKS)
    return not trimmed or trimmed[-1] in ".!?:" or "\n" in head[len(trimmed) :]


def _lowercase_ok(match: re.Match[str]) -> bool:
    """A lowercase letter counts only when unambiguous: in brackets, or followed by the end
    of the line/text or punctuation ("answer: b", "answer is (b)"), never by a word."""
    if match.group("open") and match.group("close"):
        return True
    return re.match(r"[ \t*_]*(?:$|\n|[.)\]:!,;])", match.string[match.end() :]) is not None


def _last(matches: list[re.Match[str]]) -> re.Match[str] | None:
    return max(matches, key=lambda m: m.end(), default=None)


def extract_choice(text: str, letters: str = "ABCD") -> str | None:
    """The chosen letter in ``text`` (upper case), or ``None``.

    Tiers, the first that finds a letter wins:

    1. the whole text is one letter, any case, with optional brackets/markup (``"b"``);
    2. the last explicit answer statement: "Answer: B", "The answer is (C).",
       "**Final answer:** b", "The correct option is D", ``\\boxed{B}``. A lowercase letter
       counts only when unambiguous (bracketed, or followed by punctuation or the end of the
       line), so "the answer is a cat" gives nothing;
    3. the last affirmation: "Option B is correct", "(C) is the right answer", "I'd choose D";
    4. a letter opening the text: "B", "(B)", "**B**", "B. Paris", "B) because ...";
    5. the last line holding only a letter;
    6. last resort: the last standalone capital letter of ``letters`` that does not read as
       a word (see :func:`_is_choice_use`): the article "A" opening a sentence ("A cat
       is ...") and the pronoun "I" are never taken, even when nothing else is found.

    Letters outside ``letters`` are never extracted.
    """
    patterns = _patterns(letters)
    stripped = re.sub(r"[\s*_().\[\]:]", "", text)
    if len(stripped) == 1 and stripped.upper() in letters:
        return stripped.upper()

    statements = [
        m
        for m in patterns.statement.finditer(text)
        if m.group("letter").isupper() or _lowercase_ok(m)
    ]
    statements += list(patterns.boxed.finditer(text))
    found = _last(statements)
    if found is None:
        affirmations = list(patterns.affirmation.finditer(text))
        affirmations += [
            m
            for m in patterns.choose.finditer(text)
            if (m.group("letter").isupper() and _is_choice_use(text, *m.span("letter")))
            or _lowercase_ok(m)
        ]
        found = _last(affirmations)
    if found is not None:
        return found.group("letter").upper()

    start = patterns.start.match(text)
    if start is not None and (
        (start.group("open") and start.group("close"))
        or (start.group("letter").isupper() and _is_choice_use(text, *start.span("letter")))
    ):
        return start.group("letter").upper()

    alone = _last(list(patterns.alone.finditer(text)))
    if alone is not None:
        return alone.group("letter").upper()

    for match in reversed(list(patterns.standalone.finditer(text))):
        if _is_choice_use(text, *match.span("letter")):
            return match.group("letter")
    return None


class McqGrader(Grader):
    """Multiple choice: the rollout's letter against the reference letter.

    ``letters`` lists the valid choices in order (``"ABCD"``, ``"ABCDEFGHIJ"`` ...).
    Extraction follows :func:`extract_choice`; ``correct`` means the extracted letter equals
    the reference letter (or one of the reference aliases); clusters group rollouts by
    letter, labelled by the lowest index choosing it. A reference that is not one of
    ``letters`` (after trimming spaces and brackets, any case) gives every rollout a
    ``grader_error``.
    """

    id: ClassVar[str] = "mcq"

    def __init__(self, letters: str = "ABCD") -> None:
        if (
            not isinstance(letters, str)
            or len(letters) < 2
            or not all("A" <= c <= "Z" for c in letters)
            or len(set(letters)) != len(letters)
        ):
            raise UsageError(
                f"mcq grader option 'letters' must be a string of at least 2 distinct capital "
                f"letters A-Z, such as 'ABCD'; got {letters!r}"
            )
        self.letters = letters
        self.spec = {"type": self.id, "letters": letters}
        self.version = _LOGIC_VERSION

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> McqGrader:
        """Build from ``{"type": "mcq", "letters": "ABCD"}`` (``letters`` optional)."""
        check_spec_keys(spec, ("letters",))
        return cls(spec.get("letters", "ABCD"))

    def extract(self, text: str) -> str | None:
        """The chosen letter (upper case), or ``None``; see :func:`extract_choice`."""
        return extract_choice(text, self.letters)

    def _gold_letters(self, reference: object) -> set[str]:
        golds = set()
        for alias in reference_aliases(reference):
            letter = alias.strip().strip("()[]").strip().upper()
            if len(letter) != 1 or letter not in self.letters:
                raise BadReferenceError(
                    f"reference {alias!r} is not one of the letters {self.letters}"
                )
            golds.add(letter)
        return golds

    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout of one problem (rules in the class docstring)."""
        ordered = check_rollouts(rollouts)
        try:
            golds = self._gold_letters(reference)
        except BadReferenceError as exc:
            return failed_all(ordered, f"reference unusable: {exc}", self.extract)
        return grade_by_key(
            ordered,
            extract=self.extract,
            equivalent=lambda a, b: a == b,
            is_correct=lambda letter: letter in golds,
            render=str,
        )
