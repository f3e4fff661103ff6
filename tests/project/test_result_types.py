"""The run-level API returns frozen, documented result types (issue 23 item 4) that carry
exactly what the dicts they replace carried: the key lists below are those of the dicts
``plan_runs``, ``import_run`` and ``save_baseline`` returned before, in their order (the
JSON that ``rolleval plan --format json``, the manifest's ``"import"`` and the baseline
file hold, which must not change)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from conftest import run_cli, synthetic_pair
from rolleval import ImportResult, import_run
from rolleval.compare import (
    CompareResult,
    GateDecision,
    GateResult,
    PlanResult,
    TaskComparison,
    TaskPlan,
    compare_runs,
    gate_decision,
    gate_run,
    plan_runs,
    save_baseline,
)
from rolleval.records import BaselineFile
from rolleval.testing._synthetic import write_synthetic_run

TRACELENS = Path(__file__).parents[1] / "data" / "imports" / "tracelens"

PLAN_KEYS = ["effect", "threshold", "alpha", "power", "verdict", "unit", "assumption", "tasks"]
PLAN_TASK_KEYS = [
    "problems",
    "components",
    "assumption",
    "status",
    "mde_current",
    "regression_power_current",
    "required_problems_significance",
    "equivalence_problems",
    "required_problems_normal",
    "required_problems",
    "power_planned",
    "required_rollouts_at_current_problems",
]
PLAN_UNAVAILABLE_KEYS = ["problems", "components", "assumption", "status", "reason"]
IMPORT_KEYS = ["format", "source", "correctness", "regrade_grader", "tasks", "totals"]
IMPORT_TASK_KEYS = [
    "problems",
    "rollouts",
    "correctness",
    "aligned_by",
    "unmapped",
    "notes",
    "source_metrics",
]
BASELINE_KEYS = [
    "schema_version",
    "format",
    "rolleval_version",
    "run_id",
    "model",
    "provenance",
    "measurement",
    "run_status",
    "tasks",
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return synthetic_pair(tmp_path_factory.mktemp("pair"), shift=-0.1, n_problems=60)


def _assert_frozen(obj: Any, name: str) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, name, getattr(obj, name))


def test_compare_result_and_its_task_comparisons_are_frozen(pair):
    res = compare_runs(*pair, n_resamples=500)
    assert isinstance(res, CompareResult) and isinstance(res.tasks[0], TaskComparison)
    for name in ("verdict", "exit_code", "tasks", "reasons", "changed"):
        _assert_frozen(res, name)
    for name in ("comparison", "sides", "warnings", "forced_inconclusive"):
        _assert_frozen(res.tasks[0], name)
    assert res.verdict in ("regression", "inconclusive", "pass")
    assert set(res.adjusted_verdicts) == {"synthetic_math"}


def test_the_gate_result_is_frozen_and_gate_decision_has_its_own_name(pair):
    b, c = pair
    res = gate_run(c, b, n_resamples=500)
    assert isinstance(res, GateResult)
    for name in ("verdict", "exit_code", "checks", "comparisons"):
        _assert_frozen(res, name)
    assert res.verdict in ("pass", "blocked", "inconclusive", "run_failed")
    decision = gate_decision({"pass@1": res.comparisons[0].comparison})
    assert isinstance(decision, GateDecision) and decision.method == "holm"
    _assert_frozen(decision, "verdict")
    import rolleval.compare as compare

    assert not hasattr(compare, "GateOutcome")  # one name for the gate's result


def test_plan_result_carries_the_plan_dicts_keys(pair):
    b, c = pair
    res = plan_runs(b, c, effect=0.05, sequential=True, n_sims=20)
    assert isinstance(res, PlanResult) and isinstance(res.tasks["synthetic_math"], TaskPlan)
    _assert_frozen(res, "tasks")
    _assert_frozen(res.tasks["synthetic_math"], "required_problems")
    doc = res.to_dict()
    assert list(doc) == PLAN_KEYS
    assert list(doc["tasks"]["synthetic_math"]) == [*PLAN_TASK_KEYS, "sequential"]
    task = res.tasks["synthetic_math"]
    assert doc["tasks"]["synthetic_math"]["required_problems"] == task.required_problems
    assert task.status == "ok" and task.sequential is not None
    # a drop not above the threshold: the note, and each task's reason, no size
    below = plan_runs(b, effect=0.01).to_dict()
    assert list(below) == [*PLAN_KEYS, "note"]
    assert list(below["tasks"]["synthetic_math"]) == [*PLAN_TASK_KEYS, "reason"]
    assert below["tasks"]["synthetic_math"]["required_problems"] is None


def test_a_task_without_a_plan_carries_the_unavailable_dicts_keys(tmp_path):
    pilot = write_synthetic_run(tmp_path / "one", n_problems=20, n_rollouts=1).path
    task = plan_runs(pilot).tasks["synthetic_math"]
    assert task.status == "unavailable" and task.required_problems is None
    assert list(task.to_dict()) == PLAN_UNAVAILABLE_KEYS
    assert (
        task.reason
        == task.components["reason"]
        == "fewer than 2 problems (0): no variance across problems; with one rollout per "
        "problem give --candidate: the paired variance is then estimated from the two runs"
    )


def test_plan_lists_missing_tasks_last_and_only_when_there_are_some():
    plan = PlanResult(0.04, 0.02, 0.05, 0.8, "normal", {}, missing_tasks=["other"])
    assert list(plan.to_dict()) == [*PLAN_KEYS, "missing_tasks"]
    assert "missing_tasks" not in dataclasses.replace(plan, missing_tasks=[]).to_dict()


def test_plan_json_output_is_the_results_dict(pair):
    b, _ = pair
    proc = run_cli("plan", str(b), "--effect", "0.05", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout) == plan_runs(b, effect=0.05).to_dict()


def test_import_result_is_the_manifests_import_summary(tmp_path):
    source = TRACELENS / "baseline.trials.json"
    res = import_run("tracelens", source, tmp_path / "run")
    assert isinstance(res, ImportResult)
    _assert_frozen(res, "tasks")
    (task,) = res.tasks.values()
    _assert_frozen(task, "problems")
    manifest = orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())
    doc = res.to_dict()
    assert doc == manifest["import"]
    assert list(doc) == IMPORT_KEYS
    assert list(doc["tasks"][next(iter(res.tasks))]) == IMPORT_TASK_KEYS
    assert doc["totals"] == {"tasks": 1, "problems": task.problems, "rollouts": task.rollouts}
    assert res.correctness == task.correctness == "source" and res.regrade_grader is None


def test_import_calls_on_task_with_each_tasks_result(tmp_path):
    seen = []
    res = import_run(
        "tracelens",
        TRACELENS / "baseline.trials.json",
        tmp_path / "run",
        on_task=lambda task, result: seen.append((task.name, result)),
    )
    assert seen == list(res.tasks.items())


def test_save_baseline_returns_the_frozen_file_it_wrote(pair, tmp_path):
    b, _ = pair
    base = save_baseline(b, tmp_path / "base.json")
    assert isinstance(base, BaselineFile)
    with pytest.raises(ValidationError, match="frozen"):
        base.run_id = "other"
    written = json.loads((tmp_path / "base.json").read_text())
    assert base.model_dump(mode="json") == written
    assert list(base.model_dump(mode="json")) == BASELINE_KEYS  # the file sorts them
    assert list(base.tasks["synthetic_math"].ids) == written["tasks"]["synthetic_math"]["ids"]
