"""`rolleval import`: real files written by the real tools (tests/data/imports/*/README.md).

Round trip: pass@1 of an import equals the tool's own accuracy for the same task. A/A and
A/B: two samplings of the same serving do not compare as a regression; the degraded serving
(rope_freq_scale 0.8) does. TraceLens: ``rolleval compare`` on TraceLens's own compare
fixtures gives the effect and verdict ``tracelens compare`` printed (recorded in the README).
Bad input: one-line exit 2 and no run directory left behind.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import orjson
import pytest

from conftest import call_in_thread, run_main
from rolleval import import_run, report_run
from rolleval._cli import main
from rolleval._importers import FORMATS, detect_format
from rolleval.compare import compare_runs
from rolleval.errors import DataError, UsageError

DATA = Path(__file__).parents[1] / "data" / "imports"
TRACELENS = DATA / "tracelens"


def _pass1(run: Path, task: str | None = None) -> float:
    report = report_run(run, write=False).report
    tasks = report["tasks"]
    rep = tasks[task] if task else next(iter(tasks.values()))
    return rep["metrics"]["pass@1"]["value"]


def _no_leftovers(parent: Path) -> None:
    """No run directory and no temporary import folder left in ``parent``."""
    assert [p.name for p in parent.iterdir()] == []


# --- TraceLens: same answer as `tracelens compare` on its own fixtures -----------------------


def _tracelens_recorded() -> dict[str, dict[str, float | str | int]]:
    """What `tracelens compare baseline X` printed, parsed from the fixture README."""
    text = (TRACELENS / "README.md").read_text()
    out = {}
    for block in text.split("$ tracelens compare baseline.trials.json ")[1:]:
        name = block.split(".trials.json", 1)[0]
        m = re.search(r"delta = ([+-][0-9.]+)\s+95% CI \[([+-][0-9.]+), ([+-][0-9.]+)\]", block)
        v = re.search(r"Verdict: (.+?) \(exit (\d)\)", block)
        assert m and v, name
        out[name] = {
            "effect": float(m[1]),
            "lo": float(m[2]),
            "hi": float(m[3]),
            "verdict": v[1],
            "exit": int(v[2]),
        }
    assert set(out) == {"regressed", "improved", "noisy", "baseline"}
    return out


# TraceLens verdict text -> rolleval verdict, and the documented exit-code difference
# (TraceLens exits 2 for "inconclusive"; rolleval keeps 2 for input errors and exits 3).
_VERDICTS = {
    "REGRESSION": ("regression", 1),
    "IMPROVEMENT": ("improvement", 0),
    "inconclusive: more runs or tasks needed": ("inconclusive", 3),
    "equivalent within the practical threshold": ("equivalent_within_threshold", 0),
}


@pytest.fixture(scope="module")
def tracelens_runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tl")
    runs = {}
    for name in ("baseline", "regressed", "improved", "noisy"):
        import_run("tracelens", TRACELENS / f"{name}.trials.json", root / name)
        runs[name] = root / name
    return runs


@pytest.mark.parametrize("candidate", ["regressed", "improved", "noisy", "baseline"])
def test_tracelens_compare_fixtures_give_tracelens_answer(tracelens_runs, candidate):
    expected = _tracelens_recorded()[candidate]
    res = compare_runs(tracelens_runs["baseline"], tracelens_runs[candidate], threshold=0.03)
    (task,) = res.tasks
    c = task.comparison
    # Same estimand (mean over tasks of the per-task pass-rate difference): the effect is the
    # same number; the bootstrap intervals agree to TraceLens's printed precision or nearly
    # (different random streams over 16 tasks).
    assert c.effect == pytest.approx(expected["effect"], abs=5e-5)
    assert c.ci_low == pytest.approx(expected["lo"], abs=0.01)
    assert c.ci_high == pytest.approx(expected["hi"], abs=0.01)
    verdict, exit_code = _VERDICTS[expected["verdict"]]
    if candidate == "baseline":
        # A run against itself: TraceLens says equivalent; rolleval needs a bound on the
        # share of problems that moved (none of 16 did) inside the threshold, which 16
        # problems cannot give (docs/contract.md, "Equivalence needs a bound").
        assert verdict == "equivalent_within_threshold"
        verdict, exit_code = "insufficient_evidence", 3
        assert c.n_moved == 0
    assert c.verdict == verdict
    assert res.exit_code == exit_code
    if expected["exit"] != exit_code:
        assert (expected["exit"], exit_code) in ((2, 3), (0, 3))  # the documented differences
    assert task.alignment.by == "content_hash"


def test_tracelens_records_map_trials(tracelens_runs):
    run = tracelens_runs["noisy"]
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    summary = manifest["import"]
    assert summary["format"] == "tracelens"
    assert summary["totals"] == {"tasks": 1, "problems": 16, "rollouts": 32}
    trials = orjson.loads((TRACELENS / "noisy.trials.json").read_bytes())["trials"]
    judgements = [
        orjson.loads(line)
        for line in (run / "tasks" / "compare-fixture" / "judgements.jsonl")
        .read_bytes()
        .splitlines()
    ]
    got = {(j["problem_id"], j["index"]): j["correct"] for j in judgements}
    want = {
        (t["task_id"], t["run_index"]): all(o["passed"] for o in t["outcomes"])
        and bool(t["outcomes"])
        for t in trials
    }
    assert got == want
    hashes = orjson.loads((TRACELENS / "noisy.trials.json").read_bytes())["provenance"][
        "measurement"
    ]["task_hashes"]
    prompts = [
        orjson.loads(line)
        for line in (run / "tasks" / "compare-fixture" / "prompts.jsonl").read_bytes().splitlines()
    ]
    assert {p["problem_id"]: p["content_hash"] for p in prompts} == hashes


def test_tracelens_statuses_map_to_harness_failures(tmp_path):
    data = orjson.loads((TRACELENS / "noisy.trials.json").read_bytes())
    statuses = ["infra_error", "timeout", "skipped", "failed"]
    for trial, status in zip(data["trials"][:4], statuses):
        trial["status"] = status
        trial["error_message"] = f"boom ({status})"
    data["trials"][4]["outcomes"][0]["grader_error"] = True
    src = tmp_path / "edited.trials.json"
    src.write_bytes(orjson.dumps(data))
    import_run("tracelens", src, tmp_path / "run")
    lines = (tmp_path / "run" / "tasks" / "compare-fixture" / "judgements.jsonl").read_bytes()
    js = [orjson.loads(x) for x in lines.splitlines()]
    by_key = {(j["problem_id"], j["index"]): j for j in js}
    t = data["trials"]
    assert by_key[(t[0]["task_id"], t[0]["run_index"])]["status"] == "infra_error"
    assert by_key[(t[1]["task_id"], t[1]["run_index"])]["status"] == "timeout"
    assert by_key[(t[2]["task_id"], t[2]["run_index"])]["status"] == "skipped"
    failed = by_key[(t[3]["task_id"], t[3]["run_index"])]
    assert failed["status"] == "ok" and "correct" in failed  # agent failure = model failure
    crashed = by_key[(t[4]["task_id"], t[4]["run_index"])]
    assert "grader_error" in crashed and "correct" not in crashed
    rep = report_run(tmp_path / "run", write=False).report["tasks"]["compare-fixture"]
    assert rep["rollouts"]["gradable"] == 32 - 4  # infra, timeout, skipped, grader crash


# --- bad input: one line, exit 2, nothing left behind ----------------------------------------


def test_wrong_format_names_the_format_source_looks_like(tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_main(
        capsys, "import", "lm-eval", str(TRACELENS / "baseline.trials.json"), "--out", str(out)
    )
    assert code == 2
    assert "looks like tracelens output, not lm-eval" in err
    assert "rolleval import tracelens" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()
    assert detect_format(TRACELENS / "baseline.trials.json") == "tracelens"


def test_truncated_trials_file_is_one_line_exit_2_and_no_run(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    data = (TRACELENS / "baseline.trials.json").read_bytes()
    bad = src / "cut.trials.json"
    bad.write_bytes(data[: len(data) // 2])
    parent = tmp_path / "runs"
    parent.mkdir()
    code, _, err = run_main(capsys, "import", "tracelens", str(bad), "--out", str(parent / "r"))
    assert code == 2
    assert str(bad) in err and "truncated" in err
    assert err.count("\n") == 1
    _no_leftovers(parent)


def test_duplicate_trial_ids_are_refused(tmp_path, capsys):
    data = orjson.loads((TRACELENS / "noisy.trials.json").read_bytes())
    data["trials"].append(dict(data["trials"][0]))
    src = tmp_path / "dup.trials.json"
    src.write_bytes(orjson.dumps(data))
    parent = tmp_path / "runs"
    parent.mkdir()
    code, _, err = run_main(capsys, "import", "tracelens", str(src), "--out", str(parent / "r"))
    assert code == 2
    assert "duplicate trial (task_id, run_index)" in err and str(src) in err
    _no_leftovers(parent)


def test_failure_after_tasks_were_written_leaves_nothing(tmp_path, monkeypatch):
    """A crash late in the import (here: the report) removes the half-built run."""
    import rolleval._report._api as api

    def boom(*a, **k):
        raise DataError("simulated failure while reporting")

    monkeypatch.setattr(api, "report_run", boom)
    parent = tmp_path / "runs"
    parent.mkdir()
    with pytest.raises(DataError, match="simulated"):
        import_run("tracelens", TRACELENS / "noisy.trials.json", parent / "r")
    _no_leftovers(parent)


def test_existing_out_is_refused_untouched(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="already exists"):
        import_run("tracelens", TRACELENS / "noisy.trials.json", out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_unknown_format_and_missing_source(tmp_path, capsys):
    code, _, err = run_main(capsys, "import", "nope", str(TRACELENS), "--out", str(tmp_path / "r"))
    assert code == 2 and "nope" in err
    code, _, err = run_main(
        capsys, "import", "tracelens", str(tmp_path / "missing.json"), "--out", str(tmp_path / "r")
    )
    assert code == 2 and "missing.json" in err and "not found" in err
    assert set(FORMATS) == {"lm-eval", "inspect", "lighteval", "tracelens", "sieval"}


# --- lm-evaluation-harness ---------------------------------------------------------------------

LMEVAL = DATA / "lm-eval"


def _lmeval_results(variant: str) -> dict:
    (path,) = (LMEVAL / variant).glob("results_*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def lmeval_runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lm")
    runs = {}
    for variant in ("seed1", "seed2", "degraded"):
        import_run("lm-eval", LMEVAL / variant, root / variant)
        import_run(
            "lm-eval", LMEVAL / variant, root / f"{variant}-regraded", regrade="short_answer"
        )
        runs[variant] = root / variant
        runs[f"{variant}-regraded"] = root / f"{variant}-regraded"
    return runs


@pytest.mark.parametrize("variant", ["seed1", "seed2", "degraded"])
def test_lmeval_round_trip_pass1_equals_exact_match(lmeval_runs, variant):
    """Without --regrade: one rollout per document (take_first), lm-eval's own verdict."""
    expected = _lmeval_results(variant)["results"]["copycolors_local"]["exact_match,last-word"]
    assert _pass1(lmeval_runs[variant]) == pytest.approx(expected, abs=1e-12)
    summary = orjson.loads((lmeval_runs[variant] / "manifest.json").read_bytes())["import"]
    task = summary["tasks"]["copycolors_local"]
    assert (task["problems"], task["rollouts"]) == (100, 100)
    assert task["source_metrics"]["exact_match,last-word"] == expected
    assert any("take_first" in n and "300 later repeats" in n for n in task["notes"])
    assert {
        "field": "resps[0][1:]",
        "reason": "repeats without a per-repeat score (take_first)",
        "count": 300,
    } in task["unmapped"]
    assert summary["correctness"] == "source"


