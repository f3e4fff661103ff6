"""compare with several replicate runs per side (issue 26 item 3): pooled counts, the
run-level variance each side's replicates measure, refusals, the CLI, and calibration."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from scipy.special import expit, logit

from conftest import run_cli
from rolleval.compare import (
    VALIDITY_NOTE,
    PairedInput,
    ProblemFrame,
    compare_frames,
    compare_runs,
    paired_compare,
)
from rolleval.compare._frame import load_frames
from rolleval.compare._per_task import compare_replicate_frames
from rolleval.compare._replicates import pool_task
from rolleval.errors import UsageError
from rolleval.stats import run_noise
from rolleval.testing._synthetic import write_synthetic_run

TASK = "synthetic_math"


def _runs(tmp_path: Path, name: str, seeds: list[int], **kw: object) -> list[str]:
    """Replicates of one benchmark (rng=5): other samplings, each recording its own seed."""
    opts: dict[str, object] = {"n_problems": 30, "n_rollouts": 4, "rng": 5, **kw}
    return [
        str(
            write_synthetic_run(
                tmp_path / f"{name}{s}", outcome_rng=1000 + s, run_seed=s, **opts
            ).path  # type: ignore[arg-type]
        )
        for s in seeds
    ]


def _counts(paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    frames = [load_frames(p)[TASK] for p in paths]
    return np.array([f.c for f in frames]), np.array([f.n for f in frames])


def test_pooled_counts_and_effect_are_exact(tmp_path: Path) -> None:
    base = _runs(tmp_path, "b", [0, 1, 2], p_infra_error=0.2)
    cand = _runs(tmp_path, "c", [10, 11])
    res = compare_runs(
        base[0],
        cand[0],
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
        n_resamples=200,
    )
    tc = res.tasks[0]
    cb, nb = _counts(base)
    cc, nc = _counts(cand)
    assert tc.sides["baseline"]["correct_rollouts"] == int(cb.sum())
    assert tc.sides["baseline"]["gradable_rollouts"] == int(nb.sum())
    assert tc.sides["candidate"]["correct_rollouts"] == int(cc.sum())
    assert tc.sides["baseline"]["runs"] == 3 and tc.sides["candidate"]["runs"] == 2
    big_cb, big_nb, big_cc, big_nc = cb.sum(0), nb.sum(0), cc.sum(0), nc.sum(0)
    keep = (big_nb > 0) & (big_nc > 0)
    d = [
        Fraction(int(c1), int(n1)) - Fraction(int(c0), int(n0))
        for c0, n0, c1, n1 in zip(big_cb[keep], big_nb[keep], big_cc[keep], big_nc[keep])
    ]
    assert tc.comparison.n_problems == len(d)
    assert tc.comparison.effect == pytest.approx(float(sum(d) / len(d)), rel=1e-12)
    assert res.replicates is not None
    assert res.replicates[0].seeds == (0, 1, 2) and res.replicates[1].seeds == (10, 11)


def _frame(ids: list[str], c: list[int], n: list[int]) -> ProblemFrame:
    cc, nn = np.array(c), np.array(n)
    return ProblemFrame(
        task="t",
        ids=ids,
        hashes=[None] * len(ids),
        clusters=[None] * len(ids),
        n=nn,
        c=cc,
        requested=nn.copy(),
        values={"pass@1": cc / nn},
        settings={"grader_identity": "g", "score_key": "correct"},
    )


def test_a_problem_missing_from_one_replicate_is_unmatched() -> None:
    ids = ["a", "b", "c"]
    full = [_frame(ids, [1, 2, 3], [4, 4, 4]), _frame(ids, [0, 4, 1], [4, 4, 4])]
    short = _frame(["a", "c"], [2, 2], [4, 4])
    pooled = pool_task([full[0], short])
    assert pooled.frame.ids == ["a", "c"]
    assert pooled.frame.c.tolist() == [3, 5] and pooled.frame.n.tolist() == [8, 8]
    assert pooled.c.tolist() == [[1, 3], [2, 2]]
    with pytest.raises(UsageError, match="1 only in candidate"):
        compare_replicate_frames([full[0], short], full, n_resamples=100)
    tc = compare_replicate_frames([full[0], short], full, n_resamples=100, unmatched="exclude")
    assert tc.comparison.n_problems == 2


def test_v_is_run_noise_of_each_sides_replicates(tmp_path: Path) -> None:
    base = _runs(tmp_path, "b", [0, 1, 2], p_infra_error=0.25)
    cand = _runs(tmp_path, "c", [10, 11, 12, 13])
    res = compare_runs(
        base[0],
        cand[0],
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
        n_resamples=200,
    )
    rl = res.tasks[0].run_level
    assert rl is not None
    cb, nb = _counts(base)
    cc, nc = _counts(cand)
    compared = (nb.sum(0) >= 1) & (nc.sum(0) >= 1)
    cols_b = compared & np.all(nb >= 1, axis=0)
    assert 0 < cols_b.sum() < compared.sum()  # some problems unscored in some baseline run
    assert rl.baseline.measured == run_noise(cb[:, cols_b], nb[:, cols_b])
    cols_c = compared & np.all(nc >= 1, axis=0)
    assert rl.candidate.measured == run_noise(cc[:, cols_c], nc[:, cols_c])
    vb, vc = rl.baseline.measured.run_variance, rl.candidate.measured.run_variance
    assert rl.run_variance == pytest.approx(vb / 3 + vc / 4, rel=1e-15)
    assert rl.baseline.source == rl.candidate.source == "own replicates"
    assert VALIDITY_NOTE not in res.reasons


def test_widened_interval_is_the_contract_formula_by_hand(tmp_path: Path) -> None:
    # a real shock: the candidate's replicates differ in a per-run offset of the rates
    base = _runs(tmp_path, "b", [0, 1, 2], n_problems=60, n_rollouts=6)
    rates = sps.beta(2, 2).rvs(60, random_state=np.random.default_rng(5))
    cand = [
        str(
            write_synthetic_run(
                tmp_path / f"c{s}",
                n_problems=60,
                n_rollouts=6,
                rng=5,
                outcome_rng=50 + s,
                run_seed=20 + s,
                true_rates=rates,
                shift=shift,
            ).path
        )
        for s, shift in enumerate([0.0, 0.12, -0.1])
    ]
    # the shift is recorded in the run id only, not in a setting: these are replicates
    res = compare_runs(
        base[0],
        cand[0],
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
        n_resamples=2000,
    )
    comp, rl = res.tasks[0].comparison, res.tasks[0].run_level
    assert rl is not None and rl.run_variance > 0
    cb, nb = _counts(base)
    cc, nc = _counts(cand)
    big = [a.sum(0) for a in (cb, nb, cc, nc)]
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
    assert plain.se is not None and plain.ci_low is not None and plain.ci_high is not None
    mb, mc = run_noise(cb, nb), run_noise(cc, nc)
    rv = mb.run_variance / 3 + mc.run_variance / 3
    rv_se = math.sqrt(2 * (mb.variance / 3) ** 2 / 2 + 2 * (mc.variance / 3) ** 2 / 2)
    total = math.sqrt(plain.se**2 + rv)
    df = total**4 / (plain.se**4 / 59 + rv_se**2 / 2)
    stretch = total / plain.se * sps.t.isf(0.025, df) / sps.norm.isf(0.025)
    assert comp.run_variance == pytest.approx(rv, rel=1e-12)
    assert comp.run_level_df == pytest.approx(df, rel=1e-9)
    assert comp.se == pytest.approx(total, rel=1e-12)
    assert comp.ci_low == pytest.approx(plain.effect + stretch * (plain.ci_low - plain.effect))
    assert comp.ci_high == pytest.approx(plain.effect + stretch * (plain.ci_high - plain.effect))
    p = max(plain.pvalue, 2 * sps.t.sf(abs(plain.effect) / total, df))
    assert comp.pvalue == pytest.approx(p, rel=1e-9)


def test_one_run_side_borrows_or_takes_the_file_and_says_so(tmp_path: Path) -> None:
    base = _runs(tmp_path, "b", [0, 1, 2, 3])
    cand = _runs(tmp_path, "c", [10, 11])
    borrowed = compare_runs(base[0], cand[0], baseline_replicates=base[1:], n_resamples=200)
    rl = borrowed.tasks[0].run_level
    assert rl is not None and rl.candidate.source == "baseline replicates"
    assert rl.run_variance == pytest.approx(rl.baseline.variance * (1 / 4 + 1), rel=1e-15)
    assert VALIDITY_NOTE not in borrowed.reasons
    assert any("one candidate run cannot check" in r for r in borrowed.reasons)
    v = 3e-4
    filed = compare_runs(
        base[0], cand[0], baseline_replicates=base[1:], run_noise={TASK: v}, n_resamples=200
    )
    rl = filed.tasks[0].run_level
    assert rl is not None and rl.candidate.source == "run-noise file"
    assert rl.run_variance == pytest.approx(rl.baseline.variance / 4 + v, rel=1e-15)
    assert rl.baseline.source == "own replicates"
    both = compare_runs(
        base[0],
        cand[0],
        baseline_replicates=base[1:],
        candidate_replicates=cand[1:],
        run_noise={TASK: v},
        n_resamples=200,
    )
    rl = both.tasks[0].run_level
    assert rl is not None and rl.candidate.source == "own replicates"
    assert any("not the run-noise file's" in r for r in both.reasons)


def _refused(tmp_path: Path, *args: str) -> str:
    out, html = tmp_path / "out.json", tmp_path / "out.html"
    r = run_cli("compare", *args, "--output", str(out), "--html", str(html))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert not out.exists() and not html.exists() and r.stdout == ""
    return lines[0]


def test_refusals_exit_2_in_one_line_and_write_nothing(tmp_path: Path) -> None:
    base = _runs(tmp_path, "b", [0, 1])
    cand = _runs(tmp_path, "c", [10])
    other = _runs(tmp_path, "x", [2], n_rollouts=5)[0]
    line = _refused(tmp_path, base[0], cand[0], "--baseline-replicate", other)
    assert other in line and "rollouts per problem" in line and "rerun it" in line
    same_seed = _runs(tmp_path, "s", [10])[0]  # seed 10, as the candidate's first run
    line = _refused(tmp_path, base[0], cand[0], "--candidate-replicate", same_seed)
    assert same_seed in line and "run seed 10" in line and "another --seed" in line
    line = _refused(
        tmp_path, base[0], cand[0], "--baseline-replicate", base[1], "--metric", "pass@2"
    )
    assert "pass@2" in line and "pass@1" in line


def test_cli_end_to_end_in_every_format(tmp_path: Path) -> None:
    base = _runs(tmp_path, "b", [0, 1, 2])
    cand = _runs(tmp_path, "c", [10, 11])
    args = [base[0], cand[0], "--n-resamples", "300"]
    args += ["--baseline-replicate", base[1], "--baseline-replicate", base[2]]
    args += ["--candidate-replicate", cand[1]]
    out = tmp_path / "res.json"
    r = run_cli("compare", *args, "--format", "json", "--output", str(out))
    assert r.returncode in (0, 3), r.stderr
    doc = json.loads(out.read_text())
    assert doc["replicates"]["baseline"]["seeds"] == [0, 1, 2]
    assert doc["replicates"]["candidate"]["summary"] == "2 runs (seeds 10, 11)"
    assert doc["replicates"]["baseline"]["label"] == doc["what_changed"]["baseline"]["label"]
    level = doc["tasks"][0]["run_level"]
    assert level["baseline"]["n_runs"] == 3 and level["baseline"]["source"] == "own replicates"
    assert level["baseline"]["measured"]["df"] == 2
    assert doc["tasks"][0]["run_variance"] == level["run_variance"]
    label = doc["what_changed"]["baseline"]["label"]
    for fmt in ("text", "md", "github"):
        r = run_cli("compare", *args, "--format", fmt)
        assert "baseline: 3 runs (seeds 0, 1, 2)" in r.stdout, fmt
        assert f"3 runs (seeds 0, 1, 2): {label}" in r.stdout, fmt
        assert "own replicates" in r.stdout and "v_baseline/n_runs_baseline" in r.stdout
        assert "cannot check this" not in r.stdout
    html = tmp_path / "res.html"
    r = run_cli("compare", *args, "--html", str(html))
    page = html.read_text()
    assert "3 runs (seeds 0, 1, 2)" in page and "own replicates" in page


# ----------------------------------------------------------------------- calibration

T, N, SIGMA, SIMS = 100, 8, 0.15, 400


def _shocked_frame(rng: np.random.Generator, logits: np.ndarray, ids: list[str]) -> ProblemFrame:
    """One run: every problem's logit moved by the run's common offset, N rollouts each."""
    c = rng.binomial(N, expit(logits + rng.normal(0.0, SIGMA)))
    return _frame(ids, c.tolist(), [N] * T)


def test_calibration_replicates_absorb_a_run_level_shock() -> None:
    """A/A with a per-run logit offset (SD 0.15): one run per side over-alarms; four
    replicates per side keep each false verdict near alpha/2 = 0.025.

    400 simulations, 200 resamples each (bench/calibration_replicates.py --sims 400 draws
    the same): one run per side 75/400 = 0.19 false regressions; four per side 7/400
    regressions and 6/400 improvements (at 2,000 simulations 0.177 against 0.022 and
    0.021: docs/contract.md). The bounds: one run >= 0.09 (at a true rate of 0.177 that
    fails with chance below 1e-6); four runs <= 0.055 per direction (at a true rate of
    0.022, 23 or more of 400 has chance below 1e-4).
    """
    rng = np.random.default_rng(2026)
    logits = logit(np.random.default_rng(0).beta(2.0, 2.0, T))
    ids = [f"p{i:03d}" for i in range(T)]
    one = four_reg = four_imp = 0
    for s in range(SIMS):
        runs = [_shocked_frame(rng, logits, ids) for _ in range(8)]
        one += compare_frames(runs[0], runs[4], n_resamples=200, rng=s).comparison.verdict == (
            "regression"
        )
        v = compare_replicate_frames(runs[:4], runs[4:], n_resamples=200, rng=s).comparison
        four_reg += v.verdict == "regression"
        four_imp += v.verdict == "improvement"
    assert one / SIMS >= 0.09
    assert four_reg / SIMS <= 0.055 and four_imp / SIMS <= 0.055
