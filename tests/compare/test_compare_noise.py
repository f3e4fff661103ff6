"""Run-level noise from A/A replicates, and compare_runs / the CLI using it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from rolleval.compare import (
    VALIDITY_NOTE,
    compare_runs,
    load_run_noise,
    measure_run_noise,
    save_run_noise,
)
from rolleval.compare._frame import load_frames
from rolleval.errors import UsageError
from rolleval.stats import run_noise
from rolleval.testing._synthetic import write_synthetic_run


def _replicates(tmp_path: Path, k: int = 4) -> list[Path]:
    # one benchmark (rng=5), k samplings of it: A/A replicates
    return [
        write_synthetic_run(
            tmp_path / f"r{i}", n_problems=80, n_rollouts=8, rng=5, outcome_rng=100 + i
        ).path
        for i in range(k)
    ]


def test_measure_run_noise_is_run_noise_of_the_count_matrix(tmp_path: Path) -> None:
    runs = _replicates(tmp_path)
    noise = measure_run_noise(runs)
    frames = [load_frames(r)["synthetic_math"] for r in runs]
    expected = run_noise(np.array([f.c for f in frames]), np.array([f.n for f in frames]))
    assert noise["synthetic_math"] == expected
    out = tmp_path / "noise.json"
    save_run_noise(out, noise, runs)
    back = load_run_noise(out)
    assert back["synthetic_math"]["run_variance"] == expected.run_variance


def test_compare_without_noise_says_what_it_assumes(tmp_path: Path) -> None:
    runs = _replicates(tmp_path, 2)
    res = compare_runs(runs[0], runs[1], n_resamples=500)
    assert VALIDITY_NOTE in res.reasons
    assert res.tasks[0].comparison.run_variance == 0.0


def test_compare_with_noise_widens_by_twice_the_run_variance(tmp_path: Path) -> None:
    runs = _replicates(tmp_path, 2)
    plain = compare_runs(runs[0], runs[1], n_resamples=500).tasks[0].comparison
    v = 1e-4
    wide = compare_runs(runs[0], runs[1], n_resamples=500, run_noise={"synthetic_math": v})
    comp = wide.tasks[0].comparison
    assert comp.run_variance == 2 * v
    assert comp.se == pytest.approx((plain.se**2 + 2 * v) ** 0.5, rel=1e-12)
    assert VALIDITY_NOTE not in wide.reasons
    assert any("measured run-level variance" in r for r in wide.reasons)
    other = compare_runs(runs[0], runs[1], n_resamples=500, run_noise={"elsewhere": v})
    assert other.tasks[0].comparison.run_variance == 0.0
    assert any("no measured run-level noise" in r for r in other.reasons)


def test_bad_noise_inputs_are_usage_errors(tmp_path: Path) -> None:
    runs = _replicates(tmp_path, 2)
    with pytest.raises(UsageError, match="at least 2 runs"):
        measure_run_noise(runs[:1])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(UsageError, match="not a run-noise file"):
        load_run_noise(bad)
    bad.write_text(
        json.dumps({"format": "rolleval-run-noise", "tasks": {"t": {"run_variance": -1}}})
    )
    with pytest.raises(UsageError, match="run_variance"):
        load_run_noise(bad)
    with pytest.raises(UsageError, match="run_noise"):
        compare_runs(runs[0], runs[1], n_resamples=200, run_noise={"synthetic_math": -1.0})
    # v is measured on pass@1 run means: another metric does not take it (as in the gate)
    with pytest.raises(UsageError, match="run-level variance of pass@1, not of maj@n"):
        compare_runs(
            runs[0], runs[1], n_resamples=200, metric="maj@n", run_noise={"synthetic_math": 1e-4}
        )


def test_cli_noise_then_compare_with_it(tmp_path: Path) -> None:
    runs = [str(p) for p in _replicates(tmp_path, 3)]
    out = tmp_path / "noise.json"
    r = run_cli("noise", *runs, "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert "synthetic_math: 3 runs x 80 problems" in r.stdout
    assert json.loads(out.read_text())["format"] == "rolleval-run-noise"
    r = run_cli(
        "compare",
        runs[0],
        runs[1],
        "--run-noise",
        str(out),
        "--n-resamples",
        "500",
        "--format",
        "json",
    )
    doc = json.loads(r.stdout)
    v = load_run_noise(out)["synthetic_math"]["run_variance"]
    assert doc["tasks"][0]["run_variance"] == 2 * v
    r = run_cli("compare", runs[0], runs[1], "--n-resamples", "500")
    assert "cannot check this" in r.stdout
