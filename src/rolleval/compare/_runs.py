"""``rolleval compare`` over run directories (or baseline files): every task, and the overall verdict.

For every task both sides have, :mod:`._per_task` compares the task (:func:`compare_task`);
the overall verdict applies Holm across tasks (:func:`gate_decision`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import EXIT_INCONCLUSIVE, EXIT_NEGATIVE, EXIT_OK, UsageError
from ._changed import WhatChanged, side_record, what_changed
from ._evidence import check_complete, refuse_incomplete
from ._frame import (
    ProblemFrame,
    canonical_metric,
    load_frames,
)
from ._holm import gate_decision
from ._options import CompareOptions, one_of
from ._paired import Comparison
from ._pairs import TaskPair, pair_tasks, parse_task_map
from ._per_task import (
    TaskComparison,
    TaskSettings,
    compare_task,
    compare_task_replicates,
)
from ._replicates import (
    REPLICATE_METRIC,
    SideRuns,
    load_side,
    refuse_metric,
)
from ._rule import ComparisonVerdict, GateVerdict, verdict_label

__all__ = [
    "CompareResult",
    "RunLevelInputs",
    "compare_pair",
    "compare_runs",
    "decide_overall",
    "load_run_level",
]


@dataclass(frozen=True)
class CompareResult:
    """Result of :func:`compare_runs`: every task compared, and the overall verdict.

    ``to_dict()`` is what ``rolleval compare --format json`` prints. Frozen: a field cannot
    be reassigned.

    Attributes
    ----------
    baseline, candidate : str
        The two sides as given (run directory or baseline file).
    metric : str
        The compared metric, canonical name.
    tasks : list of TaskComparison
        One per paired task, in the baseline's task order.
    verdict : {"regression", "inconclusive", "pass"}
        The overall :data:`GateVerdict`: ``"regression"`` when a task's verdict after
        Holm's adjustment across tasks is a regression; ``"inconclusive"`` when one is
        inconclusive or lacks evidence, or a baseline task has no counterpart (unless the
        tasks were named); else ``"pass"``. Computed also under ``observe``.
    exit_code : int
        1, 3 or 0 for the verdict; 0 under ``observe``.
    adjusted_pvalues : dict of str to float or None
        Holm-adjusted p-value per task (None: no test was run).
    adjusted_verdicts : dict of str to ComparisonVerdict
        Per task, its verdict after the adjustment (and the rules of :func:`decide_overall`).
    skipped_tasks : dict of str to str
        Tasks of one side only, and why they were not compared.
    reasons : list of str
        One sentence each behind the verdict: incomplete sides, the run-level noise
        assumption, labels kept though Holm removed their significance.
    incomplete : list of dict
        The incomplete tasks of either side (``side``, ``source``, ``task``, ``run_status``,
        ``missing_rollouts``, ``requested_rollouts``), compared under ``allow_incomplete``.
    observe : bool
        The exit code is 0 whatever the verdict.
    changed : WhatChanged or None
        What changed between the two sides' recorded settings (beside what moved).
    replicates : tuple of SideRuns or None
        Both sides' runs when replicate runs were given (``None``: one run per side).
    """

    baseline: str
    candidate: str
    metric: str
    tasks: list[TaskComparison]
    verdict: GateVerdict
    exit_code: int
    adjusted_pvalues: dict[str, float | None] = field(default_factory=dict)
    adjusted_verdicts: dict[str, ComparisonVerdict] = field(default_factory=dict)
    skipped_tasks: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    incomplete: list[dict[str, Any]] = field(default_factory=list)
    observe: bool = False
    changed: WhatChanged | None = None
    replicates: tuple[SideRuns, SideRuns] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "what_changed": self.changed.to_dict() if self.changed else None,
            "replicates": (
                {s.role: s.to_dict() for s in self.replicates} if self.replicates else None
            ),
            "metric": self.metric,
            "unit": "problem",
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "observe": self.observe,
            "multiplicity": "Holm across tasks",
            "timeouts": "counted as failures in every metric (estimand: passes within the time budget), unless a task sets timeout_policy: excluded",
            "adjusted_pvalues": self.adjusted_pvalues,
            "adjusted_verdicts": self.adjusted_verdicts,
            "skipped_tasks": self.skipped_tasks,
            "reasons": self.reasons,
            "incomplete": self.incomplete,
            "tasks": [t.to_dict() for t in self.tasks],
        }


def _noise_by_task(
    run_noise: str | os.PathLike[str] | Mapping[str, float] | None,
) -> dict[str, float] | None:
    if run_noise is None:
        return None
    if isinstance(run_noise, (str, os.PathLike)):
        from ._noise import load_run_noise

        return {t: float(rec["run_variance"]) for t, rec in load_run_noise(run_noise).items()}
    out = {}
    for t, v in run_noise.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise UsageError(f"run_noise[{t!r}] must be a number >= 0, got {v!r}")
        out[t] = float(v)
    return out


def _noise_notes(noise: dict[str, float] | None, names: list[str]) -> list[str]:
    from ._noise import VALIDITY_NOTE

    if noise is None:
        return [VALIDITY_NOTE]
    notes = []
    for t in names:
        if t in noise:
            notes.append(
                f"{t}: interval and p-value include the measured run-level variance "
                f"(2 x {noise[t]:.3g}: one run per side)"
            )
        else:
            notes.append(
                f"{t}: no measured run-level noise for this task: problem-level test alone "
                "(assumes the problems of one run are independent)"
            )
    return notes


@dataclass(frozen=True)
class Overall:
    """The overall decision over several comparisons (see :func:`decide_overall`)."""

    verdict: GateVerdict
    exit_code: int
    verdicts: dict[str, ComparisonVerdict]
    adjusted_pvalues: dict[str, float | None]
    notes: list[str]


def decide_overall(
    comparisons: Mapping[str, Comparison],
    *,
    alpha: float,
    forced: set[str] | frozenset[str] = frozenset(),
) -> Overall:
    """Holm across ``comparisons`` (:func:`gate_decision`), then two rules on top:

    * a comparison in ``forced`` (its verdict did not survive a worst-case bound) stays
      inconclusive;
    * an improvement (or a significant change below the threshold) whose own interval lies
      above 0 keeps its verdict when Holm removes its significance. Holm guards the blocking
      decision, "worse", and an interval that excludes every drop can never block; only the
      label of a non-blocking change would move, and "inconclusive" would claim that a drop
      is possible where the interval excludes it. Such labels are per comparison, not
      multiplicity-adjusted, and say so in ``notes``.
    """
    gate = gate_decision(comparisons, alpha=alpha)
    verdicts: dict[str, ComparisonVerdict] = {}
    notes: list[str] = []
    for key, gm in gate.metrics.items():
        comp = comparisons[key]
        v = gm.verdict
        if key in forced:
            v = "inconclusive"
        elif (
            v == "inconclusive"
            and comp.verdict in ("improvement", "significant_below_threshold")
            and comp.ci_low is not None
            and comp.ci_low > 0
        ):
            v = comp.verdict
            notes.append(
                f"{key}: {verdict_label(v)} kept although Holm removes its significance: its interval "
                f"[{comp.ci_low:+.4f}, {comp.ci_high:+.4f}] excludes every drop, so it cannot block "
                "(the label is not multiplicity-adjusted)"
            )
        verdicts[key] = v
    values = set(verdicts.values())
    if "regression" in values:
        return Overall("regression", EXIT_NEGATIVE, verdicts, dict(gate.adjusted_pvalues), notes)
    if values & {"inconclusive", "insufficient_evidence"}:
        return Overall(
            "inconclusive", EXIT_INCONCLUSIVE, verdicts, dict(gate.adjusted_pvalues), notes
        )
    return Overall("pass", EXIT_OK, verdicts, dict(gate.adjusted_pvalues), notes)


def compare_runs(
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    *,
    metric: str = "pass@1",
    options: CompareOptions | None = None,
    threshold: float | None = None,
    alpha: float = 0.05,
    confidence_level: float | None = None,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = 0,
    power: float = 0.8,
    tasks: list[str] | None = None,
    unmatched: Literal["error", "exclude"] | None = None,
    require_provenance: bool = False,
    observe: bool = False,
    allow_incomplete: bool = False,
    run_noise: str | os.PathLike[str] | Mapping[str, float] | None = None,
    task_map: Mapping[str, str] | list[str] | None = None,
    baseline_replicates: Sequence[str | os.PathLike[str]] = (),
    candidate_replicates: Sequence[str | os.PathLike[str]] = (),
) -> CompareResult:
    """Compare a candidate run with a baseline (run directory or baseline file), task by task.

    Exit code of the result: 1 when any task shows an established regression (Holm across
    tasks), 3 when any task is inconclusive or lacks evidence, or a baseline task has no
    counterpart in the candidate (unless ``tasks`` names the tasks to compare), 0
    otherwise; with ``observe`` always 0. Input errors raise ``UsageError`` (exit 2), also
    under ``observe`` when nothing could be compared; an incomplete run raises ``RunError``
    (exit 4) unless ``allow_incomplete``, and then the result carries its missing counts.

    The statistical settings (``threshold`` to ``power``) are keywords or one
    :class:`CompareOptions` (``options``), not both; a ``threshold`` of None is the metric's
    default (:func:`default_threshold`).

    Tasks pair by name; ``task_map`` (``{BASE: CAND}`` or ``["BASE=CAND"]``) pairs others
    explicitly, and a baseline task with no counterpart of its name pairs with the candidate
    task whose problems match its own by content hash (the result says so). The result's
    ``changed`` lists the recorded settings that differ between the sides.

    ``unmatched``: problems that changed content or exist on one side only. ``"error"``
    refuses (exit 2), ``"exclude"`` leaves them out and lists them; ``None`` (the default)
    leaves them out of tasks paired by content and refuses for the others
    (:func:`unmatched_policy`).

    ``run_noise``: the endpoint's run-level variance of one run's mean per task (a mapping,
    or a file from :func:`save_run_noise`), measured from A/A replicates. Each side is one
    run, so the effect's variance gains twice it (:attr:`PairedInput.run_variance`).
    Without it the result's ``reasons`` say what the problem-level test assumes
    (:data:`VALIDITY_NOTE`).

    ``baseline_replicates``/``candidate_replicates``: more runs of a side's configuration
    that differ only in the run seed (refused otherwise, ``UsageError``). Each side's
    pass@1 counts are pooled over its runs and the effect's variance gains
    ``v_baseline / n_runs_baseline + v_candidate / n_runs_candidate``, each ``v`` measured from the
    side's own runs (:func:`compare_replicate_frames`); a side of one run takes ``v`` from
    ``run_noise`` when given, else from the other side. The result's ``replicates`` and
    each task's ``run_level`` say which.
    """
    keywords = CompareOptions(
        threshold=threshold,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=rng,
        power=power,
    )
    opts = one_of(options, keywords, CompareOptions(), "compare_runs")
    metric = canonical_metric(metric)
    from ._sequential_run import refuse_sequential

    refuse_sequential(
        baseline,
        candidate,
        hint="`rolleval compare BASE RUN` with its own BASE (compare_sequential_run)",
    )
    by_baseline = load_frames(baseline)
    by_candidate = load_frames(candidate)
    if baseline_replicates or candidate_replicates:
        refuse_metric(metric, [])
    if run_noise is not None and metric != REPLICATE_METRIC:
        raise UsageError(
            f"a run-noise file gives the run-level variance of {REPLICATE_METRIC}, not of "
            f"{metric}: compare {REPLICATE_METRIC} with --run-noise, or drop --run-noise"
        )
    level = load_run_level(
        (baseline, by_baseline),
        (candidate, by_candidate),
        run_noise=run_noise,
        baseline_replicates=baseline_replicates,
        candidate_replicates=candidate_replicates,
    )
    sides = level.sides
    pairs = pair_tasks(
        by_baseline,
        by_candidate,
        tasks=tasks,
        task_map=parse_task_map(task_map),
        sources=(baseline, candidate),
    )
    incomplete = incomplete_runs(pairs, (baseline, by_baseline), (candidate, by_candidate), sides)
    if not allow_incomplete:
        refuse_incomplete(incomplete)
    skipped, reasons = _unpaired(by_baseline, by_candidate, pairs, named=bool(tasks))
    for item in incomplete:
        reasons.append(
            f"the {item['side']} is incomplete (status {item['run_status']!r}, task {item['task']!r}: "
            f"{item['missing_rollouts']} of {item['requested_rollouts']} rollouts missing); "
            "compared under --allow-incomplete"
        )
    settings = TaskSettings(
        metric=metric,
        options=opts,
        unmatched=unmatched,
        require_provenance=require_provenance,
    )
    results = [compare_pair(pair, by_baseline, by_candidate, level, settings) for pair in pairs]
    reasons.extend(level.notes(results))
    changed = what_changed(
        side_record(baseline, {t: fr.settings for t, fr in by_baseline.items()}),
        side_record(candidate, {t: fr.settings for t, fr in by_candidate.items()}),
        [(p.baseline, p.candidate) for p in pairs],
    )
    label_sides(results, changed)
    if observe and all(r.comparison.n_problems == 0 for r in results):
        counts = "; ".join(f"{r.task}: {len(r.alignment.ids)} matched" for r in results)
        raise UsageError(
            f"nothing could be compared: no problem has a value for {metric} on both sides "
            f"({counts}); choose another --metric or check the runs"
        )
    overall = decide_overall(
        {r.task: r.comparison for r in results},
        alpha=opts.alpha,
        forced={r.task for r in results if r.forced_inconclusive},
    )
    verdict, code = overall.verdict, overall.exit_code
    if code == EXIT_OK and skipped and any(v.endswith("not evaluated") for v in skipped.values()):
        verdict, code = "inconclusive", EXIT_INCONCLUSIVE
    return CompareResult(
        baseline=str(baseline),
        candidate=str(candidate),
        metric=metric,
        tasks=results,
        verdict=verdict,
        exit_code=EXIT_OK if observe else code,
        adjusted_pvalues=overall.adjusted_pvalues,
        adjusted_verdicts=dict(overall.verdicts),
        skipped_tasks=skipped,
        reasons=[*reasons, *overall.notes],
        incomplete=incomplete,
        observe=observe,
        changed=changed,
        replicates=sides,
    )


def incomplete_runs(
    pairs: list[TaskPair],
    baseline: tuple[str | os.PathLike[str], Mapping[str, ProblemFrame]],
    candidate: tuple[str | os.PathLike[str], Mapping[str, ProblemFrame]],
    sides: tuple[SideRuns, SideRuns] | None,
    candidate_label: str = "candidate",
) -> list[dict[str, Any]]:
    """The paired tasks' missing rollouts, per run of each side (replicates included);
    ``candidate_label`` names the candidate side (``"run"`` for ``rolleval gate``)."""
    (b_path, by_b), (c_path, by_c) = baseline, candidate
    label = {"baseline": "baseline", "candidate": candidate_label}
    out = [
        *check_complete({p.baseline: by_b[p.baseline] for p in pairs}, b_path, "baseline"),
        *check_complete({p.candidate: by_c[p.candidate] for p in pairs}, c_path, candidate_label),
    ]
    for side in sides or ():
        names = [p.baseline if side.role == "baseline" else p.candidate for p in pairs]
        for path, frames in zip(side.paths[1:], side.frames[1:]):
            out += check_complete({t: frames[t] for t in names}, path, label[side.role])
    return out


@dataclass(frozen=True)
class RunLevelInputs:
    """What a comparison is told of the run-level variance (docs/contract.md, "Run-level
    noise"): a run-noise file's ``v`` per task, replicate runs per side, both, or neither
    (the problem-level test alone, with :data:`VALIDITY_NOTE`). Built by
    :func:`load_run_level`; ``rolleval compare`` and ``rolleval gate`` share it.

    Attributes
    ----------
    noise : dict of str to float or None
        Per task, the run-noise file's run-level variance of one run's mean.
    sides : tuple of SideRuns or None
        Both sides' runs when replicate runs were given.
    noise_file : str or None
        The run-noise file as given (None: a mapping, or no file).
    """

    noise: dict[str, float] | None = None
    sides: tuple[SideRuns, SideRuns] | None = None
    noise_file: str | None = None

    @property
    def given(self) -> bool:
        """A run-noise file or replicate runs were given."""
        return self.noise is not None or self.sides is not None

    @property
    def source(self) -> str:
        """Where ``v`` comes from, in one phrase (the gate's summary line)."""
        if self.sides is not None:
            b, c = self.sides
            runs = f"baseline {b.summary}, candidate {c.summary}"
            both = "; run-noise file for a side of one run" if self.noise is not None else ""
            return f"replicate runs ({runs}){both}"
        if self.noise is not None:
            where = f" {self.noise_file}" if self.noise_file else ""
            return f"run-noise file{where} (one run per side: 2 v per comparison)"
        return "none: assumed 0 (the problem-level test alone)"

    def notes(self, results: Sequence[TaskComparison]) -> list[str]:
        """The reasons' run-level lines: per task where ``v`` comes from, and
        :data:`VALIDITY_NOTE` whenever a task's run-level variance is assumed away."""
        if self.sides is None:
            return _noise_notes(self.noise, [tc.task for tc in results])
        return _run_level_notes(list(results))


def load_run_level(
    baseline: tuple[str | os.PathLike[str], dict[str, ProblemFrame]],
    candidate: tuple[str | os.PathLike[str], dict[str, ProblemFrame]],
    *,
    run_noise: str | os.PathLike[str] | Mapping[str, float] | None = None,
    baseline_replicates: Sequence[str | os.PathLike[str]] = (),
    candidate_replicates: Sequence[str | os.PathLike[str]] = (),
) -> RunLevelInputs:
    """Read a comparison's run-level inputs: the run-noise file (or mapping) and each side's
    replicate runs, checked (:func:`load_side`: ``UsageError`` naming the run directory, the
    setting and the fix). ``baseline``/``candidate``: each side's first run and its frames."""
    noise = _noise_by_task(run_noise)
    sides = None
    if baseline_replicates or candidate_replicates:
        sides = (
            load_side("baseline", baseline[0], baseline_replicates, first_frames=baseline[1]),
            load_side("candidate", candidate[0], candidate_replicates, first_frames=candidate[1]),
        )
    noise_file = str(run_noise) if isinstance(run_noise, (str, os.PathLike)) else None
    return RunLevelInputs(noise, sides, noise_file)


def compare_pair(
    pair: TaskPair,
    by_baseline: Mapping[str, ProblemFrame],
    by_candidate: Mapping[str, ProblemFrame],
    level: RunLevelInputs,
    settings: TaskSettings,
) -> TaskComparison:
    """One pair of tasks compared: pooled over replicate runs when there are any, else one
    run per side with the run-level variance of a noise file (twice ``v``: one run a side)."""
    noise = level.noise
    if level.sides is not None:
        return compare_task_replicates(
            [f[pair.baseline] for f in level.sides[0].frames],
            [f[pair.candidate] for f in level.sides[1].frames],
            settings,
            noise.get(pair.baseline) if noise is not None else None,
            pair,
        )
    return compare_task(
        by_baseline[pair.baseline],
        by_candidate[pair.candidate],
        settings,
        run_variance=2.0 * noise.get(pair.baseline, 0.0) if noise is not None else 0.0,
        pair=pair,
    )


def _run_level_notes(results: list[TaskComparison]) -> list[str]:
    """Each task's run-level notes (replicate runs), and :data:`VALIDITY_NOTE` when a task's
    run-level variance is not known at all."""
    from ._noise import VALIDITY_NOTE

    notes = []
    for tc in results:
        assert tc.run_level is not None
        notes += [f"{tc.task}: {n}" for n in tc.run_level.notes]
    if any(tc.run_level is not None and not tc.run_level.known for tc in results):
        notes.append(VALIDITY_NOTE)
    return notes


def label_sides(comparisons: list[TaskComparison], changed: WhatChanged) -> None:
    """Name each comparison's sides as people know them (model and run directory)."""
    for tc in comparisons:
        tc.sides["baseline"]["label"] = changed.baseline.text
        tc.sides["candidate"]["label"] = changed.candidate.text


def _unpaired(
    baseline: Mapping[str, ProblemFrame],
    candidate: Mapping[str, ProblemFrame],
    pairs: list[TaskPair],
    *,
    named: bool,
) -> tuple[dict[str, str], list[str]]:
    """Tasks left out of ``pairs`` (unless the user named the tasks) and why."""
    skipped: dict[str, str] = {}
    reasons: list[str] = []
    if named:
        return skipped, reasons
    paired_b = {p.baseline for p in pairs}
    paired_c = {p.candidate for p in pairs}
    missing = [t for t in baseline if t not in paired_b]
    for t in missing:
        skipped[t] = "only in the baseline: not evaluated"
    for t in candidate:
        if t not in paired_c:
            skipped.setdefault(t, "only in the candidate: no baseline to compare with")
    if missing:
        reasons.append(
            f"baseline task(s) {', '.join(missing)} have no counterpart in the candidate: not "
            "evaluated (name the tasks to compare with --task, or pair them with --task-map BASE=CAND)"
        )
    return skipped, reasons
