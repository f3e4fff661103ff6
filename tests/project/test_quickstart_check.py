"""The quickstart's checks (scripts/quickstart_check.py) on a result from another machine.

``tests/data/quickstart-other-machine/`` holds the compare result and both run logs of a
quickstart run on a machine other than the one where the quickstart was written (issue 8):
there common_knowledge came out a significant regression, where the first machine had it
inconclusive. A working rolleval must pass the quickstart on both.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "quickstart-other-machine"
SCRIPT = ROOT / "scripts" / "quickstart_check.py"


def _load_checker():
    spec = importlib.util.spec_from_file_location("quickstart_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checker():
    return _load_checker()


@pytest.fixture
def other_machine() -> dict:
    return json.loads((DATA / "compare.json").read_text(encoding="utf-8"))


def test_other_machine_result_passes(checker, other_machine):
    # The result that made the old script fail: common_knowledge is a regression there.
    verdicts = {t["task"]: t["verdict"] for t in other_machine["tasks"]}
    assert verdicts == {"copycolors": "regression", "common_knowledge": "regression"}
    assert checker.check(other_machine, other_machine["exit_code"]) == []


def test_common_knowledge_is_shown_whatever_its_verdict(checker, other_machine):
    for verdict in ("regression", "inconclusive", "equivalent_within_threshold", "improvement"):
        result = copy.deepcopy(other_machine)
        for t in result["tasks"]:
            if t["task"] == "common_knowledge":
                t["verdict"] = verdict
        assert checker.check(result, 1) == []
        assert any(
            "common_knowledge" in line and verdict in line for line in checker.describe(result, 1)
        )


@pytest.mark.parametrize("verdict", ["inconclusive", "insufficient_evidence", "improvement"])
def test_copycolors_not_a_regression_fails(checker, other_machine, verdict):
    result = copy.deepcopy(other_machine)
    for t in result["tasks"]:
        if t["task"] == "copycolors":
            t["verdict"] = verdict
    problems = checker.check(result, 1)
    assert len(problems) == 1 and "copycolors" in problems[0] and verdict in problems[0]


def test_copycolors_missing_fails(checker, other_machine):
    result = copy.deepcopy(other_machine)
    result["tasks"] = [t for t in result["tasks"] if t["task"] != "copycolors"]
    assert any("copycolors" in p for p in checker.check(result, 1))


@pytest.mark.parametrize(("overall", "rc"), [("regression", 0), ("inconclusive", 1), ("pass", 0)])
def test_overall_verdict_and_exit_code_checked(checker, other_machine, overall, rc):
    result = copy.deepcopy(other_machine)
    result["verdict"] = overall
    problems = checker.check(result, rc)
    assert len(problems) == 1 and "overall" in problems[0]


def test_script_exit_codes(tmp_path, other_machine):
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(other_machine), encoding="utf-8")
    ok = subprocess.run(
        [sys.executable, str(SCRIPT), str(path), "1", str(path), "1"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "as expected" in ok.stdout
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), str(path), "0"], capture_output=True, text=True
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("quickstart: EXPECTATION FAILED")


def _pass_at_1(log: str, task: str) -> float:
    section = log.split(f"task {task} ")[1]
    match = re.search(r"^\s+pass@1\s+([0-9.]+)", section, re.M)
    assert match is not None
    return float(match.group(1))


def test_logs_match_the_compare_result(other_machine):
    """The fixture is coherent: the logs' pass@1 differences are the compare effects."""
    base = (DATA / "baseline.log").read_text(encoding="utf-8")
    cand = (DATA / "candidate.log").read_text(encoding="utf-8")
    for t in other_machine["tasks"]:
        delta = _pass_at_1(cand, t["task"]) - _pass_at_1(base, t["task"])
        assert delta == pytest.approx(t["effect"], abs=1e-4)
