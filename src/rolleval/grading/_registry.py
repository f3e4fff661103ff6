"""Graders by name: :func:`make_grader` builds one from its JSON spec."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

from .._version import __version__
from ..errors import UsageError
from ._code import CodeGrader
from ._judge import JudgeGrader
from ._loglik import LoglikGrader
from ._math import MathGrader
from ._mcq import McqGrader
from ._protocol import Grader
from ._qa import QaGrader
from ._short import ShortAnswerGrader

__all__ = ["GRADER_TYPES", "grader_versions", "make_grader"]

_CLASSES: dict[str, Any] = {
    CodeGrader.id: CodeGrader,
    JudgeGrader.id: JudgeGrader,
    LoglikGrader.id: LoglikGrader,
    MathGrader.id: MathGrader,
    McqGrader.id: McqGrader,
    QaGrader.id: QaGrader,
    ShortAnswerGrader.id: ShortAnswerGrader,
}

#: The ``type`` values :func:`make_grader` accepts, sorted.
GRADER_TYPES: tuple[str, ...] = tuple(sorted(_CLASSES))

#: Distributions whose versions can change a judgement, reported by :func:`grader_versions`.
_DEPENDENCIES = ("math-verify", "latex2sympy2_extended", "sympy", "antlr4-python3-runtime")


def make_grader(spec: Mapping[str, Any]) -> Grader:
    """Build the grader a spec describes.

    ``spec`` is a JSON object with a ``type`` from :data:`GRADER_TYPES` and that type's
    options, all optional:

    * ``{"type": "math", "extractors": ["boxed", "answer_line", "gsm8k", "last_number"]}``
    * ``{"type": "mcq", "letters": "ABCD"}``
    * ``{"type": "short_answer", "numeric_tolerance": null, "first_line": true}``
    * ``{"type": "qa", "style": "squad"}`` (or ``"drop"``): exact match and token F1
    * ``{"type": "code", "timeout_s": 10.0, "memory_mb": 1024, "processes": 32}``
    * ``{"type": "loglik", "normalisation": "chars"}`` (or ``"tokens"``): log-likelihood choice
    * ``{"type": "judge", "endpoint": "http://127.0.0.1:8001/v1", "model": "judge-model",
      "prompt": ..., "temperature": 0.0, "max_tokens": 256}``: an LLM judge

    The grader's ``spec`` attribute holds the same spec with defaults filled in, so
    ``make_grader(g.spec) == g``. An unknown type, an unknown key or a bad option value
    raises :class:`~rolleval.errors.UsageError` naming the key and the accepted values.
    Dependencies are not checked here (call ``check_available()``).
    """
    if not isinstance(spec, Mapping):
        raise UsageError(f"a grader spec must be a JSON object with a 'type' key; got {spec!r}")
    kind = spec.get("type")
    if kind not in _CLASSES:
        what = "has no 'type' key" if "type" not in spec else f"has unknown type {kind!r}"
        raise UsageError(f"grader spec {what}; accepted types: {', '.join(GRADER_TYPES)}")
    grader: Grader = _CLASSES[kind].from_spec(dict(spec))
    return grader


def grader_versions() -> dict[str, str | None]:
    """Installed versions of rolleval and of the packages graders depend on (``None`` when
    not installed), for the provenance of a run."""
    versions: dict[str, str | None] = {"rolleval": __version__}
    for name in _DEPENDENCIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
