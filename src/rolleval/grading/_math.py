"""The math grader: free-form answers judged by math-verify.

math-verify is imported lazily, inside the grader, so ``import rolleval.grading`` works
without it; :meth:`MathGrader.check_available` says how to install it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from importlib import metadata
from typing import Any, ClassVar

from ..errors import MissingDependencyError, UsageError
from ._extract import EXTRACTORS
from ._protocol import (
    BadReferenceError,
    Grader,
    Judgement,
    check_rollouts,
    check_spec_keys,
    describe_exception,
    failed_all,
    reference_aliases,
)

__all__ = ["MATH_EXTRACTORS", "MathGrader"]

#: Extractor names accepted by the math grader, in their default order.
MATH_EXTRACTORS: tuple[str, ...] = tuple(EXTRACTORS)

#: Bump when a change of this module can change a judgement.
_LOGIC_VERSION = "1"
#: math-verify's own per-operation timeouts (whole seconds: it uses ``signal.alarm``).
_PARSE_TIMEOUT_S = 5
_VERIFY_TIMEOUT_S = 5
_INSTALL_HINT = "run: pip install 'rolleval[math]'"

#: Calls made to math-verify in this process, by kind (``parse_gold``, ``parse``,
#: ``verify``). For tests and profiling; never reset by rolleval itself.
CALLS: Counter[str] = Counter()


def _math_verify_version() -> str | None:
    try:
        return metadata.version("math-verify")
    except metadata.PackageNotFoundError:
        return None


class _Failure(Exception):
    """A math-verify step failed or timed out; ``str(self)`` is the grader_error."""


class _MathVerify:
    """The few math-verify calls the grader makes, with timeouts surfaced as failures.

    Both ``parse`` and ``verify`` run with ``raise_on_error=True`` so that a timeout is
    reported (math-verify would otherwise return ``[]`` / ``False``, a silent wrong
    answer). Inside ``verify`` a comparison error that is not a timeout means "not
    equivalent", as in math-verify's own default.
    """

    def __init__(self) -> None:
        try:
            import math_verify
            from math_verify.errors import TimeoutException
        except ImportError as exc:
            raise MissingDependencyError(
                f"the math grader needs math-verify, which cannot be imported ({exc}); {_INSTALL_HINT}"
            ) from exc
        self._parse = math_verify.parse
        self._verify = math_verify.verify
        self._timeout = TimeoutException

    def parse(self, latex: str, *, kind: str) -> list[Any]:
        CALLS[kind] += 1
        try:
            return list(self._parse(latex, parsing_timeout=_PARSE_TIMEOUT_S, raise_on_error=True))
        except self._timeout:
            raise _Failure(f"math-verify parse timed out after {_PARSE_TIMEOUT_S}s") from None
        except Exception as exc:
            raise _Failure(f"math-verify parse failed: {describe_exception(exc)}") from exc

    def equivalent(self, gold: list[Any], target: list[Any]) -> bool:
        """``verify(gold, target)`` over every pair of parsed forms; gold first."""
        for g in gold:
            for t in target:
                CALLS["verify"] += 1
                try:
                    if self._verify(g, t, timeout_seconds=_VERIFY_TIMEOUT_S, raise_on_error=True):
                        return True
                except self._timeout:
                    raise _Failure(
                        f"math-verify verify timed out after {_VERIFY_TIMEOUT_S}s"
                    ) from None
                except Exception:
                    continue  # math-verify's rule: a comparison that errors is not a match
        return False


def _as_latex(answer: str) -> str:
    """What math-verify parses for an answer string: a full text as is when it already
    carries ``$`` or ``\\boxed``, otherwise the answer wrapped in ``\\boxed{}`` (so the whole
    string is one answer, as it would be in a solution). An escaped dollar ``\\$`` is a
    currency sign, and ``\\!`` a negative thin space: both are dropped first, so a gold such
    as ``\\$32,\\!348`` reads as 32348 rather than as math delimiters."""
    answer = answer.replace("\\$", "").replace("\\!", "")
    if "$" in answer or "\\boxed" in answer or "\\fbox" in answer:
        return answer
    return "\\boxed{" + answer + "}"


class MathGrader(Grader):
    """Free-form math answers: extraction by rules, equivalence by math-verify.

    Extraction
        The extractors named in ``extractors`` (see :mod:`rolleval.grading._extract`:
        ``boxed``, ``answer_line``, ``gsm8k``, ``last_number``) are tried in the declared
        order; the first answer found is the rollout's ``extracted``.

    Correctness
        The gold (each alias) and each distinct extracted string are parsed with
        ``math_verify.parse`` (an answer without ``$`` or ``\\boxed`` is wrapped in
        ``\\boxed{}`` first); a rollout is correct when ``verify(gold, prediction)`` (gold
        first) holds for any alias. An answer math-verify cannot parse is extracted but
        wrong. A gold alias that parses to nothing, or a reference that is missing, gives
        every rollout a ``grader_error``: a harness problem, not a model failure.

    Clusters (maj@n)
        Rollouts are visited by ascending index. Each distinct extracted string is parsed
        once; identical strings share a cluster; a new string is compared, with
        ``verify(representative, new)``, against the representative (lowest-index member)
        of each existing cluster in order of creation and joins the first match, else
        founds a cluster labelled by its own index. So ``\\frac{1}{2}``, ``0.5`` and
        ``1/2`` share one cluster, and n rollouts cost one parse per distinct string and at
        most one comparison per (distinct string, cluster). ``verify`` is neither symmetric
        nor transitive in general; comparing with representatives makes the result depend
        only on the rollouts' indices, not on the order they were given in.

    Timeouts and errors
        math-verify's own timeouts (``parsing_timeout`` / ``timeout_seconds``, 5 s per
        operation) apply; they use ``signal.alarm``, so :meth:`grade_problem` must run in
        the main thread of a process and raises :class:`~rolleval.errors.UsageError` at
        once in any other thread (math-verify without its timeouts would not be bounded in
        time). :func:`~rolleval.grading.grade_problems` and
        :class:`~rolleval.grading.GradingPool` grade from any thread: in worker processes,
        which run the grader in their main thread, also when asked for ``workers=0`` off the
        main thread. A timeout or crash while judging an answer gives the rollouts holding
        that answer a ``grader_error``; the other rollouts are still graded.
    """

    id: ClassVar[str] = "math"
    needs_process: ClassVar[bool] = True
    needs_main_thread: ClassVar[bool] = True

    def __init__(self, extractors: Sequence[str] = MATH_EXTRACTORS) -> None:
        if isinstance(extractors, str) or not isinstance(extractors, Sequence):
            raise UsageError(
                f"math grader option 'extractors' must be a list of names from "
                f"{', '.join(MATH_EXTRACTORS)}; got {extractors!r}"
            )
        names = list(extractors)
        if not names:
            raise UsageError(
                f"math grader option 'extractors' must name at least one of {', '.join(MATH_EXTRACTORS)}"
            )
        for name in names:
            if name not in EXTRACTORS:
                raise UsageError(
                    f"math grader option 'extractors': unknown extractor {name!r}; "
                    f"allowed: {', '.join(MATH_EXTRACTORS)}"
                )
        if len(set(names)) != len(names):
            raise UsageError(f"math grader option 'extractors' names an extractor twice: {names}")
        self.extractors: tuple[str, ...] = tuple(names)
        self.spec = {"type": self.id, "extractors": list(self.extractors)}
        self.version = f"{_LOGIC_VERSION}+math-verify-{_math_verify_version() or 'missing'}"
        self._mv: _MathVerify | None = None

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> MathGrader:
        """Build from ``{"type": "math", "extractors": [...]}`` (``extractors`` optional)."""
        check_spec_keys(spec, ("extractors",))
        return cls(spec.get("extractors", MATH_EXTRACTORS))

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_mv"] = None  # module handles are re-imported in the worker
        return state

    def check_available(self) -> None:
        """Raise :class:`~rolleval.errors.MissingDependencyError` if math-verify is missing."""
        self._math_verify()

    def warm_up(self) -> None:
        """Import math-verify and its parsers (a few hundred ms), before the first deadline."""
        mv = self._math_verify()
        mv.parse("\\boxed{\\frac{1}{2}}", kind="warm_up")

    def _math_verify(self) -> _MathVerify:
        if self._mv is None:
            self._mv = _MathVerify()
        return self._mv

    def extract(self, text: str) -> str | None:
        """The first answer found by the declared extractors, in order; ``None`` if none."""
        for name in self.extractors:
            answer = EXTRACTORS[name](text)
            if answer is not None:
                return answer
        return None

    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout of one problem (rules in the class docstring)."""
        ordered = check_rollouts(rollouts)
        if not ordered:
            return {}
        if threading.current_thread() is not threading.main_thread():
            raise UsageError(
                "MathGrader.grade_problem must run in the main thread (math-verify times out "
                "with signal.alarm); from another thread use grade_problems() or a GradingPool, "
                "which grade in worker processes"
            )
        mv = self._math_verify()
        try:
            golds = [self._parse_gold(mv, alias) for alias in reference_aliases(reference)]
        except (BadReferenceError, _Failure) as exc:
            return failed_all(ordered, f"reference unusable: {exc}", self.extract)

        judgements: dict[int, Judgement] = {}
        judged: dict[str, tuple[int, bool] | str] = {}  # answer -> (cluster, correct) | error
        representatives: list[tuple[int, list[Any]]] = []
        for index, text in ordered:
            try:
                answer = self.extract(text)
            except Exception as exc:
                judgements[index] = Judgement.failed(
                    f"extraction failed: {describe_exception(exc)}"
                )
                continue
            if answer is None:
                judgements[index] = Judgement(extracted=None, correct=False, cluster=None)
                continue
            if answer not in judged:
                judged[answer] = self._judge(mv, answer, index, golds, representatives)
            outcome = judged[answer]
            if isinstance(outcome, str):
                judgements[index] = Judgement.failed(outcome, extracted=answer)
            else:
                judgements[index] = Judgement(
                    extracted=answer, correct=outcome[1], cluster=outcome[0]
                )
        return judgements

    @staticmethod
    def _parse_gold(mv: _MathVerify, alias: str) -> list[Any]:
        if not alias.strip():
            raise BadReferenceError("a gold alias is empty")
        parsed = mv.parse(_as_latex(alias), kind="parse_gold")
        if not parsed:
            raise BadReferenceError(f"math-verify cannot parse the gold answer {alias!r}")
        return parsed

    @staticmethod
    def _judge(
        mv: _MathVerify,
        answer: str,
        index: int,
        golds: list[list[Any]],
        representatives: list[tuple[int, list[Any]]],
    ) -> tuple[int, bool] | str:
        """(cluster, correct) for a new distinct answer first seen at ``index``, or an error."""
        try:
            parsed = mv.parse(_as_latex(answer), kind="parse")
            if not parsed:  # unparseable: wrong, and alone with its identical copies
                return index, False
            correct = any(mv.equivalent(gold, parsed) for gold in golds)
            for label, representative in representatives:
                if mv.equivalent(representative, parsed):
                    return label, correct
            representatives.append((index, parsed))
            return index, correct
        except _Failure as exc:
            return str(exc)
        except Exception as exc:
            return f"grading failed: {describe_exception(exc)}"
