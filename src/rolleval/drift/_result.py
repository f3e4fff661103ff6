"""Frozen result types of a drift measurement and the pure summary over texts.

The unit of analysis is the text: each text's per-token figures are averaged first (its
mean KL divergence, top-1 agreement and delta NLL), then the texts' means are averaged,
with a percentile bootstrap interval over texts (:func:`rolleval.stats.bootstrap_ci`;
tokens of one text are not independent). The token-level figures llama.cpp prints (mean
over all tokens, KLD percentiles, "same top" fraction) are reported beside them.

Verdict on the mean KL divergence against ``threshold`` (nats), from the interval at
``confidence_level``:

=========================  ====  ==================================================
``above_threshold``        1     the interval's low end is above the threshold
``within_threshold``       0     the interval's high end is at or below the threshold
``inconclusive``           3     the interval contains the threshold
``insufficient_evidence``  3     fewer than 2 texts with a scored token
=========================  ====  ==================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from ..stats import bootstrap_ci
from ._tokens import TextFigures

__all__ = [
    "DRIFT_VERDICTS",
    "DriftMethod",
    "DriftPlanning",
    "DriftResult",
    "DriftVerdict",
    "Estimate",
    "TextDrift",
    "TokenLevel",
    "WorstToken",
    "summarize",
]

DriftVerdict = Literal[
    "above_threshold", "within_threshold", "inconclusive", "insufficient_evidence"
]

#: Verdict word -> exit code.
DRIFT_VERDICTS: dict[str, int] = {
    "above_threshold": 1,
    "within_threshold": 0,
    "inconclusive": 3,
    "insufficient_evidence": 3,
}

#: Percentiles of the per-token KL divergence reported (as llama.cpp's tool prints them).
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
)
WORST_SHOWN = 10
_CONTEXT_CHARS = 60


@dataclass(frozen=True)
class Estimate:
    """A mean over texts with its percentile bootstrap interval."""

    value: float | None
    low: float | None
    high: float | None
    status: str
    """``ok``, ``degenerate`` (zero-width interval: one text, or every text equal) or
    ``unavailable`` (no text)."""
    reason: str | None = None


@dataclass(frozen=True)
class TextDrift:
    """One text's figures: means over its scored tokens."""

    id: str
    n_tokens: int
    mean_kld: float | None
    top1_agreement: float | None
    n_top1_agree: int
    delta_nll: float | None
    max_kld: float | None
    exact: bool


@dataclass(frozen=True)
class TokenLevel:
    """Figures over all scored tokens pooled (llama.cpp's convention; i.i.d. over tokens)."""

    n_tokens: int
    mean_kld: float | None
    kld_percentiles: dict[str, float | None]
    max_kld: float | None
    n_top1_agree: int
    top1_agreement: float | None
    delta_nll: float | None
    ppl_ratio: float | None
    """``exp(mean delta NLL)``: PPL(candidate) / PPL(baseline) over the pooled tokens."""
    n_exact: int
    """Tokens whose KL divergence is exact (both sides' full distributions)."""
    baseline_tail_mean: float | None
    """Mean baseline probability outside the tokens the KL was computed on (0 when exact)."""


@dataclass(frozen=True)
class WorstToken:
    """A token with one of the largest KL divergences, in context."""

    text_id: str
    position: int
    token: str
    context: str
    """Up to 60 characters of the text before the token."""
    kld: float
    delta_nll: float
    top1_agree: bool
    baseline_top: tuple[tuple[str, float], ...]
    candidate_top: tuple[tuple[str, float], ...]
    """Each side's most likely tokens as ``(text, log-prob)``."""


@dataclass(frozen=True)
class DriftMethod:
    """How the figures were computed."""

    top_logprobs: int
    baseline_scoring: str
    candidate_scoring: str
    """``full vocabulary`` (exact) or ``top-K`` (the server's top-K list)."""
    keyed_by: str
    """``id`` or ``text``: how alternatives were matched across the sides."""
    tail_rule: str
    interval: str
    confidence_level: float
    n_resamples: int
    seed: int
    threshold: float
    unit: str = "text"
    continuation: dict[str, Any] = field(default_factory=lambda: {"kind": "none"})
    """How each text came to be: ``none`` (scored as given), ``reference`` (a task's prompt and
    reference answer) or ``sampled`` (a task's prompt and one continuation by the baseline:
    ``seed``, ``seed_rule`` and the sampling fields ``sent``)."""
    power: float = 0.8
    """Power of :attr:`DriftResult.planning`'s ``texts_needed``."""


@dataclass(frozen=True)
class DriftPlanning:
    """Texts needed to decide, at the observed spread of the per-text mean KL divergences.

    With ``m`` and ``s`` the mean and standard deviation (``ddof=1``) of the per-text means
    over ``n`` texts, and the verdict's interval approximated by ``m +- z_{alpha/2} s /
    sqrt(n)`` (``alpha = 1 - confidence_level``): if the true mean is ``m``, the interval
    clears the threshold ``threshold`` on ``m``'s side with probability ``power`` from
    ``texts_needed = ceil(((z_{alpha/2} + z_power) s / |m - threshold|)^2)`` texts (at least 2).
    A normal approximation (the bootstrap interval is narrower at small n), planning only.
    """

    texts_needed: int | None
    side: str | None
    """``above_threshold`` or ``within_threshold``: the verdict planned for."""
    power: float
    reason: str | None = None


