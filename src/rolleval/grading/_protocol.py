"""The grader protocol: :class:`Judgement`, :class:`Grader` and helpers shared by the graders.

A grader judges all gradable rollouts of *one* problem at once, because the maj@n answer
clusters are only defined across a problem's rollouts. Rules every
grader follows:

* every rollout it is given gets a :class:`Judgement` (never only the first);
* ``extracted`` is ``None`` when nothing was extracted (never ``""``); such a rollout is
  wrong (``correct = False``) and belongs to no cluster (``cluster = None``);
* ``cluster`` is the lowest rollout index of the answer's equivalence class, whatever the
  order the rollouts were given in;
* a grader failure (exception, timeout, unusable reference) sets ``grader_error`` with
  ``correct = None`` and ``cluster = None``: a harness failure, never a wrong answer. An
  exception while judging one rollout only marks that rollout.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ..errors import UsageError

__all__ = ["Grader", "Judgement", "grading_reference"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Judgement:
    """What a grader made of one rollout.

    Invariants (checked on construction, a violation is a grader bug and raises
    ``ValueError``):

    * ``extracted`` is ``None`` or a non-empty string;
    * ``correct`` is ``None`` exactly when ``grader_error`` is set;
    * ``cluster`` is ``None`` when ``extracted`` is ``None`` or ``grader_error`` is set, and
      a rollout index (``>= 0``) otherwise;
    * ``score``, when given, lies in [0, 1].
    """

    extracted: str | None
    """The answer found in the text; ``None`` = nothing extracted."""
    correct: bool | None
    """Pass/fail against the reference; ``None`` only when ``grader_error`` is set."""
    cluster: int | None
    """Lowest rollout index of this answer's equivalence class among the problem's rollouts."""
    score: float | None = None
    """Optional graded score in [0, 1]."""
    grader_error: str | None = None
    """Why grading failed (crash, timeout, unusable reference); a harness failure."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Named per-rollout metrics."""
    judge_raw: str | None = None
    """What the grader saw beyond the judgement (the code grader's execution summary, JSON;
    the judge's full reply)."""
    grader_usage: dict[str, int] | None = None
    """Tokens the grader spent on this rollout (``prompt_tokens``, ``completion_tokens``):
    an LLM judge's usage, kept apart from the candidate's."""

    def __post_init__(self) -> None:
        if self.extracted is not None and (
            not isinstance(self.extracted, str) or not self.extracted
        ):
            raise ValueError(
                f"Judgement.extracted must be None or a non-empty string, got {self.extracted!r}"
            )
        if self.grader_error is not None:
            if not self.grader_error:
                raise ValueError("Judgement.grader_error must be None or a non-empty string")
            if self.correct is not None or self.cluster is not None:
                raise ValueError("a Judgement with grader_error has correct=None and cluster=None")
            return
        if not isinstance(self.correct, bool):
            raise ValueError("Judgement.correct must be a bool unless grader_error is set")
        if self.extracted is None and self.cluster is not None:
            raise ValueError("Judgement.cluster must be None when nothing was extracted")
        if self.extracted is not None and (
            not isinstance(self.cluster, int) or isinstance(self.cluster, bool) or self.cluster < 0
        ):
            raise ValueError(
                f"Judgement.cluster must be a rollout index when an answer was extracted, got {self.cluster!r}"
            )
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"Judgement.score must lie in [0, 1], got {self.score!r}")

    @classmethod
    def failed(cls, message: str, *, extracted: str | None = None) -> Judgement:
        """A harness-failure judgement: ``grader_error=message``, ``correct`` and ``cluster`` ``None``."""
        return cls(extracted=extracted, correct=None, cluster=None, grader_error=message)


