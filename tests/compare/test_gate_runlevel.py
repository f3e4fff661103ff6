"""rolleval gate with run-level noise (issue 26): replicate runs per side and run-noise files
through compare's own code path, the notes that say which v was used, the refusals, the CLI."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from conftest import run_cli
from rolleval.compare import (
    VALIDITY_NOTE,
    PairedInput,
    compare_runs,
    gate_run,
    load_policy,
    paired_compare,
)
from rolleval.compare._frame import load_frames, save_baseline
from rolleval.errors import UsageError
from rolleval.stats import run_noise
from rolleval.testing._synthetic import write_synthetic_run

TASK = "synthetic_math"
#: Each run's common shock: every true rate of the run moved by the same amount (an A/A
#: pair of one configuration whose runs differ by a run-level offset, not by the model).
BASE_SHIFTS = {0: 0.04, 1: -0.03, 2: 0.0, 3: 0.02}
CAND_SHIFTS = {10: -0.05, 11: 0.03, 12: 0.01, 13: -0.01}


def _shocked(tmp_path: Path, name: str, shifts: dict[int, float]) -> list[str]:
    """Runs of one benchmark (rng=5), each with its own seed and run-level shift."""
    return [
        str(
            write_synthetic_run(
                tmp_path / f"{name}{s}",
                n_problems=60,
                n_rollouts=4,
                rng=5,
                outcome_rng=100 + s,
                run_seed=s,
                shift=shift,
            ).path
        )
        for s, shift in shifts.items()
    ]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[list[str], list[str]]:
    return _shocked(tmp_path, "b", BASE_SHIFTS), _shocked(tmp_path, "c", CAND_SHIFTS)


def _pass1(res: object) -> object:
    return next(tc for tc in res.comparisons if tc.metric == "pass@1")  # type: ignore[attr-defined]


def test_replicates_turn_an_aa_false_regression_into_inconclusive(
    runs: tuple[list[str], list[str]],
) -> None:
    # Fixed seeds: deterministic runs, so the verdicts below are not left to chance. The
    # first runs' shocks (+0.04 and -0.05) make one run per side a regression although both
    # sides are one configuration; the replicates measure the run-level variance.
    base, cand = runs
    one = gate_run(cand[0], base[0], n_resamples=500)
    assert one.verdict == "blocked" and one.exit_code == 1
    assert _pass1(one).comparison.verdict == "regression"
    assert VALIDITY_NOTE in one.reasons
    assert one.run_variance_source.startswith("none: assumed 0")
    four = gate_run(
        cand[0],
        base[0],
        n_resamples=500,
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
    )
    comp = _pass1(four).comparison
    assert comp.verdict == "inconclusive" and four.verdict == "inconclusive"
    assert four.exit_code == 3
    assert comp.run_variance > 0 and comp.run_level_df is not None
    assert VALIDITY_NOTE not in four.reasons
    assert four.replicates is not None and four.replicates[0].seeds == (0, 1, 2, 3)
    assert four.run_variance_source.startswith("replicate runs (baseline 4 runs")
    # the gate's pass@1 comparison is compare's, by the same code
    same = compare_runs(
        base[0],
        cand[0],
        n_resamples=500,
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
    )
    assert same.tasks[0].comparison == comp
    # the other gating comparison (unextracted_rate) is said to assume no run-level variance
    assert any(
        "unextracted_rate: the run-level variance is measured on pass@1" in r for r in four.reasons
    )


def test_combined_se_and_df_are_the_contract_formula_by_hand(
    runs: tuple[list[str], list[str]],
) -> None:
    base, cand = runs
    res = gate_run(
        cand[0],
        base[0],
        n_resamples=2000,
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
    )
    comp = _pass1(res).comparison
    frames_b = [load_frames(p)[TASK] for p in base]
    frames_c = [load_frames(p)[TASK] for p in cand]
    cb, nb = np.array([f.c for f in frames_b]), np.array([f.n for f in frames_b])
    cc, nc = np.array([f.c for f in frames_c]), np.array([f.n for f in frames_c])
    big = [a.sum(0) for a in (cb, nb, cc, nc)]
    d = [Fraction(int(c1), int(n1)) - Fraction(int(c0), int(n0)) for c0, n0, c1, n1 in zip(*big)]
    assert comp.effect == pytest.approx(float(sum(d) / len(d)), rel=1e-12)
    # the problem-level SE: the sample SD of the pooled differences over sqrt(T), exactly
    mean = sum(d) / len(d)
    var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    se2 = var / len(d)
    plain = paired_compare(
        PairedInput(
            big[0] / big[1],
            big[2] / big[3],
            c_baseline=big[0],
            n_baseline=big[1],
            c_candidate=big[2],
            n_candidate=big[3],
            value_range=(0.0, 1.0),
        ),
        n_resamples=2000,
        rng=0,
    )
    assert plain.se == pytest.approx(math.sqrt(float(se2)), rel=1e-12)
    mb, mc = run_noise(cb, nb), run_noise(cc, nc)
    # v of each side by hand: Var of the run means (ddof 1) less the binomial part
    means_b = [Fraction(int(c), 1) for c in cb.sum(1)]
    assert all(n == 240 for n in nb.sum(1))  # every problem scored 4 times in every run
    m_b = [m / 240 for m in means_b]
    s2_b = sum((x - sum(m_b) / 4) ** 2 for x in m_b) / 3
    assert mb.variance == pytest.approx(float(s2_b), rel=1e-12)
    rv = mb.run_variance / 4 + mc.run_variance / 4
    rv_se = math.sqrt(2 * (mb.variance / 4) ** 2 / 3 + 2 * (mc.variance / 4) ** 2 / 3)
    total = math.sqrt(float(se2) + rv)
    df = total**4 / (float(se2) ** 2 / 59 + rv_se**2 / 2)
    assert comp.run_variance == pytest.approx(rv, rel=1e-12)
    assert comp.se == pytest.approx(total, rel=1e-12)
    assert comp.run_level_df == pytest.approx(df, rel=1e-9)
    p = max(plain.pvalue, 2 * sps.t.sf(abs(plain.effect) / total, df))
    assert comp.pvalue == pytest.approx(p, rel=1e-9)
    stretch = total / plain.se * sps.t.isf(0.025, df) / sps.norm.isf(0.025)
    assert comp.ci_low == pytest.approx(plain.effect + stretch * (plain.ci_low - plain.effect))
    assert comp.ci_high == pytest.approx(plain.effect + stretch * (plain.ci_high - plain.effect))


def test_run_noise_file_widens_pass1_only_and_replaces_the_validity_note(
    runs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    base, cand = runs
    v = 4e-4
    noise = tmp_path / "noise.json"
    noise.write_text(
        json.dumps(
            {"format": "rolleval-run-noise", "version": 1, "tasks": {TASK: {"run_variance": v}}}
        )
    )
    res = gate_run(cand[0], base[0], n_resamples=500, run_noise=str(noise))
    comp = _pass1(res).comparison
    assert comp.run_variance == pytest.approx(2 * v, rel=1e-15)
    assert comp.run_level_df is None  # a file's v is used as known: normal reference
    plain = _pass1(gate_run(cand[0], base[0], n_resamples=500)).comparison
    assert comp.se == pytest.approx(math.sqrt(plain.se**2 + 2 * v), rel=1e-12)
    other = next(tc for tc in res.comparisons if tc.metric == "unextracted_rate")
    assert other.comparison.run_variance == 0.0
    assert VALIDITY_NOTE not in res.reasons
    assert any("measured run-level variance (2 x 0.0004" in r for r in res.reasons)
    assert (
        res.run_variance_source == f"run-noise file {noise} (one run per side: 2 v per comparison)"
    )
    # the policy may name the file, relative to itself
    pol = tmp_path / "pol" / "policy.yaml"
    pol.parent.mkdir()
    (pol.parent / "n.json").write_text(noise.read_text())
    pol.write_text("run_noise: n.json\nmetrics:\n  pass@1: {threshold: 0.02}\n")
    by_policy = gate_run(cand[0], base[0], n_resamples=500, policy=load_policy(pol))
    assert _pass1(by_policy).comparison == comp
    assert len(by_policy.comparisons) == 1


def test_a_policy_gating_no_pass1_refuses_run_level_inputs(
    runs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    base, cand = runs
    pol = tmp_path / "health.yaml"
    pol.write_text("health:\n  unextracted_rate: {max_increase: 0.01}\n")
    with pytest.raises(UsageError, match=r"does not gate: add `pass@1"):
        gate_run(cand[0], base[0], policy=load_policy(pol), baseline_replicates=base[1:2])


def test_a_saved_baseline_serves_when_it_records_its_seed(
    runs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    base, cand = runs
    files = []
    for i, path in enumerate(base):
        out = tmp_path / f"base{i}.json"
        save_baseline(path, out)
        doc = json.loads(out.read_text())
        doc["measurement"] = {"seed": i}  # what `rolleval run --seed` records
        out.write_text(json.dumps(doc))
        files.append(str(out))
    by_file = gate_run(
        cand[0],
        files[0],
        n_resamples=500,
        baseline_replicates=files[1:],
        candidate_replicates=cand[1:],
    )
    by_dir = gate_run(
        cand[0],
        base[0],
        n_resamples=500,
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
    )
    assert _pass1(by_file).comparison == _pass1(by_dir).comparison


def _refused(tmp_path: Path, *args: str) -> str:
    out, html = tmp_path / "out.json", tmp_path / "out.html"
    r = run_cli("gate", *args, "--output", str(out), "--html", str(html))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert not out.exists() and not html.exists() and r.stdout == ""
    return lines[0]


def test_cli_refusals_exit_2_in_one_line_naming_the_file_and_the_fix(
    runs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    base, cand = runs
    other = str(
        write_synthetic_run(tmp_path / "x", n_problems=60, n_rollouts=5, rng=5, run_seed=7).path
    )
    line = _refused(tmp_path, cand[0], "--baseline", base[0], "--baseline-replicate", other)
    assert other in line and "rollouts per problem" in line and "rerun it" in line
    line = _refused(tmp_path, cand[0], "--baseline", base[0], "--candidate-replicate", cand[0])
    assert cand[0] in line and "run seed 10" in line and "another --seed" in line
    saved = tmp_path / "saved.json"
    save_baseline(base[0], saved)  # a synthetic run records its seed in config only
    line = _refused(tmp_path, cand[0], "--baseline", str(saved), "--baseline-replicate", base[1])
    assert str(saved) in line and "records no run seed" in line and "rolleval baseline save" in line
    line = _refused(
        tmp_path, cand[0], "--baseline", base[0], "--run-noise", str(tmp_path / "none.json")
    )
    assert "none.json" in line and "run-noise file" in line


def test_cli_end_to_end_in_every_format(runs: tuple[list[str], list[str]], tmp_path: Path) -> None:
    base, cand = runs
    args = [cand[0], "--baseline", base[0], "--n-resamples", "300"]
    for b in base[1:]:
        args += ["--baseline-replicate", b]
    for c in cand[1:]:
        args += ["--candidate-replicate", c]
    out = tmp_path / "gate.json"
    r = run_cli("gate", *args, "--format", "json", "--output", str(out))
    assert r.returncode == 3, r.stderr
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "inconclusive"
    assert doc["replicates"]["baseline"]["seeds"] == [0, 1, 2, 3]
    assert doc["replicates"]["candidate"]["summary"] == "4 runs (seeds 10, 11, 12, 13)"
    assert doc["run_variance_source"].startswith("replicate runs")
    level = next(c for c in doc["comparisons"] if c["metric"] == "pass@1")["run_level"]
    assert level["baseline"]["source"] == level["candidate"]["source"] == "own replicates"
    assert VALIDITY_NOTE not in doc["reasons"]
    for fmt in ("text", "md", "github"):
        r = run_cli("gate", *args, "--format", fmt)
        assert r.returncode == 3, fmt
        assert "run-level variance of pass@1: replicate runs" in r.stdout, fmt
        assert "baseline: 4 runs (seeds 0, 1, 2, 3)" in r.stdout, fmt
        assert "own replicates" in r.stdout and "v_baseline/n_runs_baseline" in r.stdout, fmt
        assert "cannot check this" not in r.stdout, fmt
    plain = run_cli(
        "gate", cand[0], "--baseline", base[0], "--n-resamples", "300", "--format", "md"
    )
    assert plain.returncode == 1
    assert "run-level variance of pass@1: none: assumed 0" in plain.stdout
    assert "cannot check this" in plain.stdout
    html = tmp_path / "gate.html"
    r = run_cli("gate", *args, "--format", "json", "--html", str(html))
    page = html.read_text()
    assert "4 runs (seeds 0, 1, 2, 3)" in page and "own replicates" in page
    assert "replicate runs (baseline 4 runs" in page