def test_lmeval_regrade_imports_every_repeat_and_keeps_source_verdicts(lmeval_runs):
    run = lmeval_runs["seed1-regraded"]
    summary = orjson.loads((run / "manifest.json").read_bytes())["import"]
    assert summary["correctness"] == "regraded"
    assert summary["regrade_grader"]["type"] == "short_answer"
    assert summary["totals"]["rollouts"] == 400
    tdir = run / "tasks" / "copycolors_local"
    judged = [orjson.loads(x) for x in (tdir / "judgements.jsonl").read_bytes().splitlines()]
    assert len(judged) == 400 and {j["grader"] for j in judged} == {"short_answer@1"}
    prev = [orjson.loads(x) for x in (tdir / "judgements.prev.jsonl").read_bytes().splitlines()]
    assert {j["grader"] for j in prev} == {"lm-eval:copycolors_local:exact_match[last-word]@1.0"}
    # every repeat's raw text is stored exactly as lm-eval logged it
    (samples,) = (LMEVAL / "seed1").glob("samples_*.jsonl")
    first = orjson.loads(samples.read_bytes().splitlines()[0])
    rolls = [orjson.loads(x) for x in (tdir / "rollouts.jsonl").read_bytes().splitlines()]
    assert [r["text"] for r in rolls if r["problem_id"] == str(first["doc_id"])] == first["resps"][
        0
    ]


