"""Log-likelihood choice (``type: loglik``): the option the model finds most likely.

The rollout of a log-likelihood problem holds no generated text to parse: it holds every
option's score (:class:`~rolleval.records.OptionScore`: the summed log-probability of the
option's continuation given its context, its token and character counts). The grader
receives them as a JSON list (:meth:`~rolleval.records.RolloutRecord.grader_input`) and
the gold option's text as the reference.

Judgement
    ``correct`` (acc): the option with the highest summed log-prob is a gold option.
    ``metrics``:

    * ``acc_norm``: 1 or 0, the same choice after dividing each log-prob by the option's
      continuation length in characters, its leading space included (``normalisation:
      chars``; lm-evaluation-harness's ``acc_norm`` counts the choice without the space)
      or in tokens (``normalisation: tokens``);
    * ``logprob_margin``: the gold option's summed log-prob minus the best distractor's,
      in nats (positive when the model prefers the gold option). A continuous score:
      ``compare --metric metrics.logprob_margin`` compares it problem by problem.

    ``extracted`` is the chosen option's text; answers cluster by chosen option.
    Ties are broken towards the earlier option (lm-evaluation-harness's ``argmax``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import orjson

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

__all__ = ["NORMALISATIONS", "LoglikGrader", "score_options"]

#: What ``acc_norm`` divides each option's log-prob by.
NORMALISATIONS: tuple[str, ...] = ("chars", "tokens")
_LOGIC_VERSION = "1"


def _argmax(values: Sequence[float]) -> int:
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def score_options(
    options: Sequence[dict[str, Any]], gold_text: str, normalisation: str = "chars"
) -> tuple[int, int, bool, bool, float]:
    """``(choice, choice_norm, acc, acc_norm, margin)`` of one problem's option scores.

    ``options`` are :class:`~rolleval.records.OptionScore` dicts in option order; the gold
    options are those whose ``text`` equals ``gold_text``. Raises
    :class:`~rolleval.grading._protocol.BadReferenceError` when no option (or every option) is
    gold, ``ValueError`` for unusable scores.
    """
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}")
    if len(options) < 2:
        raise ValueError(
            f"a log-likelihood problem needs at least 2 option scores, got {len(options)}"
        )
    logprobs = []
    lengths = []
    for i, o in enumerate(options):
        lp = o.get("logprob")
        n = o.get("chars" if normalisation == "chars" else "tokens")
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not math.isfinite(lp):
            raise ValueError(f"option {i} has log-prob {lp!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"option {i} has length {n!r} in {normalisation}")
        logprobs.append(float(lp))
        lengths.append(n)
    gold = {i for i, o in enumerate(options) if o.get("text") == gold_text}
    if not gold:
        raise BadReferenceError(f"the reference {gold_text!r} is none of the options")
    if len(gold) == len(options):
        raise BadReferenceError("every option equals the reference: nothing to choose between")
    choice = _argmax(logprobs)
    choice_norm = _argmax([lp / n for lp, n in zip(logprobs, lengths, strict=True)])
    best_gold = max(logprobs[i] for i in gold)
    best_other = max(lp for i, lp in enumerate(logprobs) if i not in gold)
    return choice, choice_norm, choice in gold, choice_norm in gold, best_gold - best_other


class LoglikGrader(Grader):
    """Judges log-likelihood choice rollouts (rules in the module docstring)."""

    id: ClassVar[str] = "loglik"

    def __init__(self, normalisation: str = "chars") -> None:
        if normalisation not in NORMALISATIONS:
            raise UsageError(
                f"loglik grader option 'normalisation' must be one of "
                f"{', '.join(NORMALISATIONS)}; got {normalisation!r}"
            )
        self.normalisation = normalisation
        self.spec = {"type": self.id, "normalisation": normalisation}
        self.version = _LOGIC_VERSION

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LoglikGrader:
        """Build from ``{"type": "loglik", "normalisation": "chars" | "tokens"}``."""
        check_spec_keys(spec, ("normalisation",))
        return cls(spec.get("normalisation", "chars"))

    @staticmethod
    def _options(text: str) -> list[dict[str, Any]]:
        options = orjson.loads(text)
        if not isinstance(options, list) or not all(isinstance(o, dict) for o in options):
            raise ValueError("the rollout holds no list of option scores")
        return options

    def extract(self, text: str) -> str | None:
        """The text of the option with the highest log-prob (``None`` if unreadable)."""
        try:
            options = self._options(text)
            return str(options[_argmax([float(o["logprob"]) for o in options])]["text"]) or None
        except (ValueError, KeyError, TypeError, IndexError):
            return None

    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout of one problem (rules in the module docstring)."""
        ordered = check_rollouts(rollouts)
        if not isinstance(reference, str):
            return failed_all(ordered, "reference unusable: the gold option must be one string")
        judgements: dict[int, Judgement] = {}
        labels: dict[int, int] = {}
        for index, text in ordered:
            try:
                options = self._options(text)
                choice, _norm, acc, acc_norm, margin = score_options(
                    options, reference, self.normalisation
                )
            except (BadReferenceError, ValueError, TypeError) as exc:
                judgements[index] = Judgement.failed(describe_exception(exc))
                continue
            extracted = str(options[choice]["text"]) or None
            cluster = labels.setdefault(choice, index) if extracted is not None else None
            judgements[index] = Judgement(
                extracted=extracted,
                correct=acc,
                cluster=cluster,
                metrics={"acc_norm": float(acc_norm), "logprob_margin": margin},
            )
        return judgements