class Grader(ABC):
    """Judges the rollouts of one problem at a time.

    Subclasses set ``id`` (class attribute), ``version`` and ``spec`` and implement
    :meth:`extract` and :meth:`grade_problem`. ``spec`` is the JSON-serialisable dict that
    :func:`~rolleval.grading.make_grader` turns back into an equal grader, so reports can
    name (and rebuild) the grader that produced them; ``identity`` (``"<id>@<version>"``)
    goes into every judgement record.

    Instances must be picklable: :class:`~rolleval.grading.GradingPool` sends the grader to
    its worker processes once, when each worker starts.
    """

    id: ClassVar[str]
    #: Grader logic version, plus versions of the dependencies that decide judgements.
    version: str
    #: JSON-serialisable spec that rebuilt this grader (defaults filled in).
    spec: dict[str, Any]
    #: True when grading belongs in a process of its own (a time bound that needs the main
    #: thread, code execution, blocking HTTP); :func:`~rolleval.grading.grade_problems` then
    #: uses a process pool by default.
    needs_process: ClassVar[bool] = False
    #: True when :meth:`grade_problem` can only run in the main thread (math-verify's timeouts
    #: use ``signal.alarm``); a :class:`~rolleval.grading.GradingPool` asked to grade in the
    #: calling thread (``workers=0``) from another thread then grades in a worker process.
    needs_main_thread: ClassVar[bool] = False
    #: Seconds a process pool waits for one problem's judgements before recording grader
    #: errors (graders with their own per-execution deadlines raise it as a backstop).
    problem_timeout_s: ClassVar[float] = 30.0
    #: True when :meth:`grade_problem` wants the question too: its ``reference`` is then
    #: ``{"question": ..., "reference": ...}`` (:func:`grading_reference`).
    wants_question: ClassVar[bool] = False

    @property
    def identity(self) -> str:
        """``"<id>@<version>"``, as stored in ``JudgementRecord.grader``."""
        return f"{self.id}@{self.version}"

    def check_available(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Raise :class:`~rolleval.errors.MissingDependencyError` when a dependency is missing."""

    def warm_up(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Load what the first grading would load (imports, caches); called once per worker."""

    @abstractmethod
    def extract(self, text: str) -> str | None:
        """The answer found in ``text``, or ``None`` when there is none."""

    @abstractmethod
    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout of one problem.

        ``reference`` is the gold answer or a list of accepted aliases (correct if any
        matches); ``rollouts`` holds ``(rollout index, raw text)`` for every gradable
        rollout of the problem, in any order. Returns one :class:`Judgement` per index.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.spec == other.spec

    def __hash__(self) -> int:
        return hash((type(self), repr(sorted(self.spec.items()))))


# --------------------------------------------------------------------------- helpers


def grading_reference(grader: Grader, prompt: Any) -> Any:
    """What :meth:`Grader.grade_problem` gets as ``reference`` for a
    :class:`~rolleval.records.PromptRecord`: its reference, or with ``wants_question``
    ``{"question": <the last prompt message>, "reference": <the reference>}``."""
    if not grader.wants_question:
        return prompt.reference
    text = prompt.prompt
    if not isinstance(text, str):
        text = text[-1].content if text else ""
    return {"question": text, "reference": prompt.reference}


class BadReferenceError(ValueError):
    """The reference cannot be judged against (missing, empty, wrong type)."""


def check_rollouts(rollouts: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """Validate ``(index, text)`` pairs and return them sorted by index.

    Raises :class:`~rolleval.errors.UsageError` for a non-integer or negative index, a
    duplicated index or a text that is not a string: these are bugs of the caller, not
    grading failures.
    """
    checked: list[tuple[int, str]] = []
    seen: set[int] = set()
    for item in rollouts:
        try:
            index, text = item
        except (TypeError, ValueError):
            raise UsageError(f"rollouts must be (index, text) pairs, got {item!r}") from None
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise UsageError(f"rollout index must be an int >= 0, got {index!r}")
        if index in seen:
            raise UsageError(f"rollout index {index} appears twice among one problem's rollouts")
        if not isinstance(text, str):
            raise UsageError(
                f"rollout {index}: text must be a str (only status 'ok' rollouts are graded), "
                f"got {type(text).__name__}"
            )
        seen.add(index)
        checked.append((index, text))
    checked.sort(key=lambda pair: pair[0])
    return checked


def reference_aliases(reference: object) -> list[str]:
    """The gold aliases of ``reference`` (a string or a non-empty list of strings).

    Raises :class:`BadReferenceError` for ``None``, an empty list or non-string aliases.
    """
    if isinstance(reference, str):
        return [reference]
    if reference is None:
        raise BadReferenceError("the problem has no reference answer")
    if isinstance(reference, (list, tuple)):
        if not reference:
            raise BadReferenceError("the reference is an empty list of aliases")
        bad = [alias for alias in reference if not isinstance(alias, str)]
        if bad:
            raise BadReferenceError(f"reference aliases must be strings, got {bad[0]!r}")
        return list(reference)
    raise BadReferenceError(
        f"the reference must be a string or a list of strings, got {type(reference).__name__}"
    )


def describe_exception(exc: BaseException) -> str:
    """``"<Type>: <message>"`` on one line, for ``grader_error``."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def failed_all(
    rollouts: Iterable[tuple[int, str]],
    message: str,
    extract: Callable[[str], str | None] | None = None,
) -> dict[int, Judgement]:
    """The same harness-failure judgement for every rollout; with ``extract``, each judgement
    still records the answer found (when extraction itself does not fail)."""
    judgements = {}
    for index, text in rollouts:
        extracted = None
        if extract is not None:
            try:
                extracted = extract(text) or None
            except Exception:
                extracted = None
        judgements[index] = Judgement.failed(message, extracted=extracted)
    return judgements


def grade_by_key(
    rollouts: Sequence[tuple[int, str]],
    extract: Callable[[str], K | None],
    equivalent: Callable[[K, K], bool],
    is_correct: Callable[[K], bool],
    render: Callable[[K], str],
) -> dict[int, Judgement]:
    """Grade rollouts whose answers are cheap keys compared by ``equivalent``.

    Rollouts are visited by ascending index. A key equal (``==``) to one already seen
    joins its cluster; otherwise it is compared with the representative (lowest index
    member) of each existing cluster, oldest first, and joins the first equivalent one or
    founds a new cluster labelled by its own index. An exception while extracting or
    judging one rollout gives that rollout a ``grader_error`` and leaves the others alone.
    """
    judgements: dict[int, Judgement] = {}
    label_of: dict[K, int] = {}
    representatives: list[tuple[int, K]] = []
    for index, text in check_rollouts(rollouts):
        key: K | None = None
        try:
            key = extract(text)
            if key is None:
                judgements[index] = Judgement(extracted=None, correct=False, cluster=None)
                continue
            label = label_of.get(key)
            if label is None:
                label = next(
                    (rep_label for rep_label, rep in representatives if equivalent(rep, key)),
                    None,
                )
                if label is None:
                    label = index
                    representatives.append((index, key))
                label_of[key] = label
            judgements[index] = Judgement(
                extracted=render(key), correct=bool(is_correct(key)), cluster=label
            )
        except Exception as exc:  # one rollout's failure must not hide the others
            extracted = None
            if key is not None:
                try:
                    extracted = render(key) or None
                except Exception:
                    extracted = None
            judgements[index] = Judgement.failed(describe_exception(exc), extracted=extracted)
    return judgements


def check_spec_keys(spec: dict[str, Any], allowed: Sequence[str]) -> None:
    """Refuse keys of ``spec`` outside ``allowed`` (plus ``type``), naming both."""
    for key in spec:
        if key != "type" and key not in allowed:
            accepted = ", ".join(sorted([*allowed, "type"]))
            raise UsageError(
                f"grader spec key {key!r} is not accepted for type {spec.get('type')!r}; "
                f"accepted keys: {accepted}"
            )
