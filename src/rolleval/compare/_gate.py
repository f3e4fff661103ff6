"""``rolleval gate``: a policy of gating metrics and health limits, decided against a baseline.

Policy file (YAML)::

    alpha: 0.05                  # family-wise, Holm across every gating comparison
    tasks: [gsm8k, arc_easy]     # optional: gate only these tasks (default: all shared tasks)
    run_noise: noise.json        # optional: the endpoint's run-level noise (`rolleval noise`),
                                 # relative to this file; widens the pass@1 comparisons
    metrics:                     # paired comparisons that gate; threshold on the metric's scale
      pass@1: {threshold: 0.02}
      maj@n: {threshold: 0.03}
    health:
      unextracted_rate: {max_increase: 0.01}   # paired comparison, lower is better
      infra_error_rate: {max: 0.02}            # absolute limit on the candidate run

Exit 4 when a limit on ``infra_error_rate`` is broken (the run failed: an outage, not a
regression), 1 when any gating comparison establishes a regression or another absolute limit
is broken, 3 when any gating comparison is inconclusive or a baseline task has no counterpart
in the run (unless the policy or ``tasks`` names the tasks), 0 otherwise; ``observe`` makes
every evaluated gate exit 0.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import yaml

from .._report._build import pooled_rate
from .._runner._config import load_yaml
from ..errors import (
    EXIT_INCONCLUSIVE,
    EXIT_NEGATIVE,
    EXIT_OK,
    EXIT_RUN_FAILED,
    DataError,
    UsageError,
)
from ._changed import WhatChanged, side_record, what_changed
from ._evidence import refuse_incomplete
from ._frame import HEALTH_METRICS, ProblemFrame, canonical_metric, load_frames
from ._options import CompareOptions
from ._paired import Comparison
from ._pairs import TaskPair, pair_tasks, parse_task_map
from ._per_task import TaskComparison, TaskSettings, compare_task
from ._replicates import REPLICATE_METRIC, SideRuns
from ._rule import PolicyVerdict
from ._runs import (
    Overall,
    RunLevelInputs,
    compare_pair,
    decide_overall,
    incomplete_runs,
    label_sides,
    load_run_level,
)

__all__ = ["DEFAULT_POLICY", "GateResult", "gate_run", "load_policy"]

DEFAULT_POLICY: dict[str, Any] = {
    "alpha": 0.05,
    "metrics": {"pass@1": {"threshold": 0.02}},
    "health": {"unextracted_rate": {"max_increase": 0.02}, "infra_error_rate": {"max": 0.02}},
}


def load_policy(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Read and check a policy file (``None``: :data:`DEFAULT_POLICY`)."""
    if path is None:
        return DEFAULT_POLICY
    p = Path(path)
    try:
        doc = load_yaml(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{p}: policy file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 text (byte {exc.start + 1}); save the policy as UTF-8", path=p
        ) from None
    except yaml.YAMLError as exc:
        raise DataError(f"not valid YAML ({exc})", path=p) from None
    if not isinstance(doc, dict):
        raise DataError("a policy must be a mapping with 'metrics' and/or 'health'", path=p)
    unknown = set(doc) - {"alpha", "tasks", "metrics", "health", "run_noise"}
    if unknown:
        raise DataError(
            f"unknown policy key(s) {', '.join(sorted(unknown))} (allowed: alpha, tasks, "
            "metrics, health, run_noise)",
            path=p,
        )
    if "run_noise" in doc:
        if not isinstance(doc["run_noise"], str) or not doc["run_noise"]:
            raise DataError(
                f"run_noise: give the path of a run-noise file (`rolleval noise ... --output "
                f"FILE`), got {doc['run_noise']!r:.60}",
                path=p,
            )
        doc["run_noise"] = str(p.parent / doc["run_noise"])  # relative to the policy file
    if "alpha" in doc and not _is_number(doc["alpha"], 0.0, 1.0, open_low=True, open_high=True):
        raise DataError(f"alpha: give a number in (0, 1), got {doc['alpha']!r:.60}", path=p)
    tasks = doc.get("tasks")
    if isinstance(tasks, str):
        doc["tasks"] = tasks = [tasks]  # `tasks: gsm8k` means the one task
    if tasks is not None and (
        not isinstance(tasks, list) or not all(isinstance(t, str) and t for t in tasks)
    ):
        raise DataError(f"tasks: give a list of task names, got {tasks!r:.60}", path=p)
    for section in ("metrics", "health"):
        if doc.get(section) is not None and not isinstance(doc[section], dict):
            raise DataError(
                f"{section}: give a mapping of metric name to limits, got {type(doc[section]).__name__}",
                path=p,
            )
    metrics = {}
    for name, spec in (doc.get("metrics") or {}).items():
        if (
            not isinstance(spec, dict)
            or set(spec) - {"threshold"}
            or ("threshold" in spec and not _is_number(spec["threshold"], 0.0, None))
        ):
            raise DataError(f"metrics.{name}: give {{threshold: NUMBER >= 0}}", path=p)
        try:
            metrics[canonical_metric(str(name))] = spec
        except UsageError as exc:
            raise DataError(f"metrics.{name}: {exc}", path=p) from None
    if metrics:
        doc["metrics"] = metrics
    for name, spec in (doc.get("health") or {}).items():
        if name not in HEALTH_METRICS:
            raise DataError(
                f"health.{name}: unknown health metric (known: {', '.join(HEALTH_METRICS)})", path=p
            )
        if (
            not isinstance(spec, dict)
            or not spec
            or set(spec) - {"max_increase", "max"}
            or not all(_is_number(v, 0.0, None) for v in spec.values())
        ):
            raise DataError(f"health.{name}: give max_increase and/or max (NUMBER >= 0)", path=p)
    if not doc.get("metrics") and not doc.get("health"):
        raise DataError("policy gates nothing: add 'metrics' or 'health'", path=p)
    doc["_path"] = str(p)  # later policy errors name the file
    return doc


