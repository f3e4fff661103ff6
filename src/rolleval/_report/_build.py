"""Task and run reports, recomputed from stored judgements with zero model calls.

:func:`task_report` turns a :class:`~rolleval.rundir._table.TaskTable` into a JSON-ready dict: every
metric of the sampled-answer family with its numerator, denominator, availability and
interval, and the health signals. The same inputs always give the same bytes (no clocks, no
paths, canonical order), so ``rolleval report`` reproduces a stored report exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import metrics as M
from .._version import __version__
from ..errors import DataError, UsageError
from ..rundir._store import JsonlColumns, RunDir, TaskFiles, atomic_write_json, collect_warnings
from ..rundir._table import STATUS_CODES, TaskTable, build_task_table, load_task_table
from ..stats import grouped_bootstrap_columns

__all__ = [
    "DEFAULT_TAUS",
    "DENOMINATOR_POLICIES",
    "HEALTH_DEFINITIONS",
    "REPORT_VERSION",
    "TIMEOUT_POLICIES",
    "InferenceSettings",
    "build_run_report",
    "degenerate_bound",
    "health_counts",
    "judged_mask",
    "per_problem_values",
    "pooled_rate",
    "report_ks",
    "task_report",
    "write_run_report",
]

REPORT_VERSION = 1
DENOMINATOR_POLICIES = ("judged", "requested")
#: ``failure``: a rollout that timed out counts as a failure in every metric (the estimand is
#: "passes within the time budget"); ``excluded``: it is left out like an infra error.
TIMEOUT_POLICIES = ("failure", "excluded")
DEFAULT_TAUS = M.DEFAULT_TAUS

#: The health quantities, one definition each, shared by ``report.json``, ``compare`` and
#: ``gate``: name -> (report key, definition). Every rate is pooled over the task (or over
#: the compared problems): the sum of the per-problem numerators over the sum of the
#: per-problem denominators (:func:`health_counts`, :func:`pooled_rate`). All are "lower is
#: better".
HEALTH_DEFINITIONS: dict[str, tuple[str, str]] = {
    "unextracted_rate": (
        "n_unextracted",
        "graded rollouts with no extracted answer / graded rollouts",
    ),
    "truncation_rate": ("n_truncated", "completed rollouts cut at max_tokens / completed rollouts"),
    "infra_error_rate": (
        "infra_errors",
        "rollouts lost to connection-level errors (refused, reset, 5xx) / requested rollouts",
    ),
    "timeout_rate": (
        "timeouts",
        "rollouts with no answer within the time budget / requested rollouts",
    ),
    "grader_error_rate": (
        "grader_errors",
        "completed rollouts whose grading failed / completed rollouts",
    ),
    "output_tokens": (
        "output_tokens_mean",
        "completion tokens / completed rollouts that reported token usage",
    ),
    # --- reasoning models (issue 19): N/A for a task none of whose rollouts holds a thought
    "truncated_in_thought_rate": (
        "n_truncated_in_thought",
        "completed rollouts cut at max_tokens inside their thought (no answer after it) / "
        "completed rollouts of a task with thoughts",
    ),
    "reasoning_tokens": (
        "reasoning_tokens_mean",
        "reasoning tokens / completed rollouts whose server counted them (a 0 beside a "
        "non-empty thought is not a count)",
    ),
    "thought_chars": (
        "thought_chars_mean",
        "characters of the thought (0 for a rollout with none) / completed rollouts of a "
        "task with thoughts",
    ),
    "answer_tokens": (
        "answer_tokens_mean",
        "completion tokens minus reasoning tokens / completed rollouts that reported both "
        "(reasoning tokens counted, at most the completion tokens)",
    ),
}

#: Health quantities that only exist for reasoning models: compare leaves them out when
#: neither side measured them.
THOUGHT_HEALTH = ("truncated_in_thought_rate", "reasoning_tokens", "thought_chars", "answer_tokens")

#: A task whose truncation rate passes this warns in its report.
TRUNCATION_WARNING_RATE = 0.05


@dataclass(frozen=True)
class InferenceSettings:
    """How intervals are computed; recorded in every report."""

    n_resamples: int = 10_000
    confidence_level: float = 0.95
    rng: int = 0
    """Seed of the bootstrap: an int, so that it is recorded (as ``seed``) and the same
    settings give the same bytes."""

    @classmethod
    def from_record(cls, data: Mapping[str, Any] | None) -> InferenceSettings:
        """From a task.json ``inference`` entry, where the seed is spelled ``seed``."""
        values = dict(data or {})
        if "seed" in values:
            values["rng"] = values.pop("seed")
        return cls(**values)

    def __post_init__(self) -> None:
        if not (0 < self.confidence_level < 1):
            raise UsageError(f"confidence_level must be in (0, 1), got {self.confidence_level}")
        if self.n_resamples < 1:
            raise UsageError(f"n_resamples must be >= 1, got {self.n_resamples}")


def _rate(count: int, of: int, *, what: str) -> dict[str, Any]:
    """A health count with its denominator; the rate is N/A when nothing could be counted."""
    out: dict[str, Any] = {"count": int(count), "of": int(of)}
    if of > 0:
        out["rate"] = count / of
    else:
        out["rate"] = None
        out["reason"] = f"no {what}"
    return out


def judged_mask(table: TaskTable, timeout_policy: str = "failure") -> np.ndarray:
    """The judged rollouts (``docs/contract.md``, "Notation and counts"): the gradable ones,
    plus timeouts (as failures) under ``timeout_policy="failure"``."""
    if timeout_policy not in TIMEOUT_POLICIES:
        raise UsageError(
            f"timeout_policy must be one of {', '.join(TIMEOUT_POLICIES)}, got {timeout_policy!r}"
        )
    if timeout_policy == "excluded":
        return table.r_gradable
    counted: np.ndarray = table.r_gradable | (table.r_status == STATUS_CODES["timeout"])
    return counted


def health_counts(table: TaskTable) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-problem numerator and denominator of every health quantity (:data:`HEALTH_DEFINITIONS`).

    The rate of a set of problems is :func:`pooled_rate` of these over the set; report,
    compare and gate all use it, so one name has one value for one run.
    """
    st = table.r_status
    g = table.r_gradable
    ok = st == STATUS_CODES["ok"]
    req = table.requested.astype(np.float64)
    has_tok = ok & ~np.isnan(table.r_output_tokens)
    n_ok = table.per_problem(ok)
    return {
        "unextracted_rate": (table.per_problem(g & ~table.r_extracted), table.per_problem(g)),
        "truncation_rate": (table.per_problem(ok & table.r_truncated), n_ok),
        "infra_error_rate": (table.per_problem(st == STATUS_CODES["infra_error"]), req),
        "timeout_rate": (table.per_problem(st == STATUS_CODES["timeout"]), req),
        "grader_error_rate": (table.per_problem(ok & table.r_grader_error), n_ok),
        "output_tokens": (
            table.per_problem(has_tok, np.nan_to_num(table.r_output_tokens)),
            table.per_problem(has_tok),
        ),
        **_thought_counts(table, ok),
    }


