"""A tiny run of bench/calibration.py's issue 10 settings (the full study is not a unit test)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _calibration():
    path = Path(__file__).resolve().parents[2] / "bench" / "calibration.py"
    spec = importlib.util.spec_from_file_location("rolleval_calibration", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_tiny_calibration_of_false_equivalence_and_common_k(capsys):
    cal = _calibration()
    settings = cal.Settings(problems=200, rollouts=8, resamples=500, seed=3)
    # a true drop of 2 tau on 10 greedy problems is never called equivalent
    out = cal.false_equivalence(settings, 10, 1, False, range(30))
    assert not out["equivalent"].any()
    out = cal.false_equivalence(settings, 20, 4, True, range(30))
    assert not out["equivalent"].any()
    # maj@n A/A with 16 against 4 rollouts: compared at k = 4, no systematic regression
    votes = cal.vote_aa(settings, 100, 16, 4, range(20))
    assert votes["maj"].sum() <= 2 and votes["sc"].sum() <= 2
    # the plan's size is for the regression verdict: larger when the threshold binds
    assert cal.planned_size(settings, 0.025) > cal.planned_size(settings, 0.03)
