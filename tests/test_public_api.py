"""The public surface: rolleval/__init__.py and the public subpackages."""

from __future__ import annotations

import importlib

import pytest

import rolleval

PUBLIC_PACKAGES = [
    "rolleval.metrics",
    "rolleval.stats",
    "rolleval.grading",
    "rolleval.tasks",
    "rolleval.client",
    "rolleval.compare",
    "rolleval.records",
    "rolleval.writer",
    "rolleval.errors",
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


def test_every_cli_command_has_a_python_api():
    from rolleval.cli import _load_commands, cli

    _load_commands()
    api = {
        "run": rolleval.run_eval,
        "report": rolleval.report_run,
        "regrade": rolleval.regrade_run,
        "show": rolleval.show_records,
        "compare": importlib.import_module("rolleval.compare").compare_runs,
        "gate": importlib.import_module("rolleval.compare").gate_run,
        "baseline": importlib.import_module("rolleval.compare").save_baseline,
        "plan": importlib.import_module("rolleval.compare").plan_runs,
        "tasks": importlib.import_module("rolleval.tasks").list_tasks,
        "example": importlib.import_module("rolleval.synthetic").write_synthetic_run,
        "import": rolleval.import_run,
    }
    assert set(cli.commands) == set(api)
    assert all(callable(f) for f in api.values())


def test_version_matches_package_metadata():
    from importlib.metadata import version

    assert rolleval.__version__ == version("rolleval")
