"""Task types and the declarative task config they are built from.

Every task, built-in or user-supplied, is described by the same small config (a dict, or
YAML), validated by :func:`parse_config`. A built-in names a ``loader`` (a Python function
that reads packaged data into rows); a user task names a ``path``. Everything after the rows
-- ids, prompts, references, choices -- is done by :mod:`._build` from the config alone. The modules depend one way:
``_problem`` (the data types) <- ``_build`` (rows to problems) <- ``_spec`` (configs to tasks).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ..errors import UsageError
from ._build import build_problems, compile_template
from ._problem import Problem, Recipe, RowSource

__all__ = [
    "TASK_TYPES",
    "Problem",
    "Recipe",
    "RowSource",
    "TaskSpec",
    "default_grader",
    "default_sampling",
    "parse_config",
]

TASK_TYPES: tuple[str, ...] = ("math", "mcq", "short_answer", "qa", "code", "loglik", "judge")

#: Grader spec per task type before overrides. ``letters`` of ``mcq`` comes from the config.
_GRADERS: dict[str, dict[str, Any]] = {
    "math": {"type": "math", "extractors": ["boxed", "answer_line", "last_number"]},
    "mcq": {"type": "mcq", "letters": "ABCD"},
    "short_answer": {"type": "short_answer", "numeric_tolerance": None, "first_line": True},
    "qa": {"type": "qa", "style": "squad"},
    "code": {"type": "code", "timeout_s": 10.0, "memory_mb": 1024, "processes": 32},
    "loglik": {"type": "loglik", "normalisation": "chars"},
    "judge": {"type": "judge"},  # endpoint and model come from the task's grader config
}

#: The per-rollout score a task's report and comparisons use by default (``score_key``).
_SCORE_KEYS: dict[str, str] = {
    "math": "correct",
    "mcq": "correct",
    "short_answer": "correct",
    "qa": "metrics.f1",
    "code": "correct",
    "loglik": "correct",
    "judge": "correct",
}

_SAMPLING: dict[str, dict[str, Any]] = {
    "math": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 1024, "stop": None},
    "mcq": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 256, "stop": None},
    "short_answer": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 16, "stop": ["\n"]},
    "qa": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 32, "stop": ["\n"]},
    "code": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 1024, "stop": None},
    # log-likelihood tasks generate nothing: options are scored with echo and logprobs
    "loglik": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1, "stop": None},
    "judge": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 512, "stop": None},
}

_TEMPLATES: dict[str, str] = {
    "math": (
        "Solve the following problem. Reason step by step, and put your final answer "
        "within \\boxed{}.\n\n{{ question }}"
    ),
    "mcq": (
        "{{ question }}\n\n{{ options }}\n\n"
        "Answer with the letter of the correct option. Think briefly if you need to, then "
        'end your reply with a line of the form "Answer: X", where X is {{ letters_text }}.'
    ),
    "short_answer": (
        "Answer with a short phrase.\n"
        "{% for shot in fewshot %}Q: {{ shot.question }}\nA: {{ shot.answer }}\n{% endfor %}"
        "Q: {{ question }}\nA:"
    ),
    "qa": "Answer the question with a short phrase, on one line.\n\nQuestion: {{ question }}\nAnswer:",
    "code": (
        "{{ question }}\n\nReply with a complete Python program, including the imports it "
        "needs, in one ```python code block."
    ),
    "loglik": "Question: {{ question }}\nAnswer:",
    "judge": "{{ question }}",
}

_SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "stop")
_ANSWER_FORMATS = ("auto", "letter", "index", "index1", "text")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

#: Keys of a task config, with the meaning documented in docs/tasks.md.
CONFIG_KEYS: tuple[str, ...] = (
    "aliases",
    "answer_field",
    "answer_format",
    "chat",
    "choices_field",
    "cluster_field",
    "data",
    "description",
    "extras_fields",
    "fewshot",
    "grader",
    "id_field",
    "letters",
    "licence",
    "loader",
    "name",
    "path",
    "preset",
    "question_field",
    "sampling",
    "score_key",
    "seed",
    "shuffle_choices",
    "system",
    "template",
    "thinking",
    "type",
)


def default_grader(task_type: str) -> dict[str, Any]:
    """The grader spec a task of ``task_type`` gets when its config overrides nothing."""
    return copy.deepcopy(_GRADERS[task_type])


def default_sampling(task_type: str) -> dict[str, Any]:
    """The sampling defaults of ``task_type`` (temperature, top_p, max_tokens, stop)."""
    return copy.deepcopy(_SAMPLING[task_type])


@dataclass(frozen=True)
class TaskSpec:
    """A task: how to load its problems, how to sample, how to grade."""

    name: str
    description: str
    grader: dict[str, Any]
    """Grader spec for :mod:`rolleval.grading` (``type`` plus its options)."""
    sampling: dict[str, Any]
    """Default sampling: ``temperature``, ``top_p``, ``max_tokens``, ``stop``."""
    source: dict[str, Any]
    """Provenance: ``package``/``version``/``path``/``sha256``, or ``path``/``sha256`` of a user file."""
    licence: str
    cluster_field: str | None
    type: str = "math"
    """``math``, ``mcq``, ``short_answer``, ``qa``, ``code``, ``loglik`` or ``judge``."""
    shuffle_choices: bool = False
    """MCQ only: present the choices in a seeded per-problem permutation."""
    seed: int = 0
    """Seed of the choice permutations (with the problem id)."""
    score_key: str = "correct"
    """The per-rollout score reports and comparisons use: ``correct``, ``score`` or
    ``metrics.<name>`` (e.g. ``metrics.f1`` for the qa tasks)."""
    thinking: tuple[str, str] | Literal["none"] | None = None
    """Delimiters of an inline thought (``docs/contract.md``, "Reasoning models"); ``None``:
    the run's setting, else ``<think>``/``</think>``."""
    recipe: Recipe | None = field(default=None, repr=False, compare=False)

    def load(self, *, limit: int | None = None) -> list[Problem]:
        """All problems, sorted by ``problem_id`` (plain string order).

        ``limit`` keeps the first ``limit`` problems of that order, so the same ``limit``
        always selects the same problems. Every row is read and checked even with a limit.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise UsageError(f"limit must be a non-negative integer or None, got {limit!r}")
        if self.recipe is None:
            raise UsageError(f"task {self.name!r} has no data source")
        problems = build_problems(self)
        return problems if limit is None else problems[:limit]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (for run manifests)."""
        return {
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "grader": copy.deepcopy(self.grader),
            "sampling": copy.deepcopy(self.sampling),
            "source": copy.deepcopy(self.source),
            "licence": self.licence,
            "cluster_field": self.cluster_field,
            "shuffle_choices": self.shuffle_choices,
            "seed": self.seed,
            "score_key": self.score_key,
        }