def _is_number(
    value: object,
    low: float,
    high: float | None,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> bool:
    """A real number (not a bool, not a string) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if not np.isfinite(value) or value < low or (open_low and value == low):
        return False
    return high is None or value < high or (not open_high and value == high)


@dataclass(frozen=True)
class GateResult:
    """Result of :func:`gate_run`: a run gated against a baseline under a policy.

    ``to_dict()`` is what ``rolleval gate --format json`` prints. Frozen: a field cannot be
    reassigned.

    Attributes
    ----------
    verdict : {"pass", "blocked", "inconclusive", "run_failed"}
        The :data:`PolicyVerdict`: ``"run_failed"`` when a limit on ``infra_error_rate`` is
        broken (an outage, not a regression); else ``"blocked"`` when a gating comparison
        is a regression after Holm's adjustment across every gating comparison, or another
        absolute limit is broken; else ``"inconclusive"`` when a gating comparison is
        inconclusive or lacks evidence, or a baseline task has no counterpart in the run
        (unless the tasks were named); else ``"pass"``. Computed also under ``observe``.
    exit_code : int
        4, 1, 3 or 0 for the verdict; 0 under ``observe``.
    checks : list of dict
        One per check, in order (missing tasks, absolute limits, paired comparisons):
        ``task``, ``check`` (what was tested), ``value`` (text: the candidate's level, or
        the effect with its interval and p-value; ``"N/A"`` when not measured) and
        ``verdict`` (``"ok"``, ``"blocked"``, ``"run failed"``, ``"not evaluated"``,
        ``"N/A: not measured"``, or a comparison verdict after the adjustment); a paired
        comparison also has ``adjusted_pvalue`` (None: no test was run).
    comparisons : list of TaskComparison
        Every gating paired comparison, per task and gating metric.
    observe : bool
        The exit code is 0 whatever the verdict.
    reasons : list of str
        One sentence each behind the verdict (incomplete sides, missing tasks, a broken
        infra limit, where the run-level variance comes from or that it is assumed 0).
    incomplete : list of dict
        The incomplete tasks of either side, gated under ``allow_incomplete`` (as in
        :attr:`CompareResult.incomplete`).
    changed : WhatChanged or None
        What changed between the baseline's and the run's recorded settings.
    replicates : tuple of SideRuns or None
        Both sides' runs when replicate runs were given (``None``: one run per side); the
        run's side has the role ``"candidate"``, as in :attr:`CompareResult.replicates`.
    run_variance_source : str
        Where the pass@1 comparisons' run-level variance ``v`` comes from, in one phrase:
        ``none: assumed 0 ...`` (then ``reasons`` hold :data:`VALIDITY_NOTE`), a run-noise
        file, or replicate runs (:attr:`RunLevelInputs.source`); each comparison's
        ``run_level`` and ``run_variance`` give the figures.
    """

    verdict: PolicyVerdict
    exit_code: int
    checks: list[dict[str, Any]]
    comparisons: list[TaskComparison] = field(default_factory=list)
    observe: bool = False
    reasons: list[str] = field(default_factory=list)
    incomplete: list[dict[str, Any]] = field(default_factory=list)
    changed: WhatChanged | None = None
    replicates: tuple[SideRuns, SideRuns] | None = None
    run_variance_source: str = "none: assumed 0 (the problem-level test alone)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "observe": self.observe,
            "what_changed": self.changed.to_dict() if self.changed else None,
            "replicates": (
                {s.role: s.to_dict() for s in self.replicates} if self.replicates else None
            ),
            "run_variance_source": self.run_variance_source,
            "multiplicity": "Holm across all gating comparisons",
            "reasons": self.reasons,
            "incomplete": self.incomplete,
            "checks": self.checks,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }

    def markdown(self) -> str:
        """GitHub-flavoured Markdown (the ``md`` rendering of :func:`rolleval._report._render.render`)."""
        from .._report._render import render

        return render("gate", self.to_dict(), "md")


def _fmt_effect(comp: Any) -> str:
    d = comp.to_dict()
    lo, hi = d.get("ci_low"), d.get("ci_high")
    ci = "" if lo is None or hi is None else f" [{lo:+.4f}, {hi:+.4f}]"
    p = d.get("pvalue")
    return (
        f"{d['effect']:+.4f}{ci}, p={p:.3g}"
        if d.get("effect") is not None and p is not None
        else "N/A"
    )


def _candidate_level(frame: ProblemFrame, metric: str) -> float | None:
    """A health metric over the whole task, pooled (:func:`rolleval._report._build.pooled_rate`):
    the same number report.json prints; None when it is defined nowhere."""
    return pooled_rate(*frame.health[metric])


def gate_run(
    run: str | os.PathLike[str],
    baseline: str | os.PathLike[str],
    *,
    policy: dict[str, Any] | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
    confidence_level: float | None = None,
    unmatched: Literal["error", "exclude"] | None = None,
    observe: bool = False,
    allow_incomplete: bool = False,
    tasks: list[str] | None = None,
    task_map: Mapping[str, str] | list[str] | None = None,
    run_noise: str | os.PathLike[str] | Mapping[str, float] | None = None,
    baseline_replicates: Sequence[str | os.PathLike[str]] = (),
    candidate_replicates: Sequence[str | os.PathLike[str]] = (),
) -> GateResult:
    """Decide whether ``run`` may replace ``baseline`` under ``policy``.

    Tasks pair as in :func:`~rolleval.compare.compare_runs` (by name, ``task_map``, or by
    content), and ``unmatched`` is as there (``None``: problems a task paired by content does
    not share are left out, others refuse); the outcome's ``changed`` lists the recorded
    settings that differ. The policy sets ``alpha`` and each metric's threshold; the other
    statistical settings are the keywords (threaded to every comparison as one
    :class:`CompareOptions`).

    Run-level noise, as in :func:`~rolleval.compare.compare_runs` and by its code
    (:func:`load_run_level`, :func:`compare_pair`): ``run_noise`` (a run-noise file or
    ``{task: v}``; default the policy's ``run_noise``) and ``baseline_replicates`` /
    ``candidate_replicates`` (more runs of a side's configuration, differing only in the run
    seed) widen the pass@1 comparisons by the run-level variance of the effect. ``v`` is
    measured on pass@1, so only the pass@1 comparisons take it; other gating comparisons
    are the first runs' problem-level test, and the reasons say so. ``baseline`` may be a
    baseline file; so may each baseline replicate, when it records its run seed.
    """
    policy = policy or DEFAULT_POLICY
    options = CompareOptions(
        alpha=float(policy.get("alpha", 0.05)),
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=rng,
        power=power,
    )
    from ._sequential_run import refuse_sequential

    refuse_sequential(baseline, run, hint="`rolleval compare BASE RUN` with its own BASE")
    fb = load_frames(baseline)
    fc_run = load_frames(run)
    named = list(tasks or []) or list(policy.get("tasks") or [])
    pairs = _gate_pairs(fb, fc_run, (baseline, run), policy, named, tasks, task_map)
    level = _run_level(
        policy,
        (baseline, fb),
        (run, fc_run),
        run_noise,
        (baseline_replicates, candidate_replicates),
    )
    names = [p.baseline for p in pairs]
    pair_of = {p.baseline: p for p in pairs}
    fc = {p.baseline: fc_run[p.candidate] for p in pairs}  # by baseline name from here on
    incomplete = incomplete_runs(pairs, (baseline, fb), (run, fc_run), level.sides, "run")
    if not allow_incomplete:
        refuse_incomplete(incomplete)
    reasons = [
        f"the {i['side']} is incomplete (status {i['run_status']!r}, task {i['task']!r}: "
        f"{i['missing_rollouts']} of {i['requested_rollouts']} rollouts missing); gated under --allow-incomplete"
        for i in incomplete
    ]
    not_evaluated = [] if named else [t for t in fb if t not in pair_of]
    checks, reason = _missing_checks(not_evaluated)
    limits = _limit_checks(names, fc, policy)
    checks += limits.checks
    if limits.run_failed:
        reason.append(
            "the infra error rate is over its limit: the run failed (an outage, not a regression); "
            "fix the endpoint and resume the run"
        )
    gating = _Gating.compare(
        _GatingInput(names, fb, fc_run, pair_of, level), policy, options, unmatched
    )
    reasons += gating.run_level_notes(level) + reason
    decision = gating.decide(options.alpha)
    if decision is not None:
        reasons += decision.notes
        checks += _comparison_checks(gating.comparisons, decision)
    code = _gate_code(decision, limits, bool(not_evaluated))
    changed = what_changed(
        side_record(baseline, {t: f.settings for t, f in fb.items()}),
        side_record(run, {p.candidate: fc[p.baseline].settings for p in pairs}),
        [(p.baseline, p.candidate) for p in pairs],
    )
    label_sides(gating.task_comparisons, changed)
    return GateResult(
        _VERDICT_OF_CODE.get(code, "pass"),
        EXIT_OK if observe else code,
        checks,
        gating.task_comparisons,
        observe,
        reasons,
        incomplete,
        changed,
        level.sides,
        level.source,
    )


def _run_level(
    policy: Mapping[str, Any],
    baseline: tuple[str | os.PathLike[str], dict[str, ProblemFrame]],
    run: tuple[str | os.PathLike[str], dict[str, ProblemFrame]],
    run_noise: str | os.PathLike[str] | Mapping[str, float] | None,
    replicates: tuple[Sequence[str | os.PathLike[str]], Sequence[str | os.PathLike[str]]],
) -> RunLevelInputs:
    """The gate's run-level inputs (:func:`load_run_level`): ``run_noise``, else the
    policy's; refused (``UsageError``) when the policy gates no pass@1, the one metric a
    run-level variance is measured on."""
    if run_noise is None:
        run_noise = policy.get("run_noise")
    level = load_run_level(
        baseline,
        run,
        run_noise=run_noise,
        baseline_replicates=replicates[0],
        candidate_replicates=replicates[1],
    )
    if level.given and REPLICATE_METRIC not in (policy.get("metrics") or {}):
        given = "replicate runs" if level.sides is not None else "a run-noise file"
        raise UsageError(
            f"{given} give the run-level variance of {REPLICATE_METRIC}, which the policy "
            f"{policy.get('_path', '(default)')} does not gate: add `{REPLICATE_METRIC}: "
            "{threshold: ...}` to its metrics, or drop the run-level inputs"
        )
    return level


def _gate_pairs(
    fb: Mapping[str, ProblemFrame],
    fc: Mapping[str, ProblemFrame],
    sources: tuple[str | os.PathLike[str], str | os.PathLike[str]],
    policy: Mapping[str, Any],
    named: list[str],
    tasks: list[str] | None,
    task_map: Mapping[str, str] | list[str] | None,
) -> list[TaskPair]:
    """The baseline's tasks paired with the run's (:func:`pair_tasks`); a task the policy
    names that cannot be paired is the policy file's error."""
    try:
        return pair_tasks(
            fb,
            fc,
            tasks=named or None,
            task_map=parse_task_map(task_map),
            sources=sources,
            sides=("baseline", "run"),
        )
    except UsageError as exc:
        if tasks or not policy.get("tasks"):
            raise
        # the tasks came from the policy: name the policy file and how to fix it
        raise DataError(
            f"policy tasks: {exc}; remove it from the policy's tasks",
            path=policy.get("_path", "policy"),
        ) from None


def _missing_checks(not_evaluated: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """A check per baseline task missing from the run, and the reason they give."""
    checks: list[dict[str, Any]] = [
        {
            "task": t,
            "check": "task present in the run",
            "value": "missing",
            "verdict": "not evaluated",
        }
        for t in not_evaluated
    ]
    if not not_evaluated:
        return checks, []
    return checks, [
        f"baseline task(s) {', '.join(not_evaluated)} are missing from the run: not evaluated "
        "(list the tasks to gate in the policy's `tasks` or with --task)"
    ]


class _Limits(NamedTuple):
    checks: list[dict[str, Any]]
    limits_broken: bool
    """A limit other than the infra error rate's is broken (blocked)."""
    run_failed: bool
    """The infra error rate's limit is broken (an outage)."""


def _limit_checks(
    names: list[str], fc: Mapping[str, ProblemFrame], policy: Mapping[str, Any]
) -> _Limits:
    """The policy's absolute limits (``health.<metric>.max``) on the run, per task."""
    checks: list[dict[str, Any]] = []
    limits_broken = run_failed = False
    for t in names:
        for metric, spec in (policy.get("health") or {}).items():
            if "max" not in spec:
                continue
            value = _candidate_level(fc[t], metric)
            broken = value is not None and value > float(spec["max"])
            if metric == "infra_error_rate":
                run_failed |= broken
            else:
                limits_broken |= broken
            checks.append(
                {
                    "task": t,
                    "check": f"{metric} <= {spec['max']}",
                    "value": "N/A" if value is None else f"{value:.4f}",
                    "verdict": ("run failed" if metric == "infra_error_rate" else "blocked")
                    if broken
                    else ("N/A: not measured" if value is None else "ok"),
                }
            )
    return _Limits(checks, limits_broken, run_failed)


class _GatingInput(NamedTuple):
    """What the gating comparisons are made of: the tasks (baseline names), both sides'
    frames (the run's by its own task names), the pairs and the run-level inputs."""

    names: list[str]
    baseline: Mapping[str, ProblemFrame]
    run: Mapping[str, ProblemFrame]
    pair_of: Mapping[str, TaskPair]
    level: RunLevelInputs


@dataclass(frozen=True)
class _Gating:
    """The gating paired comparisons of every task, by ``task:metric``."""

    comparisons: dict[str, Comparison]
    task_comparisons: list[TaskComparison]
    forced: frozenset[str]
    """The keys whose verdict the unjudged rollouts' worst case made inconclusive."""

    @classmethod
    def compare(
        cls,
        inp: _GatingInput,
        policy: Mapping[str, Any],
        options: CompareOptions,
        unmatched: Literal["error", "exclude"] | None,
    ) -> _Gating:
        """Each task compared on each gating metric at its threshold (``metrics`` and the
        health rates with ``max_increase``). pass@1 goes through compare's own path
        (:func:`compare_pair`: pooled over replicate runs, or widened by a run-noise file's
        ``v``); the other metrics compare the first runs."""
        gating: list[tuple[str, float]] = [
            (m, float(s["threshold"])) for m, s in (policy.get("metrics") or {}).items()
        ]
        gating += [
            (m, float(s["max_increase"]))
            for m, s in (policy.get("health") or {}).items()
            if "max_increase" in s
        ]
        comps: dict[str, Comparison] = {}
        task_comps: list[TaskComparison] = []
        forced: set[str] = set()
        for t in inp.names:
            pair = inp.pair_of[t]
            for metric, threshold in gating:
                settings = TaskSettings(
                    metric=canonical_metric(metric),
                    options=dataclasses.replace(options, threshold=threshold),
                    unmatched=unmatched,
                )
                if settings.metric == REPLICATE_METRIC:
                    tc = compare_pair(pair, inp.baseline, inp.run, inp.level, settings)
                else:
                    tc = compare_task(inp.baseline[t], inp.run[pair.candidate], settings, pair=pair)
                key = f"{t}:{metric}"
                comps[key] = tc.comparison
                if tc.forced_inconclusive:
                    forced.add(key)
                task_comps.append(tc)
        return cls(comps, task_comps, frozenset(forced))

    def run_level_notes(self, level: RunLevelInputs) -> list[str]:
        """Where each pass@1 comparison's run-level variance comes from (compare's notes,
        :meth:`RunLevelInputs.notes`, with :data:`VALIDITY_NOTE` when it is assumed 0), and
        which other comparisons rest on the problem-level test alone."""
        first = [tc for tc in self.task_comparisons if tc.metric == REPLICATE_METRIC]
        notes = level.notes(first)
        if level.given:
            notes += [
                f"{tc.task}:{tc.metric}: the run-level variance is measured on "
                f"{REPLICATE_METRIC} only, so this comparison is the problem-level test alone "
                "on the first runs (it assumes the problems of one run are independent)"
                for tc in self.task_comparisons
                if tc.metric != REPLICATE_METRIC
            ]
        return notes

    def decide(self, alpha: float) -> Overall | None:
        """Holm across every gating comparison (:func:`decide_overall`); None without any."""
        if not self.comparisons:
            return None
        return decide_overall(self.comparisons, alpha=alpha, forced=self.forced)


def _comparison_checks(comps: Mapping[str, Comparison], decision: Overall) -> list[dict[str, Any]]:
    """A check per gating comparison, with its verdict after Holm's adjustment."""
    checks = []
    for key, comp in comps.items():
        t, metric = key.split(":", 1)
        checks.append(
            {
                "task": t,
                "check": f"{metric} paired compare (threshold={comp.threshold})",
                "value": _fmt_effect(comp),
                "verdict": decision.verdicts[key],
                "adjusted_pvalue": decision.adjusted_pvalues.get(key),
            }
        )
    return checks


_VERDICT_OF_CODE: dict[int, PolicyVerdict] = {
    EXIT_RUN_FAILED: "run_failed",
    EXIT_NEGATIVE: "blocked",
    EXIT_INCONCLUSIVE: "inconclusive",
}


def _gate_code(decision: Overall | None, limits: _Limits, tasks_missing: bool) -> int:
    """4 when the run failed, 1 when blocked (a regression or a broken limit), 3 when
    inconclusive (or a baseline task is missing and nothing else failed), else 0."""
    code = EXIT_OK if decision is None else decision.exit_code
    if limits.run_failed:
        return EXIT_RUN_FAILED
    if limits.limits_broken or code == EXIT_NEGATIVE:
        return EXIT_NEGATIVE
    if code == EXIT_OK and tasks_missing:
        return EXIT_INCONCLUSIVE
    return code
