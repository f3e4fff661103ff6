"""Answer extractors for free-form (math) answers.

Each extractor takes the raw rollout text and returns the answer string or ``None``; it
never returns ``""``. The math grader tries its extractors in the declared order and keeps
the first answer found.

``boxed``
    Content of the last complete ``\\boxed{...}`` or ``\\fbox{...}`` with non-empty content.
    Braces are balanced (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``); escaped braces
    ``\\{`` ``\\}`` are content, not grouping. An unclosed last box (a truncated answer) is
    skipped in favour of the last complete one. Surrounding ``$`` are dropped.
``answer_line``
    The last "Answer: ...", "The answer is ...", "The final answer is ..." statement (case
    insensitive, markdown bold allowed). What follows the marker up to the end of the line
    (or the next non-empty line when the marker ends its line) is cleaned: a ``\\boxed``
    in it wins; an opening math delimiter (``$``, ``$$``, ``\\(``, ``\\[``) that is closed
    gives the first delimited span; otherwise the text up to the first sentence end (". "),
    without trailing punctuation or a currency sign, and reduced to its number when it is a
    number followed only by words ("8 apples" gives ``"8"``, "$1,000." gives ``"1000"``).
``gsm8k``
    What follows the last ``####`` on its line. When that starts with a number followed by
    nothing, a space or punctuation, the number is returned normalised (``"####  1,234"``
    gives ``"1234"``, ``"#### $18 dollars"`` gives ``"18"``); otherwise the text itself.
``last_number``
    The last number in the text, normalised: thousands separators dropped (``1,000``),
    a unary minus kept (``x = -3`` gives ``-3``, ``5-3`` gives ``3``), decimals and simple
    fractions kept (``0.5``, ``3/4``), a leading ``+`` dropped. Digits glued to a letter on
    their left (``H2O``, ``x2``) are not numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "EXTRACTORS",
    "extract_answer_line",
    "extract_boxed",
    "extract_gsm8k",
    "extract_last_number",
    "normalize_number",
]

# A number token: comma-grouped or plain integer part, optional decimals, optional /denominator;
# or a bare decimal such as .5. The sign is handled apart (unary only).
_NUMBER_BODY = r"(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:/\d+(?:\.\d+)?)?"
_NUMBER = re.compile(rf"(?P<sign>[-+\u2212])?(?P<body>{_NUMBER_BODY})")
_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_MARK = re.compile(
    r"(?i)(?:\bfinal\s+answer\b|\banswer\b)[ \t]*(?:(?:\*\*|__)[ \t]*)?(?:\bis\b[ \t]*:?|:)"
    r"(?:[ \t]*(?:\*\*|__))?"
)
_MATH_SPANS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
# What may follow a number and still leave it the answer: nothing, or plain words ("8 apples").
_UNIT_WORDS = re.compile(r"(?:\s+[A-Za-z][A-Za-z\s'-]*)?")
_CURRENCY = re.compile(r"^\\?\$\s*(?=[-+\u2212]?[\d.])")


def normalize_number(sign: str | None, body: str) -> str:
    """``-1,234.5`` -> ``-1234.5``; unicode minus -> ``-``; a ``+`` sign dropped."""
    text = body.replace(",", "")
    return f"-{text}" if sign in ("-", "\u2212") else text


def _numbers(text: str) -> list[tuple[int, int, str]]:
    """(start, end, normalised) for every number token of ``text``, left to right."""
    found = []
    for match in _NUMBER.finditer(text):
        start = match.start("body")
        before = text[start - 1] if start > 0 else ""
        if before and (before.isalnum() or before in "_./"):
            continue  # glued to a word (H2O), or the tail of another token
        sign = match.group("sign")
        if sign is not None:
            at = match.start("sign")
            left = text[at - 1] if at > 0 else ""
            if left and (left.isalnum() or left in "_)]}."):
                sign = None  # binary minus/plus: 5-3 is not -3
            else:
                start = at
        found.append((start, match.end(), normalize_number(sign, match.group("body"))))
    return found


def extract_last_number(text: str) -> str | None:
    """The last number in ``text`` (see module docstring), or ``None``."""
    numbers = _numbers(text)
    return numbers[-1][2] if numbers else None


def _group_ends(text: str) -> dict[int, int]:
    """For each ``{`` that opens a group: the index just past its closing ``}``.

    One pass with a stack; a backslash escapes the next character (``\\{`` is content).
    Unclosed groups are absent.
    """
    ends: dict[int, int] = {}
    stack: list[int] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            ends[stack.pop()] = i + 1
        i += 1
    return ends


def _strip_dollars(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text.startswith("$") and text.endswith("$"):
        text = text[1:-1].strip()
    return text


def extract_boxed(text: str) -> str | None:
    """Content of the last complete, non-empty ``\\boxed{}``/``\\fbox{}``, or ``None``."""
    opens = list(_BOX_OPEN.finditer(text))
    if not opens:
        return None
    ends = _group_ends(text)
    for match in reversed(opens):
        end = ends.get(match.end() - 1)
        if end is None:
            continue
        content = _strip_dollars(text[match.end() : end - 1])
        if content:
            return content
    return None


def _first_math_span(text: str) -> str | None:
    for opening, closing in _MATH_SPANS:
        if text.startswith(opening):
            end = text.find(closing, len(opening))
            if end == -1:
                return None
            return text[len(opening) : end].strip() or None
    return None


def _clean_statement(content: str) -> str | None:
    content = content.strip().strip("*_").strip()
    if not content:
        return None
    boxed = extract_boxed(content)
    if boxed is not None:
        return boxed
    span = _first_math_span(content)
    if span is not None:
        return span
    content = _CURRENCY.sub("", content, count=1)
    end = _SENTENCE_END.search(content)
    if end is not None:
        content = content[: end.start()]
    content = content.strip().rstrip(".,;:!").strip().strip("*_").strip()
    number = _NUMBER.match(content)
    if number is not None and _UNIT_WORDS.fullmatch(content[number.end() :]):
        return normalize_number(number.group("sign"), number.group("body"))
    return content or None


def extract_answer_line(text: str) -> str | None:
    """The answer of the last "Answer: ..." / "The answer is ..." statement, or ``None``."""
    marks = list(_ANSWER_MARK.finditer(text))
    for position in range(len(marks) - 1, -1, -1):
        # a statement ends at the end of its line or where the next statement starts
        stop = marks[position + 1].start() if position + 1 < len(marks) else len(text)
        rest = text[marks[position].end() : stop]
        line, _, after = rest.partition("\n")
        if not line.strip(" \t*_"):
            line = next((candidate for candidate in after.split("\n") if candidate.strip()), "")
        answer = _clean_statement(line)
        if answer is not None:
            return answer
    return None


def extract_gsm8k(text: str) -> str | None:
    """The answer after the last ``####`` (see module docstring), or ``None``."""
    at = text.rfind("####")
    if at == -1:
        return None
    line = text[at + 4 :].split("\n", 1)[0]
    rest = line.strip().strip("*_").strip()
    match = _NUMBER.match(_CURRENCY.sub("", rest, count=1))
    if match is not None:
        tail = match.string[match.end() :]
        if not tail or tail[0].isspace() or tail[0] in ".,;:!?)%$*":
            return normalize_number(match.group("sign"), match.group("body"))
    rest = _strip_dollars(rest.rstrip(".").strip())
    return rest or None


#: Extractor name -> function, in the default order of the math grader.
EXTRACTORS: dict[str, Callable[[str], str | None]] = {
    "boxed": extract_boxed,
    "answer_line": extract_answer_line,
    "gsm8k": extract_gsm8k,
    "last_number": extract_last_number,
}