# --------------------------------------------------------------------------- config parsing


def _fail(where: str, message: str) -> UsageError:
    return UsageError(f"{where}: {message}")


def _opt_str(cfg: Mapping[str, Any], key: str, where: str) -> str | None:
    value = cfg.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _fail(where, f"{key} must be a non-empty string, got {value!r}")
    return value


def _check_sampling(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(where, f"sampling must be a mapping, got {value!r}")
    unknown = sorted(set(value) - set(_SAMPLING_KEYS))
    if unknown:
        raise _fail(
            where,
            f"unknown sampling key(s) {', '.join(unknown)} (known: {', '.join(_SAMPLING_KEYS)})",
        )
    out = dict(value)
    if "temperature" in out:
        t = out["temperature"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0:
            raise _fail(where, f"sampling.temperature must be a number >= 0, got {t!r}")
        out["temperature"] = float(t)
    if "top_p" in out:
        p = out["top_p"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
            raise _fail(where, f"sampling.top_p must be in (0, 1], got {p!r}")
        out["top_p"] = float(p)
    if "max_tokens" in out:
        m = out["max_tokens"]
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise _fail(where, f"sampling.max_tokens must be a positive integer, got {m!r}")
    if "stop" in out:
        s = out["stop"]
        if isinstance(s, str):
            s = [s]
        if s is not None and (
            not isinstance(s, list) or not all(isinstance(x, str) and x for x in s)
        ):
            raise _fail(where, f"sampling.stop must be null or a list of strings, got {s!r}")
        out["stop"] = s or None
    return out


def _field_list(value: Any, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(x, str) and x for x in value):
        raise _fail(where, f"{key} must be a field name or a list of field names, got {value!r}")
    return list(value)


def _check_fewshot(value: Any, where: str) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(where, "fewshot must be a list of {question: ..., answer: ...} items")
    shots = []
    for i, shot in enumerate(value, 1):
        if (
            not isinstance(shot, Mapping)
            or set(shot) != {"question", "answer"}
            or not all(isinstance(v, str) and v for v in shot.values())
        ):
            raise _fail(
                where, f"fewshot item {i} must have exactly the string keys question and answer"
            )
        shots.append({"question": shot["question"], "answer": shot["answer"]})
    return shots


def _check_aliases(value: Any, where: str) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(where, "aliases must map an answer to a list of other accepted answers")
    out: dict[str, list[str]] = {}
    for k, v in value.items():
        items = [v] if isinstance(v, (str, int, float)) and not isinstance(v, bool) else v
        if not isinstance(items, list) or not all(
            isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in items
        ):
            raise _fail(where, f"aliases[{k!r}] must be a string or a list of strings")
        out[str(k).strip().casefold()] = [str(x).strip() for x in items]
    return out


def parse_config(
    cfg: Mapping[str, Any],
    *,
    rows: RowSource,
    source: dict[str, Any],
    where: str,
) -> TaskSpec:
    """Validate a task config and build its :class:`TaskSpec` (rows are read on ``load``).

    ``where`` prefixes error messages (e.g. ``"task config 'my_aime'"``); ``rows`` and
    ``source`` come from the caller, who resolved ``path`` or ``loader``. Keys are checked
    in a fixed order (identity, data fields, choices, prompt, sampling, grader, score,
    thinking, aliases and few-shot, template), so a config with several faults always
    reports the same one first.
    """
    _check_known_keys(cfg, where)
    name, task_type = _name_and_type(cfg, where)
    description = _opt_str(cfg, "description", where) or f"{task_type} task {name}"
    licence = _opt_str(cfg, "licence", where) or _opt_str(cfg, "license", where)
    id_field = _opt_str(cfg, "id_field", where)
    question_field = _opt_str(cfg, "question_field", where) or "question"
    answer_field = _opt_str(cfg, "answer_field", where) or "answer"
    cluster_field = _opt_str(cfg, "cluster_field", where)
    extras_fields = (
        tuple(_field_list(cfg["extras_fields"], "extras_fields", where))
        if cfg.get("extras_fields")
        else ()
    )
    choices = _choice_settings(cfg, task_type, where)
    shuffle, seed = _choice_permutation(cfg, where)
    prompt = _prompt_form(cfg, task_type, where)
    sampling = default_sampling(task_type)
    if cfg.get("sampling") is not None:
        sampling.update(_check_sampling(cfg["sampling"], where))
    grader = _grader_spec(cfg, task_type, choices.letters, where)
    score_key = _score_key(cfg, task_type, where)
    thinking = _thinking(cfg, where)
    recipe = Recipe(
        rows=rows,
        id_field=id_field,
        question_field=question_field,
        answer_field=answer_field,
        choices_field=choices.field,
        extras_fields=extras_fields,
        template=prompt.template,
        system=prompt.system,
        chat=prompt.chat,
        letters=choices.letters,
        answer_format=choices.answer_format,
        aliases=_check_aliases(cfg.get("aliases"), where),
        fewshot=_check_fewshot(cfg.get("fewshot"), where),
    )
    compile_template(prompt.template, where)  # fail on a bad template now, not at load
    return TaskSpec(
        name=name,
        description=description,
        grader=grader,
        sampling=sampling,
        source=source,
        licence=licence or "see upstream dataset",
        cluster_field=cluster_field,
        type=task_type,
        shuffle_choices=shuffle,
        seed=seed,
        score_key=score_key,
        thinking=thinking,
        recipe=recipe,
    )


def _check_known_keys(cfg: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(cfg) - set(CONFIG_KEYS) - {"license"})
    if unknown:
        raise _fail(
            where,
            f"unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(CONFIG_KEYS)})",
        )


def _name_and_type(cfg: Mapping[str, Any], where: str) -> tuple[str, str]:
    name = cfg.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise _fail(
            where,
            f"name must be a non-empty string of letters, digits, '_', '.', '-'; got {name!r}",
        )
    task_type = cfg.get("type")
    if task_type not in TASK_TYPES:
        raise _fail(where, f"type must be one of {', '.join(TASK_TYPES)}; got {task_type!r}")
    return name, task_type


class _Choices(NamedTuple):
    """How a task's options are read and named (``Recipe`` fields)."""

    field: str | list[str] | None
    letters: str
    answer_format: str


_MCQ_KEYS = ("choices_field", "letters", "answer_format", "shuffle_choices")


def _choice_settings(cfg: Mapping[str, Any], task_type: str, where: str) -> _Choices:
    """mcq names its options by letter; loglik scores any number of them; the other types
    have none, and a config of theirs may set no option key."""
    if task_type == "mcq":
        field = _choices_field(cfg, where)
        letters = _mcq_letters(cfg, where)
        return _Choices(field, letters, _answer_format(cfg, where))
    if task_type == "loglik":
        answer_format = _answer_format(cfg, where)
        field = _choices_field(cfg, where)
        present = [k for k in ("letters", "shuffle_choices") if cfg.get(k) not in (None, False)]
        if present:
            raise _fail(where, f"{', '.join(present)} only apply to type mcq (this task is loglik)")
        if cfg.get("chat"):
            raise _fail(where, "a loglik task scores raw text; chat does not apply (remove it)")
        return _Choices(field, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", answer_format)
    present = [k for k in _MCQ_KEYS if cfg.get(k) not in (None, False)]
    if present:
        raise _fail(
            where, f"{', '.join(present)} only apply to type mcq (this task is {task_type})"
        )
    return _Choices(None, "", "auto")


def _choices_field(cfg: Mapping[str, Any], where: str) -> str | list[str]:
    """One field holding the list of options, or one field per option."""
    raw_choices = cfg.get("choices_field", "choices")
    choices = _field_list(raw_choices, "choices_field", where)
    return choices[0] if isinstance(raw_choices, str) else choices


def _mcq_letters(cfg: Mapping[str, Any], where: str) -> str:
    """The option letters, from ``letters`` or ``grader.letters`` (which must agree)."""
    grader_letters = (
        (cfg.get("grader") or {}).get("letters") if isinstance(cfg.get("grader"), Mapping) else None
    )
    letters = cfg.get("letters") or grader_letters or "ABCD"
    if (
        not isinstance(letters, str)
        or len(letters) < 2
        or len(set(letters)) != len(letters)
        or not letters.isalpha()
        or not letters.isupper()
    ):
        raise _fail(
            where, f"letters must be distinct capital letters such as 'ABCD', got {letters!r}"
        )
    if grader_letters is not None and grader_letters != letters:
        raise _fail(
            where, f"letters {letters!r} and grader.letters {grader_letters!r} differ; set one"
        )
    return letters


def _answer_format(cfg: Mapping[str, Any], where: str) -> str:
    answer_format = cfg.get("answer_format", "auto")
    if answer_format not in _ANSWER_FORMATS:
        raise _fail(
            where,
            f"answer_format must be one of {', '.join(_ANSWER_FORMATS)}; got {answer_format!r}",
        )
    return str(answer_format)


def _choice_permutation(cfg: Mapping[str, Any], where: str) -> tuple[bool, int]:
    """``shuffle_choices`` and the ``seed`` of the permutations."""
    shuffle = cfg.get("shuffle_choices", False)
    if not isinstance(shuffle, bool):
        raise _fail(where, f"shuffle_choices must be true or false, got {shuffle!r}")
    seed = cfg.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _fail(where, f"seed must be an integer, got {seed!r}")
    return shuffle, seed


class _PromptForm(NamedTuple):
    """How a problem is put to the model (``Recipe`` fields)."""

    chat: bool
    template: str
    system: str | None


def _prompt_form(cfg: Mapping[str, Any], task_type: str, where: str) -> _PromptForm:
    chat = cfg.get("chat", task_type != "loglik")
    if not isinstance(chat, bool):
        raise _fail(where, f"chat must be true or false, got {chat!r}")
    template = cfg.get("template") or _TEMPLATES[task_type]
    if not isinstance(template, str):
        raise _fail(where, f"template must be a string, got {template!r}")
    return _PromptForm(chat, template, _opt_str(cfg, "system", where))


def _grader_spec(
    cfg: Mapping[str, Any], task_type: str, letters: str, where: str
) -> dict[str, Any]:
    """The task type's grader with the config's ``grader`` options over it."""
    grader = default_grader(task_type)
    overrides = cfg.get("grader")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise _fail(where, f"grader must be a mapping of grader options, got {overrides!r}")
        if overrides.get("type", task_type) != task_type:
            raise _fail(
                where,
                f"grader.type {overrides['type']!r} does not match the task type {task_type!r}; "
                "change type instead",
            )
        grader.update(copy.deepcopy(dict(overrides)))
    if task_type == "mcq":
        grader["letters"] = letters
    return grader


def _score_key(cfg: Mapping[str, Any], task_type: str, where: str) -> str:
    score_key = cfg.get("score_key") or _SCORE_KEYS[task_type]
    if not isinstance(score_key, str) or not (
        score_key in ("correct", "score")
        or (score_key.startswith("metrics.") and len(score_key) > len("metrics."))
    ):
        raise _fail(where, f"score_key must be correct, score or metrics.<name>; got {score_key!r}")
    if task_type == "qa" and score_key.startswith("metrics.") and score_key not in _QA_METRICS:
        raise _fail(where, f"a qa task records metrics em and f1; got score_key {score_key!r}")
    return score_key


_QA_METRICS = ("metrics.em", "metrics.f1")


def _thinking(cfg: Mapping[str, Any], where: str) -> tuple[str, str] | Literal["none"] | None:
    """The inline-thought delimiters the config sets: a pair, ``"none"``, or ``None`` (unset)."""
    if cfg.get("thinking") is None:
        return None
    from ..grading import check_thinking

    try:
        pair = check_thinking(cfg["thinking"], where="thinking")
    except UsageError as exc:
        raise _fail(where, str(exc)) from None
    return pair if pair is not None else "none"


def resolve_path(path: Any, base_dir: str | Path | None, where: str) -> Path:
    """The data file a config names, relative paths taken from ``base_dir`` (default: cwd)."""
    if not isinstance(path, (str, Path)) or not str(path):
        raise _fail(where, f"path must name a data file, got {path!r}")
    p = Path(path).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    return p
