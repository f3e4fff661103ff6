"""Turn rows into :class:`Problem` objects, following a task's :class:`Recipe`.

This is the one code path for built-in and user tasks: field lookup, id and duplicate
checks, reference normalisation, multiple-choice resolution and permutation, and prompt
rendering with a Jinja2 template.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from typing import Any, Protocol

import jinja2
import jinja2.sandbox

from ..errors import DataError, UsageError
from ._problem import Problem, Recipe

__all__ = ["build_problems", "compile_template", "letters_text", "permutation"]

_ENV = jinja2.sandbox.SandboxedEnvironment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False
)


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> jinja2.Template:
    return _ENV.from_string(template)


def compile_template(template: str, where: str) -> jinja2.Template:
    """The compiled template; a :class:`UsageError` naming ``where`` when it is not valid Jinja2."""
    try:
        return _compile(template)
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(
            f"{where}: template is not valid Jinja2 (line {exc.lineno}: {exc.message})"
        ) from None


def permutation(n: int, seed: int, problem_id: str) -> list[int]:
    """A seeded permutation of ``range(n)`` for one problem.

    Fisher-Yates driven by SHA-256 of ``"<seed>/<problem_id>/<i>"``, so it depends only on
    its arguments (not on Python's ``random`` or the order problems are loaded in).
    ``perm[k]`` is the original index of the choice shown in position ``k``.
    """
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        digest = hashlib.sha256(f"{seed}/{problem_id}/{i}".encode()).digest()
        j = int.from_bytes(digest, "big") % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def letters_text(letters: str) -> str:
    """``"A, B, C or D"``."""
    return ", ".join(letters[:-1]) + " or " + letters[-1]


class _Row:
    """One input row with what is needed to report a problem in it."""

    __slots__ = ("data", "line", "number", "path")

    def __init__(self, number: int, line: int | None, data: dict[str, Any], path: str | None):
        self.number = number
        self.line = line
        self.data = data
        self.path = path

    def error(self, message: str) -> DataError:
        return DataError(f"row {self.number} {message}", path=self.path, line=self.line)

    def fields_text(self) -> str:
        return ", ".join(map(str, self.data)) or "none"

    def get(self, field: str, key: str) -> Any:
        if field not in self.data:
            raise self.error(f"has no field {field!r} (fields: {self.fields_text()}); set {key}")
        return self.data[field]


def _scalar_text(value: Any) -> str | None:
    """A string, int or float as answer text; ``None`` for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    return None


def _reference(row: _Row, recipe: Recipe) -> str | list[str]:
    value = row.get(recipe.answer_field, "answer_field")
    items = value if isinstance(value, list) else [value]
    texts = [_scalar_text(v) for v in items]
    if not items or any(t is None or t == "" for t in texts):
        raise row.error(
            f"has no usable answer in field {recipe.answer_field!r} ({value!r}); "
            "an answer is a non-empty string, a number, or a list of them"
        )
    answers: list[str] = []
    for text in texts:
        assert text is not None
        for candidate in [text, *recipe.aliases.get(text.casefold(), [])]:
            if candidate not in answers:
                answers.append(candidate)
    if isinstance(value, list) or len(answers) > 1:
        return answers
    return answers[0]


def _choices(row: _Row, recipe: Recipe) -> list[str]:
    spec = recipe.choices_field
    if isinstance(spec, list):
        raw: Any = [row.get(f, "choices_field") for f in spec]
    else:
        assert spec is not None
        raw = row.get(spec, "choices_field")
        if isinstance(raw, str):  # a CSV cell holding a JSON list
            try:
                raw = json.loads(raw)
            except ValueError:
                raise row.error(
                    f"field {spec!r} is text, not a list of choices; use a JSON list, "
                    "or set choices_field to a list of columns (one choice each)"
                ) from None
    if not isinstance(raw, list):
        raise row.error(f"field {spec!r} must hold a list of choices, got {type(raw).__name__}")
    choices = [_scalar_text(c) for c in raw]
    if any(c is None for c in choices):
        raise row.error(f"choices must be strings or numbers, got {raw!r}")
    if len(choices) < 2:
        raise row.error(f"has {len(choices)} choice(s); a multiple-choice row needs at least 2")
    if len(choices) > len(recipe.letters):
        raise row.error(
            f"has {len(choices)} choices but letters is {recipe.letters!r}; "
            f"set letters to at least {'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[: len(choices)]!r}"
        )
    return [c for c in choices if c is not None]


def _gold_index(row: _Row, recipe: Recipe, choices: list[str]) -> int:
    """Index (in the original order) of the correct choice."""
    value = row.get(recipe.answer_field, "answer_field")
    n = len(choices)
    letters = recipe.letters[:n]
    fmt = recipe.answer_format
    text = value.strip() if isinstance(value, str) else None

    def bad(why: str) -> DataError:
        return row.error(f"answer {value!r} in field {recipe.answer_field!r} {why}")

    if isinstance(value, bool):
        raise bad("is a boolean; give a letter, a 0-based index or the choice text")
    if fmt in ("index", "index1"):
        base = 1 if fmt == "index1" else 0
        if isinstance(value, int) or (text is not None and text.isdigit()):
            idx = int(value) - base
            if 0 <= idx < n:
                return idx
        raise bad(f"is not a {'1' if base else '0'}-based index of the {n} choices")
    if fmt == "letter":
        if text is not None and text.upper() in letters and len(text) == 1:
            return letters.index(text.upper())
        raise bad(f"is not one of the letters {letters}")
    text_matches = [i for i, c in enumerate(choices) if text is not None and c == text]
    if fmt == "text":
        if len(text_matches) == 1:
            return text_matches[0]
        raise bad("matches none of the choices" if not text_matches else "matches several choices")
    # auto
    if isinstance(value, int):
        if 0 <= value < n:
            return value
        raise bad(f"is not a 0-based index of the {n} choices")
    if text is None:
        raise bad("is not a letter, an index or a choice text")
    found = set(text_matches)
    if len(text) == 1 and text in letters:
        found.add(letters.index(text))
    if len(found) == 1 and len(text_matches) <= 1:
        return found.pop()
    if len(found) > 1 or len(text_matches) > 1:
        raise bad(
            "is ambiguous (a letter and a choice text, or several choices); set answer_format"
        )
    if text.isdigit():
        raise bad(
            "could be a 0-based or a 1-based index; set answer_format to index (0-based) or index1 (1-based)"
        )
    raise bad(f"is neither a letter {letters}, nor an index, nor one of the choices")


def _text_field(row: _Row, field: str, key: str) -> str:
    value = row.get(field, key)
    text = _scalar_text(value)
    if not text:
        raise row.error(f"field {field!r} must be non-empty text, got {value!r}")
    return text


def _check_json(row: _Row, key: str, value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise row.error(
            f"field {key!r} is not JSON-serialisable ({value!r}); drop it from extras_fields"
        ) from None
    return value


def _loglik_parts(row: _Row, n: int, choices: list[str]) -> dict[str, Any]:
    """A log-likelihood row's optional ``continuations`` (default: a space and the choice)
    and ``contexts`` (one per option, default: the prompt for every option)."""
    out: dict[str, Any] = {}
    for key in ("continuations", "contexts"):
        value = row.data.get(key)
        if value is None:
            continue
        if (
            not isinstance(value, list)
            or len(value) != n
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise row.error(
                f"field {key!r} must be a list of {n} non-empty strings, one per choice"
            )
        out[key] = list(value)
    if "continuations" not in out and "contexts" not in out:
        return out  # continuations are " " + choice, scored after the prompt
    out.setdefault("continuations", [" " + c for c in choices])
    return out


class BuildSpec(Protocol):
    """What :func:`build_problems` reads of a task (a :class:`~rolleval.tasks.TaskSpec`)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def shuffle_choices(self) -> bool: ...
    @property
    def cluster_field(self) -> str | None: ...
    @property
    def recipe(self) -> Recipe | None: ...


def build_problems(spec: BuildSpec) -> list[Problem]:
    """Every problem of ``spec``, sorted by ``problem_id``."""
    recipe = spec.recipe
    assert recipe is not None
    template = compile_template(recipe.template, f"task {spec.name!r}")
    seen: dict[str, _Row] = {}
    problems: list[Problem] = []
    for number, line, data in recipe.rows.read():
        row = _Row(number, line, data, recipe.rows.path)
        if recipe.id_field is None:
            ident = f"row-{number:06d}"
        else:
            ident = _text_field(row, recipe.id_field, "id_field")
        if ident in seen:
            first = seen[ident]
            raise row.error(
                f"has the same id {ident!r} as row {first.number}"
                + (f" (line {first.line})" if first.line is not None else "")
                + "; ids must be unique: set id_field to a unique field, or remove it to number rows"
            )
        seen[ident] = row
        problem_id = f"{spec.name}/{ident}"
        question = _text_field(row, recipe.question_field, "question_field")

        extras: dict[str, Any] = {}
        for key in recipe.extras_fields:
            extras[key] = _check_json(row, key, row.get(key, "extras_fields"))
        context: dict[str, Any] = {
            k: v for k, v in data.items() if isinstance(k, str) and k.isidentifier()
        }
        if spec.type == "mcq":
            choices = _choices(row, recipe)
            gold = _gold_index(row, recipe, choices)
            perm = (
                permutation(len(choices), spec.seed, problem_id)
                if spec.shuffle_choices
                else list(range(len(choices)))
            )
            shown = [choices[i] for i in perm]
            letters = recipe.letters[: len(shown)]
            reference: str | list[str] = letters[perm.index(gold)]
            extras["choices"] = shown
            extras["permutation"] = perm
            context.update(
                choices=shown,
                letters=letters,
                letters_text=letters_text(letters),
                options="\n".join(
                    f"{letter}. {choice}" for letter, choice in zip(letters, shown, strict=True)
                ),
            )
        elif spec.type == "loglik":
            choices = _choices(row, recipe)
            gold = _gold_index(row, recipe, choices)
            reference = choices[gold]
            extras["choices"] = choices
            extras.update(_loglik_parts(row, len(choices), choices))
            context.update(choices=choices)
        else:
            reference = _reference(row, recipe)

        cluster = None
        if spec.cluster_field is not None:
            value = row.get(spec.cluster_field, "cluster_field")
            cluster = None if value is None else str(value)

        context.update(
            question=question, fewshot=recipe.fewshot, row=data, task=spec.name, id=ident
        )
        try:
            text = template.render(context).strip()
        except jinja2.UndefinedError as exc:
            raise row.error(
                f"cannot fill the template: {exc.message} (fields: {row.fields_text()})"
            ) from None
        except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as exc:
            raise row.error(f"cannot fill the template: {exc}") from None
        if recipe.chat:
            prompt: list[dict[str, str]] | str = (
                [{"role": "system", "content": recipe.system}] if recipe.system else []
            ) + [{"role": "user", "content": text}]
        else:
            prompt = f"{recipe.system}\n\n{text}" if recipe.system else text
        problems.append(Problem(problem_id, prompt, reference, cluster, extras))
    if not problems:
        raise DataError(f"task {spec.name!r} has no rows", path=recipe.rows.path)
    problems.sort(key=lambda p: p.problem_id)
    return problems