@dataclass(frozen=True)
class DriftResult:
    """The outcome of :func:`rolleval.drift.measure_drift`."""

    mean_kld: Estimate
    top1_agreement: Estimate
    delta_nll: Estimate
    n_tokens: int
    n_texts: int
    verdict: DriftVerdict
    exit_code: int
    reason: str
    token_level: TokenLevel
    method: DriftMethod
    texts: tuple[TextDrift, ...]
    worst_tokens: tuple[WorstToken, ...]
    baseline: dict[str, Any] = field(default_factory=dict)
    candidate: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    kld_histogram: dict[str, list[float]] = field(default_factory=dict)
    """Per-token KL divergence histogram: ``edges`` (nats, log-spaced) and ``counts``."""
    planning: DriftPlanning | None = None
    continuations: tuple[dict[str, Any], ...] = ()
    """Per text, the baseline's sampled continuation (``--continuation sampled``): ``id``,
    ``seed``, ``text``, ``finish_reason``, ``completion_tokens``."""
    tokens: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)
    """Per text, every scored token's figures (``tokens.jsonl``; not in :meth:`to_dict`):
    ``id``, ``tokens`` (texts of the whole sequence), ``positions``, ``kld``, ``top1_agree``,
    ``delta_nll``, ``baseline_tail``."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``drift.json``): the headline numbers at the top level."""
        data = asdict(self)
        out: dict[str, Any] = {
            "mean_kld": self.mean_kld.value,
            "top1_agreement": self.top1_agreement.value,
            "delta_nll": self.delta_nll.value,
            "n_tokens": self.n_tokens,
            "n_texts": self.n_texts,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "threshold": self.method.threshold,
            "intervals": {
                "mean_kld": data["mean_kld"],
                "top1_agreement": data["top1_agreement"],
                "delta_nll": data["delta_nll"],
            },
        }
        for key in (
            "token_level",
            "method",
            "planning",
            "baseline",
            "candidate",
            "kld_histogram",
        ):
            out[key] = data[key]
        out["warnings"] = list(self.warnings)
        out["worst_tokens"] = data["worst_tokens"]
        out["texts"] = data["texts"]
        out["continuations"] = data["continuations"]
        return out


def _mean(x: np.ndarray) -> float | None:
    return float(np.mean(x)) if x.size else None


def _estimate(values: np.ndarray, options: Any) -> Estimate:
    res = bootstrap_ci(
        values,
        n_resamples=options.n_resamples,
        confidence_level=options.confidence_level,
        rng=options.seed,
    )
    return Estimate(res.statistic, res.low, res.high, res.status, res.reason)


def _text_drift(text_id: str, f: TextFigures) -> TextDrift:
    n = int(f.kld.size)
    return TextDrift(
        id=text_id,
        n_tokens=n,
        mean_kld=_mean(f.kld),
        top1_agreement=_mean(f.agree.astype(np.float64)),
        n_top1_agree=int(f.agree.sum()),
        delta_nll=_mean(f.delta_nll),
        max_kld=float(f.kld.max()) if n else None,
        exact=f.exact,
    )


def _token_level(figures: Sequence[TextFigures]) -> TokenLevel:
    kld = np.concatenate([f.kld for f in figures]) if figures else np.zeros(0)
    agree = np.concatenate([f.agree for f in figures]) if figures else np.zeros(0, bool)
    dnll = np.concatenate([f.delta_nll for f in figures]) if figures else np.zeros(0)
    tail = np.concatenate([f.baseline_tail for f in figures]) if figures else np.zeros(0)
    n = int(kld.size)
    pct = {name: (float(np.percentile(kld, q)) if n else None) for name, q in PERCENTILES}
    mean_dnll = _mean(dnll)
    return TokenLevel(
        n_tokens=n,
        mean_kld=_mean(kld),
        kld_percentiles=pct,
        max_kld=float(kld.max()) if n else None,
        n_top1_agree=int(agree.sum()),
        top1_agreement=(int(agree.sum()) / n) if n else None,
        delta_nll=mean_dnll,
        ppl_ratio=float(np.exp(mean_dnll)) if mean_dnll is not None else None,
        n_exact=sum(int(f.kld.size) for f in figures if f.exact),
        baseline_tail_mean=_mean(tail),
    )


def _worst(ids: Sequence[str], figures: Sequence[TextFigures]) -> tuple[WorstToken, ...]:
    flat = [(float(k), t, j) for t, f in enumerate(figures) for j, k in enumerate(f.kld)]
    flat.sort(key=lambda x: -x[0])
    out = []
    for kld, t, j in flat[:WORST_SHOWN]:
        f = figures[t]
        pos = int(f.positions[j])
        out.append(
            WorstToken(
                text_id=ids[t],
                position=pos,
                token=f.tokens[pos],
                context="".join(f.tokens[:pos])[-_CONTEXT_CHARS:],
                kld=kld,
                delta_nll=float(f.delta_nll[j]),
                top1_agree=bool(f.agree[j]),
                baseline_top=f.baseline_alternatives[j],
                candidate_top=f.candidate_alternatives[j],
            )
        )
    return tuple(out)