def _thought_counts(table: TaskTable, ok: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The thought health of :func:`health_counts` (reasoning models)."""
    thought = ~np.isnan(table.r_thought_chars)
    with_thoughts = ok & bool((ok & thought).any())
    rt = table.r_reasoning_tokens
    # a count of 0 beside a non-empty thought is a parser's placeholder, not a count (vLLM
    # parsers that inherit the base counter): not counted, like an absent one
    has_rt = ok & ~np.isnan(rt) & ~((rt == 0) & (np.nan_to_num(table.r_thought_chars) > 0))
    out = table.r_output_tokens
    both = has_rt & ~np.isnan(out) & (np.nan_to_num(out) >= np.nan_to_num(rt))
    answer = np.nan_to_num(out - rt)
    return {
        "truncated_in_thought_rate": (
            table.per_problem(with_thoughts & table.r_truncated & table.r_in_thought),
            table.per_problem(with_thoughts),
        ),
        "reasoning_tokens": (
            table.per_problem(has_rt, np.nan_to_num(table.r_reasoning_tokens)),
            table.per_problem(has_rt),
        ),
        "thought_chars": (
            table.per_problem(with_thoughts, np.nan_to_num(table.r_thought_chars)),
            table.per_problem(with_thoughts),
        ),
        "answer_tokens": (table.per_problem(both, answer), table.per_problem(both)),
    }


def _mean(num: np.ndarray, den: np.ndarray, reason: str) -> dict[str, Any]:
    value = pooled_rate(num, den)
    if value is None:
        return {"value": None, "of": 0, "reason": reason}
    return {"value": value, "of": int(den.sum())}


def thought_health(hc: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """The report's thought health: truncated while thinking, the thought's length (reasoning
    tokens where the server counts them, else characters, ``unit`` says which), the answer's
    tokens. Empty for a task with no thought and no reasoning token count."""
    num, den = hc["truncated_in_thought_rate"]
    tokens = _mean(*hc["reasoning_tokens"], "the server counted no reasoning tokens")
    chars = _mean(*hc["thought_chars"], "no rollout holds a thought")
    if tokens["value"] is None and chars["value"] is None:
        return {}
    length = (
        {**tokens, "unit": "reasoning_tokens"}
        if tokens["value"] is not None
        else {**chars, "unit": "chars"}
    )
    return {
        "n_truncated_in_thought": _rate(
            int(num.sum()), int(den.sum()), what="completed rollouts with thoughts"
        ),
        "thought_length_mean": length,
        "reasoning_tokens_mean": tokens,
        "thought_chars_mean": chars,
        "answer_tokens_mean": _mean(
            *hc["answer_tokens"],
            "no completed rollout reported both completion and reasoning tokens",
        ),
    }


def report_warnings(health: dict[str, Any]) -> list[str]:
    """Warnings of a task report: a truncation rate above :data:`TRUNCATION_WARNING_RATE`."""
    out = []
    trunc = health.get("n_truncated") or {}
    rate = trunc.get("rate")
    if rate is not None and rate > TRUNCATION_WARNING_RATE:
        inside = (health.get("n_truncated_in_thought") or {}).get("count") or 0
        where = f", {inside} of them inside the thought" if inside else ""
        out.append(
            f"{trunc['count']}/{trunc['of']} completed rollouts ({100 * rate:.1f}%) were cut at "
            f"max_tokens{where}: raise max_tokens; truncated answers count as wrong"
        )
    return out


def pooled_rate(num: np.ndarray, den: np.ndarray) -> float | None:
    """``sum(num) / sum(den)``; None (not measured) when the denominator is 0."""
    total = float(np.sum(den))
    return float(np.sum(num)) / total if total > 0 else None


def report_ks(table: TaskTable, settings: dict[str, Any]) -> list[int]:
    """The draw counts a task reports: its ``ks`` setting, else :func:`rolleval.metrics.default_ks`
    of the smallest requested rollout count (the one rule for reports, compare and gate)."""
    if settings.get("ks"):
        return [int(k) for k in settings["ks"]]
    req_min = int(table.requested.min()) if table.n_problems else 1
    return M.default_ks(max(req_min, 1))


def _window_values(table: TaskTable, k: int, judged_only: np.ndarray) -> np.ndarray:
    """Per-problem consecutive-window pass^k (NaN = no complete window).

    Trials are ordered by rollout index; a window is k consecutive indices that are all
    present and judged; its value is 1 when all k passed.
    """
    T = table.n_problems
    out = np.full(T, np.nan)
    if T == 0 or len(table.r_index) == 0:
        return out
    width = int(table.r_index.max()) + 1
    if k > width:
        return out
    present = np.zeros((T, width), dtype=np.int32)
    passed = np.zeros((T, width), dtype=np.int32)
    present[table.r_problem[judged_only], table.r_index[judged_only]] = 1
    sel = judged_only & table.r_correct
    passed[table.r_problem[sel], table.r_index[sel]] = 1

    def window_sums(a: np.ndarray) -> np.ndarray:
        cs = np.concatenate([np.zeros((T, 1), np.int32), np.cumsum(a, axis=1)], axis=1)
        sums: np.ndarray = cs[:, k:] - cs[:, :-k]
        return sums

    complete = window_sums(present) == k
    allpass = window_sums(passed) == k
    n_complete = complete.sum(axis=1)
    n_pass = (complete & allpass).sum(axis=1)
    ok = n_complete > 0
    out[ok] = n_pass[ok] / n_complete[ok]
    return out


def per_problem_values(
    table: TaskTable,
    *,
    ks: list[int],
    taus: tuple[float, ...] = DEFAULT_TAUS,
    denominator_policy: str = "judged",
    score_key: str = "correct",
    timeout_policy: str = "failure",
) -> dict[str, tuple[np.ndarray, dict[str, Any], str | None]]:
    """Per-problem values of every metric: ``name -> (values, params, reason_if_unavailable)``.

    ``values[i]`` is NaN where problem ``i`` is not eligible for that metric. The rollouts
    that enter are the judged ones (:func:`judged_mask`): the gradable rollouts and, by
    default, timeouts as failures.
    Besides the pass@k family, maj@n, self-consistency and consecutive pass^k, every named
    per-rollout judgement metric ``m`` gives ``metrics.m``: per problem, the mean of ``m``
    over the judged rollouts that report it (whatever the denominator policy).
    """
    if denominator_policy not in DENOMINATOR_POLICIES:
        raise UsageError(
            f"denominator_policy must be one of {', '.join(DENOMINATOR_POLICIES)}, got {denominator_policy!r}"
        )
    T = table.n_problems
    g = judged_mask(table, timeout_policy)
    n_judged = table.per_problem(g).astype(np.int64)
    c_correct = table.per_problem(g & table.r_correct).astype(np.int64)
    n = n_judged if denominator_policy == "judged" else table.requested.copy()
    out: dict[str, tuple[np.ndarray, dict[str, Any], str | None]] = {}
    binary = score_key == "correct"

    family_ks = [k for k in ks if k > 1]  # k = 1 of every family is pass@1, reported once
    if binary:
        suite = M.suite_metrics(n, c_correct, ks=family_ks, taus=taus)
        for name, mv in suite.metrics.items():
            out[name] = (suite.per_problem[name], dict(mv.params), mv.reason)
    else:
        # Graded score: pass@1 = mean score; the combinatorial family needs pass/fail.
        s = table.per_problem(g, np.nan_to_num(table.r_score))  # a timeout scores 0
        vals = np.full(T, np.nan)
        ok = n > 0
        vals[ok] = s[ok] / n[ok]
        out["pass@1"] = (
            vals,
            {"k": 1, "score_key": score_key},
            "no problem has a judged rollout",
        )
        for k in family_ks:
            out[f"pass@{k}"] = (
                np.full(T, np.nan),
                {"k": k},
                f"pass@{k} needs a pass/fail score_key ('correct'), this task reports {score_key!r}",
            )

    # majority vote over the judged rollouts (clusters from the grader; a timeout votes for nothing)
    votes = M.majority_vote_array(table.r_problem[g], table.r_cluster[g], table.r_correct[g], T)
    maj, sc = votes.correct, votes.self_consistency
    if denominator_policy == "requested":
        # self-consistency divides by the requested rollouts; a problem with none judged votes wrong
        modal = np.asarray(votes.modal_size, dtype=np.float64)
        sc = np.where(table.requested > 0, modal / np.maximum(table.requested, 1), np.nan)
        maj = np.where(np.isnan(maj) & (table.requested > 0), 0.0, maj)
    out["maj@n"] = (maj, {}, "no problem has a judged rollout")
    if int(table.requested.max(initial=0)) < 2:
        # one rollout a problem agrees with itself: 1.0 whatever was answered, not a measurement
        sc = np.full(T, np.nan)
        sc_reason = "needs at least 2 rollouts per problem (one rollout always agrees with itself)"
    else:
        sc_reason = "no problem has a judged rollout"
    out["self_consistency"] = (sc, {}, sc_reason)

    for k in family_ks:
        vals = _window_values(table, k, g)
        out[f"consecutive-pass^{k}"] = (
            vals,
            {"k": k},
            f"no problem has {k} consecutive judged rollouts",
        )

    # every named judgement metric: per problem, the mean over the judged rollouts reporting it
    # (a timeout scored as a failure counts, with the value 0, as for a graded score)
    timed_out = g & ~table.r_gradable
    for name, column in table.r_metrics.items():
        has = (g & ~np.isnan(column)) | timed_out
        count = table.per_problem(has)
        total = table.per_problem(has, np.nan_to_num(column))
        vals = np.full(T, np.nan)
        ok = count > 0
        vals[ok] = total[ok] / count[ok]
        out[f"metrics.{name}"] = (
            vals,
            {"metric": name},
            f"no judged rollout reports the metric {name!r}",
        )
    return out


def _intervals(
    columns: dict[str, np.ndarray], inference: InferenceSettings
) -> dict[str, dict[str, Any]]:
    """Bootstrap intervals for many metrics.

    Metrics that are functions of a problem's (n, c) and share the same eligible problems
    (pass@k, pass^k, G-Pass@k_tau, mG-Pass@k at one k) share one set of resamples; every other
    metric gets its own. Each set is drawn from a fresh generator seeded with
    ``inference.rng``, so a metric's interval does not depend on which others are reported.
    """
    groups: dict[tuple[bytes, str], list[str]] = {}
    for name, vals in columns.items():
        shared = name.startswith(("pass@", "pass^", "G-Pass@", "mG-Pass@"))
        key = (np.packbits(~np.isnan(vals)).tobytes(), "nc" if shared else name)
        groups.setdefault(key, []).append(name)
    out: dict[str, dict[str, Any]] = {}
    for names in groups.values():
        matrix = np.column_stack([columns[n] for n in names])
        results = grouped_bootstrap_columns(
            matrix,
            n_resamples=inference.n_resamples,
            confidence_level=inference.confidence_level,
            rng=inference.rng,
        )
        for name, res in zip(names, results):
            entry = {
                "method": "percentile bootstrap over problems",
                "unit": "problem",
                "low": res.low,
                "high": res.high,
                "confidence_level": inference.confidence_level,
                "n_resamples": inference.n_resamples,
                "seed": inference.rng,
                "status": res.status,
            }
            if res.reason:
                entry["reason"] = res.reason
            if (
                res.status == "degenerate"
                and res.low is not None
                and not name.startswith("metrics.")
            ):
                entry.update(
                    degenerate_bound(
                        float(res.low),
                        int((~np.isnan(columns[name])).sum()),
                        inference.confidence_level,
                    )
                )
            out[name] = entry
    return out


def degenerate_bound(value: float, n_problems: int, confidence_level: float) -> dict[str, Any]:
    """The exact bound of a degenerate sample (every one of ``n_problems`` scored ``value``,
    a metric in [0, 1]), as compare bounds a near-degenerate one (``docs/contract.md``,
    "Equivalence needs a bound"): the share of problems that could score otherwise is at most
    the one-sided Clopper-Pearson bound at ``1 - (1 - confidence_level) / 2`` for 0 of
    ``n_problems`` observed, ``u = 1 - ((1 - confidence_level) / 2) ** (1 / n_problems)``; each
    such problem moves the mean by at most ``value`` down or ``1 - value`` up."""
    u = 1.0 - ((1.0 - confidence_level) / 2.0) ** (1.0 / n_problems)
    return {
        "bound_low": max(0.0, value - u * value),
        "bound_high": min(1.0, value + u * (1.0 - value)),
        "bound_method": (
            f"exact: at most {u:.4f} of the problems score otherwise (Clopper-Pearson, 0 of "
            f"{n_problems} seen), each by at most the metric's range [0, 1]"
        ),
    }


def task_report(
    table: TaskTable,
    settings: dict[str, Any],
    *,
    inference: InferenceSettings | None = None,
) -> dict[str, Any]:
    """The report of one task, as a JSON-ready dict (see ``docs/run-format.md``).

    Its parts: the metrics (per-problem values, summaries and bootstrap intervals, the
    standard errors of pass@1), the rollout and problem counts, and the health rates.
    """
    inference = inference or InferenceSettings.from_record(settings.get("inference"))
    policy = settings.get("denominator_policy", "judged")
    score_key = settings.get("score_key", "correct")
    ks = report_ks(table, settings)
    taus = tuple(float(t) for t in settings.get("taus", DEFAULT_TAUS))
    timeout_policy = settings.get("timeout_policy", "failure")

    n_gradable = table.per_problem(table.r_gradable).astype(np.int64)
    n_judged = table.per_problem(judged_mask(table, timeout_policy)).astype(np.int64)
    values = per_problem_values(
        table,
        ks=ks,
        taus=taus,
        denominator_policy=policy,
        score_key=score_key,
        timeout_policy=timeout_policy,
    )
    metrics = _metric_entries(values, inference)
    se = _pass_at_1_se(table, values["pass@1"][0])
    if metrics["pass@1"]["status"] == "ok":
        metrics["pass@1"]["se"] = se
    health = _health_entries(table, n_judged)
    n_records = len(table.r_status)
    return {
        "report_version": REPORT_VERSION,
        "task": settings.get("name"),
        "grader": settings.get("grader_identity"),
        "denominator_policy": policy,
        "timeout_policy": timeout_policy,
        "score_key": score_key,
        "ks": ks,
        "taus": list(taus),
        "problems": {
            "total": table.n_problems,
            "with_gradable_rollout": int((n_gradable > 0).sum()),
            "complete": int((table.per_problem(np.ones(n_records, bool)) >= table.requested).sum()),
        },
        "rollouts": _rollout_counts(table, n_gradable, n_judged),
        "metrics": metrics,
        "health": health,
        **({"warnings": warns} if (warns := report_warnings(health)) else {}),
        "inference": _inference_block(inference),
    }


def _metric_entries(
    values: dict[str, tuple[np.ndarray, dict[str, Any], str | None]], inference: InferenceSettings
) -> dict[str, Any]:
    """Each metric's summary (:func:`rolleval.metrics.summarize`), with its bootstrap interval
    (``ci``) where it was measured."""
    entries: dict[str, Any] = {}
    available: dict[str, np.ndarray] = {}
    for name, (vals, params, reason) in values.items():
        mv = M.summarize(name, vals, params=params, reason_if_empty=reason or "not measured")
        entry = asdict(mv)
        entry.pop("name", None)
        entries[name] = entry
        if mv.status == "ok":
            available[name] = vals
    for name, ci in _intervals(available, inference).items():
        entries[name]["ci"] = ci
    return entries


def _pass_at_1_se(table: TaskTable, p1: np.ndarray) -> dict[str, Any]:
    """Analytic standard errors of pass@1 over its eligible problems (Miller 2024): the CLT
    one, and the CR1 sandwich over clusters where the task declares any."""
    from .. import stats

    elig = p1[~np.isnan(p1)]
    se: dict[str, Any] = {"clt": stats.clt_se(elig) if len(elig) >= 2 else None}
    if se["clt"] is None:
        se["reason"] = "fewer than 2 eligible problems"
    if table.clusters.count(None) != len(table.clusters):  # any declared cluster
        keys = np.array(
            [c if c is not None else f"\x00{i}" for i, c in enumerate(table.clusters)], dtype=object
        )
        mask = ~np.isnan(p1)
        se["clustered"] = stats.clustered_se(elig, keys[mask]) if mask.sum() >= 2 else None
        se["cluster_method"] = "CR1 sandwich over declared clusters"
    return se


#: The health rates of :func:`health_counts`, with what their denominator counts.
_RATE_DENOMINATORS = {
    "unextracted_rate": "graded rollouts",
    "truncation_rate": "completed rollouts",
    "infra_error_rate": "requested rollouts",
    "timeout_rate": "requested rollouts",
    "grader_error_rate": "completed rollouts",
}


def _health_entries(table: TaskTable, n_judged: np.ndarray) -> dict[str, Any]:
    """The ``health`` block: fault rates with their denominators, the file-level counts,
    output tokens and the thought's health."""
    hc = health_counts(table)
    health: dict[str, Any] = {
        HEALTH_DEFINITIONS[name][0]: _rate(int(num.sum()), int(den.sum()), what=what)
        for name, what in _RATE_DENOMINATORS.items()
        for num, den in (hc[name],)
    }
    n_requested = int(table.requested.sum())
    n_skipped = int((table.r_status == STATUS_CODES["skipped"]).sum())
    n_short = int((n_judged < table.requested).sum())
    health.update(
        {
            "n_short": _rate(n_short, table.n_problems, what="problems"),
            "skipped": _rate(n_skipped, n_requested, what="requested rollouts"),
            "missing": _rate(
                n_requested - len(table.r_status), n_requested, what="requested rollouts"
            ),
            "duplicate_judgements": int(table.n_duplicate_judgements),
            "unexpected_indices": int(table.n_unexpected),
            "duplicate_prompts": int(table.n_duplicate_prompts),
            "torn_lines": dict(sorted(table.torn_lines.items())),
            "output_tokens_mean": _output_tokens_mean(*hc["output_tokens"]),
            **thought_health(hc),
        }
    )
    return health


def _output_tokens_mean(num: np.ndarray, den: np.ndarray) -> dict[str, Any]:
    tok = pooled_rate(num, den)
    if tok is None:
        return {"value": None, "of": 0, "reason": "no completed rollout reported token usage"}
    return {"value": tok, "of": int(den.sum())}


def _rollout_counts(
    table: TaskTable, n_gradable: np.ndarray, n_judged: np.ndarray
) -> dict[str, Any]:
    """The ``rollouts`` block: requested, recorded, completed, gradable, judged, correct, and
    how many problems have each number of gradable rollouts."""
    g = table.r_gradable
    dist: dict[str, int] = {}
    for v, cnt in zip(*np.unique(n_gradable, return_counts=True)):
        dist[str(int(v))] = int(cnt)
    return {
        "requested": int(table.requested.sum()),
        "records": len(table.r_status),
        "completed": int((table.r_status == STATUS_CODES["ok"]).sum()),
        "gradable": int(g.sum()),
        "judged": int(n_judged.sum()),
        "correct": int((g & table.r_correct).sum()),
        "gradable_per_problem": dist,
    }


def build_run_report(
    run: RunDir,
    *,
    inference: InferenceSettings | None = None,
    task_reports: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Recompute every task's report from disk. Returns (report, warning messages).

    ``task_reports``: reports of some tasks already computed from their records in memory
    (:func:`task_report_of_columns`, by a writer that just wrote them), used as they are
    when computed with the same ``inference``."""
    tasks: dict[str, Any] = {}
    with collect_warnings() as caught:
        for task in run.tasks():
            pre = (task_reports or {}).get(task.name)
            if (
                pre is not None
                and inference is not None
                and pre["inference"] == _inference_block(inference)
            ):
                tasks[task.name] = pre
            else:
                tasks[task.name] = _one_task(task, inference)
    report = {
        "report_version": REPORT_VERSION,
        "rolleval_version": __version__,
        "run_id": run.manifest.get("run_id"),
        "model": (run.manifest.get("config") or {}).get("model"),
        "tasks": tasks,
    }
    if run.manifest.get("sequential"):
        report["sequential"] = run.manifest["sequential"]
    return report, [str(w.message) for w in caught]


def _check_settings(settings: dict[str, Any], task: TaskFiles) -> None:
    """The task.json settings a report reads have the types and ranges they must have."""

    def fail(message: str) -> None:
        raise DataError(f"{message}; restore the file (or regrade the run)", path=task.task_json)

    n = settings.get("n_rollouts")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        fail(f"n_rollouts must be an integer >= 1, got {n!r:.40}")
    ks = settings.get("ks")
    top = n if isinstance(n, int) else None
    if ks is not None and (
        not isinstance(ks, list)
        or not all(
            isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= (top or k) for k in ks
        )
    ):
        fail(f"ks must be a list of integers from 1 to n_rollouts ({top}), got {ks!r:.60}")
    for key in ("denominator_policy", "score_key", "name"):
        if key in settings and not isinstance(settings[key], str):
            fail(f"{key} must be a string, got {settings[key]!r:.40}")
    for key in ("inference", "problem_hashes", "grader", "sampling"):
        if settings.get(key) is not None and not isinstance(settings[key], dict):
            fail(f"{key} must be a JSON object, got {type(settings[key]).__name__}")


def _inference_block(inference: InferenceSettings) -> dict[str, Any]:
    """The ``inference`` entry :func:`task_report` writes for these settings."""
    return {
        "method": "percentile bootstrap over problems",
        "unit": "problem",
        "n_resamples": inference.n_resamples,
        "confidence_level": inference.confidence_level,
        "seed": inference.rng,
    }


def task_report_of_columns(
    task: TaskFiles,
    settings: dict[str, Any],
    prompts: JsonlColumns,
    judgements: JsonlColumns,
    inference: InferenceSettings,
) -> dict[str, Any]:
    """The report of a task whose ``task.json`` holds ``settings`` and whose files hold
    exactly these records (columns of :class:`~rolleval.rundir._table.PromptRow` and
    :class:`~rolleval.rundir._table.ScoredJudgementRow` fields): what reading the files back gives,
    without reading them."""
    settings = dict(settings)
    _check_settings(settings, task)
    settings.setdefault("name", task.name)
    table = build_task_table(
        prompts,
        judgements,
        requested=settings.get("n_rollouts"),
        prompts_path=task.prompts,
        judgements_path=task.judgements,
        score_key=settings.get("score_key", "correct"),
    )
    return _task_report_checked(table, settings, task, inference)


def _one_task(task: TaskFiles, inference: InferenceSettings | None) -> dict[str, Any]:
    settings = task.read_task()
    _check_settings(settings, task)
    settings.setdefault("name", task.name)
    table = load_task_table(task, settings=settings)
    return _task_report_checked(table, settings, task, inference)


def _task_report_checked(
    table: TaskTable, settings: dict[str, Any], task: TaskFiles, inference: InferenceSettings | None
) -> dict[str, Any]:
    try:
        return task_report(table, settings, inference=inference)
    except UsageError as exc:  # a setting stored in task.json is wrong
        raise DataError(f"{exc}; restore the file", path=task.task_json) from None


def write_run_report(run: RunDir, report: dict[str, Any]) -> None:
    """Atomically write the run report and each task's report."""
    for name, rep in report["tasks"].items():
        atomic_write_json(run.task(name).report, rep)
    atomic_write_json(run.report_path, report)