def test_lmeval_prompt_and_hash_are_the_request_as_sent(lmeval_runs):
    (samples,) = (LMEVAL / "seed2").glob("samples_*.jsonl")
    first = orjson.loads(samples.read_bytes().splitlines()[0])
    sent = json.loads(first["arguments"]["gen_args_0"]["arg_0"][0])
    prompt = orjson.loads(
        (lmeval_runs["seed2"] / "tasks" / "copycolors_local" / "prompts.jsonl")
        .read_bytes()
        .splitlines()[0]
    )
    assert prompt["prompt"] == sent
    assert prompt["reference"] == first["target"]
    from rolleval.records import content_hash

    assert prompt["content_hash"] == content_hash(sent, first["target"])


def test_lmeval_aa_is_not_a_regression(lmeval_runs):
    for suffix in ("", "-regraded"):
        res = compare_runs(lmeval_runs[f"seed1{suffix}"], lmeval_runs[f"seed2{suffix}"])
        assert res.tasks[0].alignment.by == "content_hash"
        assert res.tasks[0].comparison.verdict != "regression"
        assert res.exit_code != 1


def test_lmeval_ab_degraded_serving_is_a_regression(lmeval_runs):
    """All four repeats (--regrade) give the evidence; take_first's one repeat does not."""
    res = compare_runs(lmeval_runs["seed1-regraded"], lmeval_runs["degraded-regraded"])
    assert res.tasks[0].comparison.verdict == "regression"
    assert res.exit_code == 1
    code = main(
        ["compare", str(lmeval_runs["seed1-regraded"]), str(lmeval_runs["degraded-regraded"])]
    )
    assert code == 1


