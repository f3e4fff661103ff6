"""The public surface: rolleval/__init__.py and the public subpackages."""

from __future__ import annotations

import importlib
import inspect
import pickle

import pytest

import rolleval
from rolleval._public import PUBLIC_MODULES

PUBLIC_PACKAGES = [
    "rolleval.metrics",
    "rolleval.stats",
    "rolleval.grading",
    "rolleval.tasks",
    "rolleval.client",
    "rolleval.compare",
    "rolleval.drift",
    "rolleval.records",
    "rolleval.rundir",
    "rolleval.writer",
    "rolleval.errors",
    "rolleval.testing",
]


def test_top_level_all_is_sorted_and_resolves():
    assert rolleval.__all__ == sorted(rolleval.__all__)
    for name in rolleval.__all__:
        assert hasattr(rolleval, name), name


@pytest.mark.parametrize("module", PUBLIC_PACKAGES)
def test_public_packages_export_what_they_list(module):
    mod = importlib.import_module(module)
    assert mod.__all__, module
    assert len(set(mod.__all__)) == len(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.{name}"


def test_the_published_modules_are_the_public_packages():
    assert {"rolleval", *PUBLIC_PACKAGES} == PUBLIC_MODULES


@pytest.mark.parametrize("module", ["rolleval", *PUBLIC_PACKAGES])
def test_public_names_say_the_public_module_they_come_from(module):
    """Every class and function a public module lists names a public module as its
    ``__module__`` (never a private file like ``rolleval.compare._runs``), and is found there
    under its qualified name, so reprs, tracebacks and pickles point where users import."""
    mod = importlib.import_module(module)
    checked = 0
    for name in mod.__all__:
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        checked += 1
        home = obj.__module__
        assert home in PUBLIC_MODULES, f"{module}.{name}.__module__ == {home!r}"
        assert getattr(importlib.import_module(home), obj.__qualname__) is obj, (
            f"{module}.{name}: not found as {home}.{obj.__qualname__}"
        )
    assert checked > 0, module


def test_a_private_home_is_rewritten_to_the_package_that_lists_the_name():
    from rolleval import compare, records

    assert compare.compare_runs.__module__ == "rolleval.compare"
    assert rolleval.report_run.__module__ == "rolleval"  # defined in rolleval._report._api
    assert rolleval.RunConfig.__module__ == "rolleval"  # defined in rolleval._runner._config
    assert rolleval.DataError.__module__ == "rolleval.errors"  # a public module already
    assert records.RolloutRecord.__module__ == "rolleval.records"
    assert repr(compare.Comparison) == "<class 'rolleval.compare.Comparison'>"


def test_published_classes_pickle_by_their_public_path():
    from rolleval.records import Usage

    usage = Usage(prompt_tokens=3, completion_tokens=5)
    data = pickle.dumps(usage)
    assert b"rolleval.records" in data and b"rolleval.records._" not in data
    assert pickle.loads(data) == usage


def test_the_run_level_api_is_at_the_top_level():
    from rolleval import compare

    for name in ("compare_runs", "gate_run", "plan_runs", "save_baseline"):
        assert name in rolleval.__all__
        assert getattr(rolleval, name) is getattr(compare, name)


def test_a_rollouts_judgement_and_a_comparisons_verdict_have_different_names():
    """``grading.Judgement`` is what a grader made of one rollout; the outcome words of a
    comparison and of a gate are ``ComparisonVerdict`` and ``GateVerdict``: "verdict" is a
    comparison's word only, so no name of ``rolleval.grading`` holds it."""
    from typing import get_args

    from rolleval import compare, grading

    public = {name for m in PUBLIC_PACKAGES for name in importlib.import_module(m).__all__}
    assert "Judgement" in grading.__all__ and not hasattr(compare, "Verdict")
    assert [n for n in dir(grading) if "verdict" in n.lower()] == []
    assert {"ComparisonVerdict", "GateVerdict"} <= set(compare.__all__)
    assert sorted(n for n in public if n.endswith("Verdict")) == [
        "ComparisonVerdict",
        "DriftVerdict",
        "GateVerdict",
        "PolicyVerdict",
    ]
    assert set(compare.COMPARISON_VERDICTS) == set(get_args(compare.ComparisonVerdict))
    from rolleval import drift

    assert set(drift.DRIFT_VERDICTS) == set(get_args(drift.DriftVerdict))


def test_randomness_is_the_rng_keyword_in_every_public_function():
    """One keyword for randomness (``rng``, as in scipy); ``seed`` is only a recorded value."""
    # values, not randomness: permutation hashes the task's recorded ``seed`` field with the
    # problem id; complete_sync sends the OpenAI request's ``seed`` field to the server
    value_not_randomness = {"rolleval.tasks.permutation", "rolleval.client.complete_sync"}
    found = []
    for module in ["rolleval", *PUBLIC_PACKAGES, "rolleval.testing._synthetic"]:
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", dir(mod)):
            obj = getattr(mod, name)
            if inspect.isfunction(obj) and f"{module}.{name}" not in value_not_randomness:
                params = inspect.signature(obj).parameters
                assert "seed" not in params and "outcome_seed" not in params, f"{module}.{name}"
                found += [name] if "rng" in params else []
    assert {"report_run", "compare_runs", "gate_run", "write_synthetic_run"} <= set(found)


def test_every_cli_command_has_a_python_api():
    from rolleval._cli import _load_commands, cli

    _load_commands()
    api = {
        "run": rolleval.run_eval,
        "report": rolleval.report_run,
        "regrade": rolleval.regrade_run,
        "show": rolleval.show_records,
        "compare": rolleval.compare_runs,
        "gate": rolleval.gate_run,
        "baseline": rolleval.save_baseline,
        "plan": rolleval.plan_runs,
        "noise": rolleval.measure_run_noise,
        "tasks": importlib.import_module("rolleval.tasks").list_tasks,
        "example": importlib.import_module("rolleval.testing._synthetic").write_synthetic_run,
        "import": rolleval.import_run,
        "drift": importlib.import_module("rolleval.drift").measure_drift,
    }
    assert set(cli.commands) == set(api)
    assert all(callable(f) for f in api.values())


def test_version_matches_package_metadata():
    from importlib.metadata import version

    assert rolleval.__version__ == version("rolleval")
