"""Token-level drift between two models: KL divergence, top-1 agreement and delta NLL.

Both models score the same texts token by token (teacher forcing: an echoed
``/v1/completions`` request per text and side); per token:

* ``KL(P_baseline || P_candidate)`` in nats: exact where both sides send full-vocabulary
  log-probs (a ``.gguf`` rolleval serves), else from the top-K lists with the capped tail
  (a lower bound; docs/contract.md, "Drift");
* top-1 agreement: both sides' most likely tokens are the same token;
* delta NLL: candidate minus baseline negative log-likelihood of the actual token
  (positive = candidate worse).

Per-text means, then the mean over texts with a percentile bootstrap interval and a
verdict against a threshold on the mean KL divergence (exit 1 above, 0 within, 3
undecided).

=============================  ==============================================
:func:`measure_drift`          the measurement (``rolleval drift``)
:func:`load_texts`             ``(id, text)`` pairs of a JSONL file
:func:`task_prompts`           a task's prompts (continued by the baseline: sampled)
:func:`task_texts`             a task's prompts, each followed by its reference
:class:`SampledContinuation`   seed and sampling of the baseline's continuations
:class:`DriftSide`             an endpoint URL or a ``.gguf`` path
:class:`DriftOptions`          K, threshold, interval settings
:class:`DriftResult`           the outcome (``to_dict()``: ``drift.json``)
:func:`kl_divergence`          exact KL from full log-prob rows
:func:`kl_merged_tail`         KL of known tokens plus one merged tail
:func:`kl_capped_tail`         the tighter bound: one-sided tokens capped
:func:`kl_from_top`            the same over two ``{token: log-prob}`` maps
:func:`top1_agreement`         the two argmax tokens are equal
:func:`delta_nll`              candidate minus baseline NLL of a token
=============================  ==============================================
"""

from __future__ import annotations

from .._public import publish
from ._math import (
    TAIL_FLOOR,
    argmax_key,
    delta_nll,
    kl_capped_tail,
    kl_divergence,
    kl_from_top,
    kl_merged_tail,
    top1_agreement,
)
from ._measure import (
    DEFAULT_THRESHOLD,
    DEFAULT_TOP_LOGPROBS,
    TAIL_RULE,
    DriftOptions,
    DriftSide,
    SampledContinuation,
    measure_drift,
)
from ._result import (
    DRIFT_VERDICTS,
    DriftMethod,
    DriftPlanning,
    DriftResult,
    DriftVerdict,
    Estimate,
    TextDrift,
    TokenLevel,
    WorstToken,
    summarize,
)
from ._scores import SideScores, parse_side
from ._texts import load_texts, task_prompts, task_texts
from ._tokens import TextFigures, TokenizerMismatch, compare_text

__all__ = [
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOP_LOGPROBS",
    "DRIFT_VERDICTS",
    "TAIL_FLOOR",
    "TAIL_RULE",
    "DriftMethod",
    "DriftOptions",
    "DriftPlanning",
    "DriftResult",
    "DriftSide",
    "DriftVerdict",
    "Estimate",
    "SampledContinuation",
    "SideScores",
    "TextDrift",
    "TextFigures",
    "TokenLevel",
    "TokenizerMismatch",
    "WorstToken",
    "argmax_key",
    "compare_text",
    "delta_nll",
    "kl_capped_tail",
    "kl_divergence",
    "kl_from_top",
    "kl_merged_tail",
    "load_texts",
    "measure_drift",
    "parse_side",
    "summarize",
    "task_prompts",
    "task_texts",
    "top1_agreement",
]

publish(__name__, globals(), __all__)