def test_lmeval_single_samples_file_and_cli_summary(tmp_path, capsys):
    (samples,) = (LMEVAL / "seed1").glob("samples_*.jsonl")
    assert main(["import", "lm-eval", str(samples), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "1 task(s), 100 problems, 100 rollouts" in out
    assert "not mapped: resps[0][1:]" in out
    assert _pass1(tmp_path / "r") == pytest.approx(0.12)


def test_lmeval_truncated_samples_file_names_the_line(tmp_path, capsys):
    (samples,) = (LMEVAL / "seed1").glob("samples_*.jsonl")
    data = samples.read_bytes()
    cut = tmp_path / samples.name
    cut.write_bytes(data[: len(data) - 500])
    (results,) = (LMEVAL / "seed1").glob("results_*.json")
    shutil.copy(results, tmp_path)
    parent = tmp_path / "runs"
    parent.mkdir()
    code, _, err = run_main(capsys, "import", "lm-eval", str(cut), "--out", str(parent / "r"))
    assert code == 2
    assert f"{cut}:100:" in err and "truncated" in err
    _no_leftovers(parent)


def test_lmeval_duplicate_doc_ids_are_refused(tmp_path, capsys):
    (samples,) = (LMEVAL / "seed1").glob("samples_*.jsonl")
    lines = samples.read_bytes().splitlines(keepends=True)
    dup = tmp_path / samples.name
    dup.write_bytes(b"".join(lines + lines[:1]))  # two logs of the task concatenated
    (results,) = (LMEVAL / "seed1").glob("results_*.json")
    shutil.copy(results, tmp_path)
    parent = tmp_path / "runs"
    parent.mkdir()
    code, _, err = run_main(capsys, "import", "lm-eval", str(dup), "--out", str(parent / "r"))
    assert code == 2
    assert f"{dup}:101:" in err and "duplicate doc_id '0'" in err
    _no_leftovers(parent)


def test_import_regrade_math_from_a_thread_matches_the_main_thread(tmp_path):
    """import --regrade math (which grades with workers=0) called from a thread other than
    the main thread judges as on the main thread (before the fix: UsageError, math-verify's
    alarm needs the main thread). CopyColors answers are words: most are unextracted."""
    import_run("lm-eval", LMEVAL / "seed1", tmp_path / "main", regrade="math")
    call_in_thread(import_run, "lm-eval", LMEVAL / "seed1", tmp_path / "thread", regrade="math")

    def judgements(run: Path) -> list[dict]:
        path = run / "tasks" / "copycolors_local" / "judgements.jsonl"
        return [orjson.loads(x) for x in path.read_bytes().splitlines()]

    judged = judgements(tmp_path / "thread")
    assert judged == judgements(tmp_path / "main") and len(judged) == 400
    assert not any("grader_error" in j for j in judged)
    assert any("extracted" in j for j in judged)


def test_lmeval_non_take_first_filter_needs_regrade(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(LMEVAL / "seed1", src)
    (results,) = src.glob("results_*.json")
    data = json.loads(results.read_text())
    data["configs"]["copycolors_local"]["filter_list"][0]["filter"][-1]["function"] = (
        "majority_vote"
    )
    results.write_text(json.dumps(data))
    with pytest.raises(DataError, match="pass --regrade TYPE"):
        import_run("lm-eval", src, tmp_path / "r")
    assert not (tmp_path / "r").exists()
    import_run("lm-eval", src, tmp_path / "r", regrade="short_answer")
    assert (tmp_path / "r" / "manifest.json").exists()


def test_wrong_format_for_a_folder(tmp_path, capsys):
    code, _, err = run_main(
        capsys, "import", "tracelens", str(LMEVAL / "seed1"), "--out", str(tmp_path / "r")
    )
    assert code == 2 and "looks like lm-eval output, not tracelens" in err


# --- Inspect AI ----------------------------------------------------------------------------------

INSPECT = DATA / "inspect"


def _inspect_log(variant: str) -> Path:
    (path,) = (INSPECT / variant).glob("*.eval")
    return path


def _inspect_accuracy(path: Path) -> float:
    with zipfile.ZipFile(path) as zf:
        header = json.loads(zf.read("header.json"))
    (score,) = header["results"]["scores"]
    assert score["reducer"] == "mean"
    return score["metrics"]["accuracy"]["value"]


@pytest.fixture(scope="module")
def inspect_runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inspect")
    runs = {}
    for variant in ("seed1", "seed2", "degraded"):
        import_run("inspect", INSPECT / variant, root / variant)
        runs[variant] = root / variant
    return runs


@pytest.mark.parametrize("variant", ["seed1", "seed2", "degraded"])
def test_inspect_round_trip_pass1_equals_accuracy(inspect_runs, variant):
    """Epochs reduced by mean: Inspect's accuracy is the mean over samples of the per-sample
    mean over epochs, which is pass@1."""
    expected = _inspect_accuracy(_inspect_log(variant))
    assert _pass1(inspect_runs[variant]) == pytest.approx(expected, abs=1e-12)
    summary = orjson.loads((inspect_runs[variant] / "manifest.json").read_bytes())["import"]
    (task,) = summary["tasks"].values()
    assert task["problems"] == 40 and task["rollouts"] == 80  # 40 samples x 2 epochs
    assert task["aligned_by"] == "content_hash"


def test_inspect_records_carry_text_tokens_and_answer(inspect_runs):
    log = _inspect_log("seed1")
    with zipfile.ZipFile(log) as zf:
        name = sorted(n for n in zf.namelist() if n.startswith("samples/"))[0]
        sample = json.loads(zf.read(name))
    tdir = next((inspect_runs["seed1"] / "tasks").iterdir())
    rolls = [orjson.loads(x) for x in (tdir / "rollouts.jsonl").read_bytes().splitlines()]
    r = next(
        x
        for x in rolls
        if x["problem_id"] == str(sample["id"]) and x["index"] == sample["epoch"] - 1
    )
    assert r["text"] == sample["output"]["choices"][0]["message"]["content"]
    assert r["usage"]["completion_tokens"] == sample["output"]["usage"]["output_tokens"]
    prompts = [orjson.loads(x) for x in (tdir / "prompts.jsonl").read_bytes().splitlines()]
    p = next(x for x in prompts if x["problem_id"] == str(sample["id"]))
    assert p["prompt"][0]["content"] == sample["messages"][0]["content"]
    assert p["reference"] == sample["target"]


def test_inspect_aa_not_a_regression_ab_is(inspect_runs):
    aa = compare_runs(inspect_runs["seed1"], inspect_runs["seed2"])
    assert aa.tasks[0].comparison.verdict != "regression" and aa.exit_code != 1
    ab = compare_runs(inspect_runs["seed1"], inspect_runs["degraded"])
    assert ab.tasks[0].alignment.by == "content_hash"
    assert ab.tasks[0].comparison.verdict == "regression" and ab.exit_code == 1


def _zip_with(src: Path, dst: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            zout.writestr(item, zin.read(item.filename))
        zout.writestr(name, data)
    return dst


def test_inspect_zip_path_traversal_is_refused(tmp_path, capsys):
    bad = _zip_with(_inspect_log("seed1"), tmp_path / "evil.eval", "../../outside.json", b"{}")
    parent = tmp_path / "runs"
    parent.mkdir()
    code, _, err = run_main(capsys, "import", "inspect", str(bad), "--out", str(parent / "r"))
    assert code == 2
    assert str(bad) in err and "'../../outside.json' points outside the archive" in err
    _no_leftovers(parent)
    assert not (tmp_path.parent / "outside.json").exists()


def test_inspect_zip_bomb_is_refused(tmp_path):
    bomb = _zip_with(
        _inspect_log("seed1"), tmp_path / "bomb.eval", "samples/zeros.json", b"0" * (8 << 20)
    )
    assert bomb.stat().st_size < (1 << 20)  # small on disk, 8 MB once expanded
    parent = tmp_path / "runs"
    parent.mkdir()
    with pytest.raises(DataError, match="past the limit of 4000000"):
        import_run("inspect", bomb, parent / "r", max_unzipped_bytes=4_000_000)
    _no_leftovers(parent)


def test_inspect_truncated_eval_is_one_line_exit_2(tmp_path, capsys):
    data = _inspect_log("seed1").read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[: len(data) // 2])
    code, _, err = run_main(capsys, "import", "inspect", str(cut), "--out", str(tmp_path / "r"))
    assert code == 2 and str(cut) in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


# --- SiEval ---------------------------------------------------------------------------------------

SIEVAL = DATA / "sieval"


@pytest.mark.parametrize("variant", ["seed1", "seed2", "degraded"])
def test_sieval_round_trip_pass1_equals_sieval_pass1(tmp_path, variant):
    report = json.loads((SIEVAL / variant / "report.json").read_text())
    assert report["fails"] == 0  # with no failed sample SiEval's 'requested' equals 'judged'
    import_run("sieval", SIEVAL / variant, tmp_path / "r")
    assert _pass1(tmp_path / "r") == pytest.approx(report["pass@1"] / 100, abs=1e-12)


def test_sieval_aa_not_a_regression_ab_is(tmp_path):
    for v in ("seed1", "seed2", "degraded"):
        import_run("sieval", SIEVAL / v, tmp_path / v)
    aa = compare_runs(tmp_path / "seed1", tmp_path / "seed2")
    assert aa.exit_code != 1 and aa.tasks[0].alignment.by == "content_hash"
    ab = compare_runs(tmp_path / "seed1", tmp_path / "degraded")
    assert ab.tasks[0].comparison.verdict == "regression" and ab.exit_code == 1


def test_sieval_failed_samples_are_harness_failures(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(SIEVAL / "seed1", src)
    (shard,) = src.glob("*/final/*.jsonl")
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[1:]))
    first = orjson.loads(lines[0])
    failed = {
        "sample_id": first["sample_id"],
        "iteration": 0,
        "stage": "failed",
        "preprocess_result": first["preprocess_result"],
        "error_action": "infer",
        "error_reason": "timeout",
        "error_msg": "request timed out",
    }
    fdir = shard.parent.parent / "failed"
    fdir.mkdir()
    (fdir / "0.jsonl").write_bytes(orjson.dumps(failed) + b"\n")
    import_run("sieval", src, tmp_path / "r")
    rep = report_run(tmp_path / "r", write=False).report["tasks"]
    (task,) = rep.values()
    n = len(first["feedback_result"]["rollouts"])
    assert task["rollouts"]["gradable"] == 40 * n - n
    summary = orjson.loads((tmp_path / "r" / "manifest.json").read_bytes())["import"]
    (t,) = summary["tasks"].values()
    assert any("1 samples failed" in note for note in t["notes"])


# --- lighteval ------------------------------------------------------------------------------------

LIGHTEVAL = DATA / "lighteval"


def _lighteval_em(variant: str) -> float:
    (path,) = (LIGHTEVAL / variant).rglob("results_*.json")
    return json.loads(path.read_text())["results"]["copycolors|0"]["em"]


@pytest.mark.parametrize("variant", ["seed1", "seed2"])
def test_lighteval_round_trip_pass1_equals_em(tmp_path, variant):
    import_run("lighteval", LIGHTEVAL / variant, tmp_path / "r")
    assert _pass1(tmp_path / "r") == pytest.approx(_lighteval_em(variant), abs=1e-12)


def test_lighteval_aa_not_a_regression_ab_is(tmp_path):
    for v in ("seed1", "seed2", "degraded"):
        import_run("lighteval", LIGHTEVAL / v, tmp_path / v)
    aa = compare_runs(tmp_path / "seed1", tmp_path / "seed2")
    assert aa.exit_code != 1 and aa.tasks[0].alignment.by == "content_hash"
    ab = compare_runs(tmp_path / "seed1", tmp_path / "degraded")
    assert ab.tasks[0].comparison.verdict == "regression" and ab.exit_code == 1


def test_lighteval_without_pyarrow_names_the_install(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a)
    )
    code, _, err = run_main(
        capsys, "import", "lighteval", str(LIGHTEVAL / "seed1"), "--out", str(tmp_path / "r")
    )
    assert code == 2 and "pip install 'rolleval[parquet]'" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("source", "fmt"),
    [
        (LMEVAL / "seed1", "lm-eval"),
        (INSPECT / "seed1", "inspect"),
        (LIGHTEVAL / "seed1", "lighteval"),
        (TRACELENS / "noisy.trials.json", "tracelens"),
        (SIEVAL / "seed1", "sieval"),
    ],
)
def test_every_fixture_is_recognised_as_its_own_format_only(source, fmt, tmp_path):
    assert detect_format(source) == fmt
    for other in FORMATS:
        if other != fmt:
            with pytest.raises(UsageError, match=f"looks like {fmt} output, not {other}"):
                import_run(other, source, tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_regrade_without_references_is_refused(tmp_path):
    """TraceLens trials carry no reference answers: nothing to regrade against."""
    with pytest.raises(UsageError, match="--regrade needs the reference answers"):
        import_run(
            "tracelens", TRACELENS / "noisy.trials.json", tmp_path / "r", regrade="short_answer"
        )
    assert not (tmp_path / "r").exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_same_questions_from_different_harnesses_share_content_hashes(tmp_path):
    """Every harness sent the same prompt for a question: its content hash is the same in
    every import, whatever id the harness gave it (doc_id, sample id, row number)."""
    sources = {
        "lm-eval": LMEVAL / "seed1",
        "inspect": INSPECT / "seed1",
        "sieval": SIEVAL / "seed1",
        "lighteval": LIGHTEVAL / "seed1",
    }
    hashes = {}
    for fmt, src in sources.items():
        import_run(fmt, src, tmp_path / fmt)
        (task_json,) = (tmp_path / fmt / "tasks").glob("*/task.json")
        hashes[fmt] = set(orjson.loads(task_json.read_bytes())["problem_hashes"].values())
    assert len(hashes["lm-eval"]) == 100
    for fmt in ("inspect", "sieval", "lighteval"):
        assert hashes[fmt] and hashes[fmt] <= hashes["lm-eval"], fmt


def test_task_names_cannot_leave_the_run_directory(tmp_path):
    """A source task name is only a label: path separators and dots never become paths."""
    data = orjson.loads((TRACELENS / "noisy.trials.json").read_bytes())
    data["provenance"]["measurement"]["eval_set_name"] = "../../escaped"
    src = tmp_path / "evil.trials.json"
    src.write_bytes(orjson.dumps(data))
    import_run("tracelens", src, tmp_path / "r")
    assert [p.name for p in (tmp_path / "r" / "tasks").iterdir()] == ["_.._escaped"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.trials.json", "r"]


def test_tracelens_timeout_counts_as_a_failure_in_pass1(tmp_path):
    """TraceLens counts a timed-out trial as a failure; so does rolleval's default
    ``timeout_policy: failure``: pass@1 is the mean over problems of passes / (gradable +
    timed-out) rollouts, computed here by hand from the edited trials file."""
    data = orjson.loads((TRACELENS / "noisy.trials.json").read_bytes())
    passing = [i for i, t in enumerate(data["trials"]) if t["outcomes"][0]["passed"]]
    timed_out = data["trials"][passing[0]]
    timed_out["status"] = "timeout"
    timed_out["error_message"] = "over budget"
    data["trials"][passing[1]]["status"] = "infra_error"  # left out, unlike the timeout
    src = tmp_path / "t.trials.json"
    src.write_bytes(orjson.dumps(data))
    import_run("tracelens", src, tmp_path / "run")
    settings = orjson.loads(
        (tmp_path / "run" / "tasks" / "compare-fixture" / "task.json").read_bytes()
    )
    assert settings["timeout_policy"] == "failure"
    per: dict[str, list[int]] = {}
    for t in data["trials"]:
        if t["status"] == "infra_error":
            continue
        ok = t["status"] != "timeout" and all(o["passed"] for o in t["outcomes"])
        per.setdefault(t["task_id"], []).append(int(ok))
    want = sum(sum(v) / len(v) for v in per.values()) / len(per)
    assert _pass1(tmp_path / "run") == pytest.approx(want, abs=1e-12)
    rep = report_run(tmp_path / "run", write=False).report["tasks"]["compare-fixture"]
    assert rep["rollouts"]["gradable"] == 32 - 2


def test_tracelens_import_without_prompts_shows_and_refuses_regrade(tmp_path, capsys):
    """TraceLens trials store no prompt and no reference: the prompt records say so
    (``prompt`` absent), ``show`` prints that in text and ``null`` in JSONL, and ``regrade``
    refuses with one line, exit 2, leaving the judgements as they were."""
    from rolleval import regrade_run, show_records
    from rolleval.rundir._store import RunDir

    run = tmp_path / "run"
    import_run("tracelens", TRACELENS / "noisy.trials.json", run)
    tf = RunDir.open(run).require_task("compare-fixture")
    prompts = tf.read_prompts().by_id
    assert len(prompts) == 16
    assert all(p.prompt is None and p.reference is None for p in prompts.values())
    assert all(p.content_hash for p in prompts.values())  # TraceLens's own task hashes
    settings = tf.read_settings()
    assert settings.runner is not None and settings.runner["num_runs"] == 2
    items = show_records(run, problem="t00")
    assert [i["prompt"] for i in items] == [None]
    assert len(items[0]["rollouts"]) == 2

    assert main(["show", str(run), "--problem", "t00"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("(prompt not stored")  # not the word "None"
    assert main(["show", str(run), "--problem", "t00", "--format", "jsonl"]) == 0
    assert orjson.loads(capsys.readouterr().out.splitlines()[0])["prompt"] is None

    before = tf.judgements.read_bytes()
    with pytest.raises(DataError, match="no problem has a reference answer"):
        regrade_run(run, grader_spec={"type": "short_answer"}, workers=0)
    assert main(["regrade", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert tf.judgements.read_bytes() == before
    assert not (tf.dir / "judgements.prev.jsonl").exists()


def test_report_of_a_folder_that_is_not_a_run_points_to_import(tmp_path, capsys):
    (tmp_path / "samples.jsonl").write_text("{}\n")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not a run directory" in err and "rolleval import" in err


def test_task_writer_add_prompts_appends_in_order_and_takes_models_only(tmp_path):
    """Streaming importers append prompt records in batches (``TaskWriter.add_prompts``):
    lines land in the order given, across calls, and read back through the typed reader;
    a dict is refused and the partial run is removed."""
    from rolleval.records import PromptRecord, RunManifest, TaskSettings
    from rolleval.writer import RunWriter

    made = [PromptRecord.build(f"p{i}", f"question {i}", str(i)) for i in (3, 1, 2)]
    with RunWriter.create(tmp_path / "r", RunManifest(run_id="x"), command="import") as w:
        t = w.add_task(TaskSettings(name="t"), [])
        t.add_prompts(made[:2])
        t.add_prompts(made[2:])
        t.close()
        ids = [orjson.loads(x)["problem_id"] for x in t.files.prompts.read_bytes().splitlines()]
        assert ids == ["p3", "p1", "p2"]
        assert t.files.read_prompts().by_id == {p.problem_id: p for p in made}
        w.finish()
    with (
        pytest.raises(TypeError, match="PromptRecord"),
        RunWriter.create(tmp_path / "s", RunManifest(run_id="y")) as w,
    ):
        w.add_task(TaskSettings(name="t"), []).add_prompts([made[0].model_dump()])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