def _histogram(figures: Sequence[TextFigures]) -> dict[str, list[float]]:
    kld = np.concatenate([f.kld for f in figures]) if figures else np.zeros(0)
    edges = np.concatenate([[0.0], np.logspace(-5, 2, 8)])
    counts, _ = np.histogram(np.clip(kld, 0.0, edges[-1]), bins=edges)
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def _verdict(
    kld: Estimate, n_texts: int, threshold: float, level: float
) -> tuple[DriftVerdict, str]:
    pct = f"{100 * level:g}%"
    if n_texts < 2 or kld.low is None or kld.high is None:
        return "insufficient_evidence", f"{n_texts} text(s) with a scored token; 2 or more needed"
    if kld.low > threshold:
        return "above_threshold", (
            f"the {pct} interval of the mean KL divergence [{kld.low:.4g}, {kld.high:.4g}] "
            f"lies above the threshold {threshold:g}"
        )
    if kld.high <= threshold:
        return "within_threshold", (
            f"the {pct} interval of the mean KL divergence [{kld.low:.4g}, {kld.high:.4g}] "
            f"lies at or below the threshold {threshold:g}"
        )
    return "inconclusive", (
        f"the {pct} interval of the mean KL divergence [{kld.low:.4g}, {kld.high:.4g}] "
        f"contains the threshold {threshold:g}; more texts narrow it"
    )


def plan_texts(means: np.ndarray, threshold: float, level: float, power: float) -> DriftPlanning:
    """:class:`DriftPlanning` from the per-text mean KL divergences (pure)."""
    from scipy.stats import norm

    n = int(means.size)
    if n < 2:
        return DriftPlanning(None, None, power, f"{n} text(s): 2 or more needed to plan")
    m, s = float(np.mean(means)), float(np.std(means, ddof=1))
    if m == threshold:
        return DriftPlanning(None, None, power, "the mean equals the threshold: no size decides")
    side = "above_threshold" if m > threshold else "within_threshold"
    if s == 0:
        return DriftPlanning(2, side, power, "every text has the same mean: no spread")
    z = float(norm.ppf(1 - (1 - level) / 2) + norm.ppf(power))
    needed = max(2, math.ceil((z * s / abs(m - threshold)) ** 2 * (1 - 1e-12)))
    return DriftPlanning(needed, side, power)


def summarize(
    ids: Sequence[str],
    figures: Sequence[TextFigures],
    method: DriftMethod,
    *,
    baseline: dict[str, Any] | None = None,
    candidate: dict[str, Any] | None = None,
    warnings: Sequence[str] = (),
    continuations: Sequence[dict[str, Any]] = (),
) -> DriftResult:
    """The result over texts from each text's per-token figures (pure; texts with no
    scored token are listed but carry no weight)."""
    texts = tuple(_text_drift(i, f) for i, f in zip(ids, figures, strict=True))
    scored = [t for t in texts if t.n_tokens]
    kld = _estimate(np.array([t.mean_kld for t in scored], dtype=np.float64), method)
    agree = _estimate(np.array([t.top1_agreement for t in scored], dtype=np.float64), method)
    dnll = _estimate(np.array([t.delta_nll for t in scored], dtype=np.float64), method)
    means = np.array([t.mean_kld for t in scored], dtype=np.float64)
    verdict, reason = _verdict(kld, len(scored), method.threshold, method.confidence_level)
    return DriftResult(
        mean_kld=kld,
        top1_agreement=agree,
        delta_nll=dnll,
        n_tokens=sum(t.n_tokens for t in texts),
        n_texts=len(scored),
        verdict=verdict,
        exit_code=DRIFT_VERDICTS[verdict],
        reason=reason,
        token_level=_token_level(figures),
        method=method,
        texts=texts,
        worst_tokens=_worst(ids, figures),
        baseline=dict(baseline or {}),
        candidate=dict(candidate or {}),
        warnings=tuple(warnings),
        kld_histogram=_histogram(figures),
        planning=plan_texts(means, method.threshold, method.confidence_level, method.power),
        continuations=tuple(dict(c) for c in continuations),
        tokens=tuple(_token_record(i, f) for i, f in zip(ids, figures, strict=True)),
    )


def _token_record(text_id: str, f: TextFigures) -> dict[str, Any]:
    return {
        "id": text_id,
        "tokens": list(f.tokens),
        "positions": [int(p) for p in f.positions],
        "kld": [float(x) for x in f.kld],
        "top1_agree": [bool(x) for x in f.agree],
        "delta_nll": [float(x) for x in f.delta_nll],
        "baseline_tail": [float(x) for x in f.baseline_tail],
        "exact": f.exact,
    }
