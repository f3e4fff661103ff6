"""Paired comparison of a candidate against its baseline: verdicts, gate, movers, plans.

The statistical core is pure functions (arrays in, frozen result dataclasses out, no I/O);
run-level functions align run directories or baseline files and apply it.

=========================  ==========================================================
:func:`paired_compare`     one metric: effect, interval, p-value, verdict, power
``CompareOptions``         the statistical settings of a comparison (threshold, alpha...)
``ComparisonVerdict``      the six verdict words of a comparison (a ``Literal`` type)
``GateVerdict``            the three overall words of a gate (a ``Literal`` type)
``PolicyVerdict``          the four words of ``rolleval gate`` (a ``Literal`` type)
:func:`gate_decision`      several gating metrics with Holm's correction
:func:`holm`               Holm-Bonferroni adjusted p-values
:func:`problem_movers`     problems that moved most, per-problem Fisher exact tests
:func:`compare_runs`       two runs (or a baseline file and a run), task by task
:func:`gate_run`           a policy of gating metrics and health limits
:func:`save_baseline`      a compact baseline file for CI gating
:func:`plan_runs`          problems and rollouts needed to detect an effect
``PlanOptions``            what a plan is for (effect, threshold...) and its simulations
:func:`measure_run_noise`  an endpoint's run-level noise from A/A replicate runs
=========================  ==========================================================
"""

from __future__ import annotations

from .._public import publish
from ._align import Alignment, align_frames
from ._frame import HEALTH_METRICS, ProblemFrame, load_frames, metric_direction, save_baseline
from ._gate import DEFAULT_POLICY, GateResult, gate_run, load_policy
from ._holm import GateDecision, GateMetric, gate_decision, holm
from ._movers import problem_movers
from ._noise import VALIDITY_NOTE, load_run_noise, measure_run_noise, save_run_noise
from ._options import CompareOptions
from ._paired import Comparison, PairedInput, paired_compare
from ._per_task import TaskComparison, compare_frames, default_threshold
from ._plan import PlanOptions, PlanResult, TaskPlan, plan_runs
from ._rule import (
    COMPARISON_VERDICTS,
    GATE_VERDICTS,
    ComparisonVerdict,
    GateVerdict,
    PolicyVerdict,
    verdict_exit_code,
    verdict_label,
)
from ._runs import CompareResult, compare_runs

__all__ = [
    "COMPARISON_VERDICTS",
    "DEFAULT_POLICY",
    "GATE_VERDICTS",
    "HEALTH_METRICS",
    "VALIDITY_NOTE",
    "Alignment",
    "CompareOptions",
    "CompareResult",
    "Comparison",
    "ComparisonVerdict",
    "GateDecision",
    "GateMetric",
    "GateResult",
    "GateVerdict",
    "PairedInput",
    "PlanOptions",
    "PlanResult",
    "PolicyVerdict",
    "ProblemFrame",
    "TaskComparison",
    "TaskPlan",
    "align_frames",
    "compare_frames",
    "compare_runs",
    "default_threshold",
    "gate_decision",
    "gate_run",
    "holm",
    "load_frames",
    "load_policy",
    "load_run_noise",
    "measure_run_noise",
    "metric_direction",
    "paired_compare",
    "plan_runs",
    "problem_movers",
    "save_baseline",
    "save_run_noise",
    "verdict_exit_code",
    "verdict_label",
]

publish(__name__, globals(), __all__)
