"""Issue 21: "what changed" beside "what moved", and tasks paired across harnesses.

What changed: two runs that differ in a server option and a sampling setting show both as
``setting: baseline -> candidate`` lines, once, in every output of compare and gate (text,
JSON, Markdown, GitHub, HTML); identical settings say "nothing changed in the recorded
settings". Pairing: imports of one benchmark by lm-eval, Inspect and lighteval compare
with each other with no flag (their problems match by content; the comparison is on the
problems both sides hold, the others left out and counted); a pair with no content match
and no map exits 2 naming --task-map; different graders exit 2 naming the regrade. No model is needed: the runs are
synthetic (rolleval.testing) or imports of the repo's real fixtures (tests/data/imports).
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import orjson
import pytest

from conftest import run_main
from rolleval import import_run
from rolleval.compare import compare_runs, gate_run
from rolleval.compare._changed import SideLabel, SideRecord, human, what_changed
from rolleval.errors import UsageError
from rolleval.rundir._store import atomic_write_json
from rolleval.testing._synthetic import write_synthetic_run

DATA = Path(__file__).parents[1] / "data" / "imports"
TASK = "synthetic_math"
ROPE = "server option rope_freq_scale: (unset) -> 0.8"
TEMP = "sampling temperature: 0.7 -> 1"
NOTHING = "nothing changed in the recorded settings"


def _serve_as(run: Path, *, options: dict, temperature: float) -> None:
    """Record ``run`` as served by the launcher with ``options`` and sampled at ``temperature``
    (the synthetic writer records no serving)."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["provenance"] = {
        "endpoint": {"base_urls": ["http://127.0.0.1:1234/v1"], "model": "tiny-model"},
        "server": {
            "launcher": "llama-cpp-python",
            "model_file": "tiny.gguf",
            "model_sha256": "ab" * 32,
            "server_options": options,
        },
    }
    atomic_write_json(run / "manifest.json", manifest)
    task_json = run / "tasks" / TASK / "task.json"
    settings = json.loads(task_json.read_text())
    settings["sampling"] = {"temperature": temperature, "max_tokens": 64, "extra_body": {}}
    atomic_write_json(task_json, settings)


@pytest.fixture
def served_pair(tmp_path):
    """Baseline and candidate of one benchmark: the candidate served with rope_freq_scale 0.8
    and sampled at temperature 1.0 (the baseline: no such option, temperature 0.7)."""
    base = write_synthetic_run(
        tmp_path / "base", n_problems=60, n_rollouts=4, rng=1, outcome_rng=10
    )
    cand = write_synthetic_run(
        tmp_path / "cand", n_problems=60, n_rollouts=4, rng=1, outcome_rng=20
    )
    _serve_as(base.path, options={"n_ctx": 2048}, temperature=0.7)
    _serve_as(cand.path, options={"n_ctx": 2048, "rope_freq_scale": 0.8}, temperature=1.0)
    return base.path, cand.path


# ------------------------------------------------------------------ the pure function


def _side(name, manifest, tasks):
    return SideRecord(SideLabel("m", name, f"id-{name}", "run"), manifest, tasks)


def test_what_changed_lists_each_difference_once_formatted_for_people():
    prov = {"server": {"launcher": "llama-cpp-python", "server_options": {"n_ctx": 2048}}}
    prov_c = {
        "server": {
            "launcher": "llama-cpp-python",
            "server_options": {"n_ctx": 4096, "type_k": 8},
        }
    }
    s_b = {"grader_identity": "math@1", "sampling": {"temperature": 0.7, "stop": ["\n"]}}
    s_c = {"grader_identity": "math@1", "sampling": {"temperature": 0.7, "stop": ["\n\n"]}}
    base = _side("b", {"rolleval_version": "1.0", "provenance": prov}, {"x": s_b, "y": s_b})
    cand = _side("c", {"rolleval_version": "1.1", "provenance": prov_c}, {"x": s_c, "y": s_b})
    got = what_changed(base, cand, [("x", "x"), ("y", "y")])
    assert [c.line for c in got.changes] == [
        "rolleval version: 1.0 -> 1.1",
        "server option n_ctx: 2048 -> 4096",
        "server option type_k: (unset) -> 8",
        # only task x changed its stop sequence: named; escaped, not a raw newline
        "task x: sampling stop: [\\n] -> [\\n\\n]",
    ]
    # a difference every compared task shares is listed once, without a task name
    both = what_changed(
        base, _side("c", base.manifest, {"x": s_c, "y": s_c}), [("x", "x"), ("y", "y")]
    )
    assert [c.line for c in both.changes] == ["sampling stop: [\\n] -> [\\n\\n]"]
    same = what_changed(base, _side("c", base.manifest, base.tasks), [("x", "x")])
    assert same.changes == () and same.lines == [NOTHING]
    assert same.to_dict()["nothing_changed"] is True
    assert got.to_dict()["baseline"]["run_id"] == "id-b"
    # values are never Python reprs
    assert human({"a": 1, "b": [True, None]}) == "a=1, b=[true, (unset)]"
    assert human(0.5) == "0.5" and human("") == '""'


# ------------------------------------------------------------------ every output


def _formats(capsys, tmp_path, command, *args):
    """The outputs of ``command`` in every format: text, json, md, github, html."""
    outs = {}
    for fmt in ("text", "json", "md", "github"):
        code, out, err = run_main(capsys, command, *args, "--format", fmt, "--n-resamples", 500)
        assert code in (0, 1, 3), err
        outs[fmt] = out
    html = tmp_path / f"{command}.html"
    run_main(capsys, command, *args, "--n-resamples", 500, "--html", html)
    outs["html"] = html.read_text()
    return outs


@pytest.mark.parametrize("command", ["compare", "gate"])
def test_server_option_and_sampling_change_show_once_in_every_format(
    served_pair, tmp_path, capsys, command
):
    base, cand = served_pair
    args = (base, cand) if command == "compare" else (cand, "--baseline", base)
    outs = _formats(capsys, tmp_path, command, *args)
    for fmt, out in outs.items():
        text = out.replace("&gt;", ">") if fmt == "html" else out
        if fmt == "json":
            doc = json.loads(text[: text.rindex("}") + 1])
            changes = {c["setting"]: c for c in doc["what_changed"]["changes"]}
            assert changes["server option rope_freq_scale"]["candidate"] == "0.8"
            assert changes["sampling temperature"] == {
                "setting": "sampling temperature",
                "baseline": "0.7",
                "candidate": "1",
            }
            stored = json.loads((Path(cand) / "manifest.json").read_text())["run_id"]
            assert doc["what_changed"]["candidate"]["run_id"] == stored
            assert doc["what_changed"]["candidate"]["run_dir"] == "cand"
            continue
        for line in (ROPE, TEMP):
            assert text.count(line) == 1, (fmt, line)
        # the unchanged option is not listed; no raw dict anywhere in the block
        assert "n_ctx" not in text and "{'" not in text, fmt
        assert text.count("not proof of its cause") == 1, fmt
        assert "tiny-model (run base)" in text and "tiny-model (run cand)" in text, fmt


@pytest.mark.parametrize("command", ["compare", "gate"])
def test_identical_settings_say_nothing_changed_in_every_format(tmp_path, capsys, command):
    base = write_synthetic_run(tmp_path / "base", n_problems=60, n_rollouts=4, rng=1).path
    copy = tmp_path / "copy"
    shutil.copytree(base, copy)
    args = (base, copy) if command == "compare" else (copy, "--baseline", base)
    outs = _formats(capsys, tmp_path, command, *args)
    for fmt, out in outs.items():
        if fmt == "json":
            wc = json.loads(out[: out.rindex("}") + 1])["what_changed"]
            assert wc["changes"] == [] and wc["nothing_changed"] is True
        else:
            assert out.count(NOTHING) == 1, fmt
            assert "not proof of its cause" not in out, fmt


# ------------------------------------------------------------------ pairing tasks


def test_tasks_of_other_names_pair_by_content_and_say_so(tmp_path):
    base = write_synthetic_run(tmp_path / "b", task="alpha", n_problems=30, n_rollouts=4, rng=3)
    cand = write_synthetic_run(tmp_path / "c", task="beta", n_problems=30, n_rollouts=4, rng=3)
    res = compare_runs(base.path, cand.path, n_resamples=500).to_dict()
    (t,) = res["tasks"]
    assert (t["task"], t["candidate_task"]) == ("alpha", "beta")
    assert t["pairing"]["by"] == "content" and t["problems"]["compared"] == 30
    assert "alpha ~ beta: 30 of 30 problems matched by content" in t["alignment"]["notes"]
    assert res["skipped_tasks"] == {}


def _edit_records(task_dir: Path, edit) -> None:
    """Rewrite every record file of ``task_dir`` through ``edit(name, record) -> record|None``."""
    for name in ("prompts.jsonl", "rollouts.jsonl", "judgements.jsonl"):
        f = task_dir / name
        rows = [edit(name, orjson.loads(x)) for x in f.read_bytes().splitlines()]
        f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows if r is not None))


def test_a_content_pair_leaves_out_what_it_does_not_share_and_says_how(tmp_path):
    """Ids of two harnesses are labels in two namespaces: a problem under one id with other
    content on each side is left out with the one-sided ones, each counted by reason."""
    base = write_synthetic_run(tmp_path / "b", task="alpha", n_problems=30, n_rollouts=4, rng=3)
    gone = {f"alpha/{i:06d}" for i in range(25, 30)}

    def edit(name, rec):
        rec["problem_id"] = rec["problem_id"].replace("beta/", "alpha/")
        if rec["problem_id"] in gone:
            return None  # the candidate's harness did not run these
        if name == "prompts.jsonl" and rec["problem_id"] == "alpha/000004":
            rec["reference"], rec["content_hash"] = "-1", "f" * 64
        return rec

    cands = {}
    for task in ("beta", "alpha"):
        cands[task] = write_synthetic_run(
            tmp_path / task, task=task, n_problems=30, n_rollouts=4, rng=3
        ).path
        _edit_records(cands[task] / "tasks" / task, edit)
    res = compare_runs(base.path, cands["beta"], n_resamples=500).to_dict()
    (t,) = res["tasks"]
    assert t["problems"]["compared"] == 24
    assert t["pairing"]["left_out"] == {"changed_content": 1, "only_in_baseline": 5}
    assert t["alignment"]["excluded"]["only_in_baseline"]["ids"] == sorted(gone)
    assert t["pairing"]["note"] == (
        "alpha ~ beta: 24 of 30 problems matched by content (the candidate has 25); "
        "1 changed (one id, other content on each side) and 5 only in the baseline left out"
    )
    # the same records under the baseline's task name: paired by name, the default refuses
    with pytest.raises(UsageError, match=r"1 changed content .* 5 only in baseline"):
        compare_runs(base.path, cands["alpha"], n_resamples=500)


def test_gate_pairs_tasks_by_content_too(tmp_path):
    base = write_synthetic_run(tmp_path / "b", task="alpha", n_problems=30, n_rollouts=4, rng=3)
    run = write_synthetic_run(tmp_path / "c", task="beta", n_problems=30, n_rollouts=4, rng=3)
    out = gate_run(run.path, base.path, n_resamples=500).to_dict()
    assert {c["task"] for c in out["checks"]} == {"alpha"}
    assert len(out["comparisons"]) == 2  # the default policy: pass@1 and unextracted_rate
    for t in out["comparisons"]:
        assert (t["task"], t["candidate_task"], t["pairing"]["by"]) == ("alpha", "beta", "content")
    # the same generator and seed: only the task's name differs, which is not a setting
    assert out["what_changed"]["nothing_changed"] is True


def test_server_option_model_points_to_the_local_path_form():
    from rolleval._local._launcher import LocalServerOptions

    with pytest.raises(UsageError, match=r"--model local:/path/model\.gguf"):
        LocalServerOptions(server_options={"model": "/x.gguf"})


def test_no_content_match_and_no_map_exits_2_naming_task_map(tmp_path, capsys):
    base = write_synthetic_run(tmp_path / "b", task="alpha", n_problems=20, n_rollouts=2, rng=3)
    other = write_synthetic_run(tmp_path / "c", task="beta", n_problems=20, n_rollouts=2, rng=4)
    code, out, err = run_main(capsys, "compare", base.path, other.path)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--task-map BASE=CAND" in err
    assert "alpha" in err and "beta" in err


def _no_provenance(src: Path, dst: Path) -> Path:
    data = orjson.loads(src.read_bytes())
    del data["provenance"]
    dst.write_bytes(orjson.dumps(data))
    return dst


def test_tracelens_files_without_provenance_share_a_name_and_task_map_pairs_the_rest(
    tmp_path, capsys
):
    tl = DATA / "tracelens"
    for name in ("baseline", "regressed"):
        _no_provenance(tl / f"{name}.trials.json", tmp_path / f"{name}.json")
        import_run("tracelens", tmp_path / f"{name}.json", tmp_path / f"np-{name}")
    # the same file imported under a name of the user's: no hashes, no shared name
    import_run("tracelens", tmp_path / "baseline.json", tmp_path / "mine", task_name="mine")
    (np_base,) = [p.name for p in (tmp_path / "np-baseline" / "tasks").iterdir()]
    (np_reg,) = [p.name for p in (tmp_path / "np-regressed" / "tasks").iterdir()]
    assert np_base == np_reg and np_base.startswith("tracelens-")
    # same eval set, no provenance: they pair by name, and align by task id (as TraceLens)
    res = compare_runs(tmp_path / "np-baseline", tmp_path / "np-regressed", threshold=0.03)
    assert res.verdict == "regression" and res.tasks[0].alignment.by == "id"
    code, _o, err = run_main(capsys, "compare", tmp_path / "mine", tmp_path / "np-regressed")
    assert code == 2 and "--task-map" in err
    code, out, err = run_main(
        capsys,
        "compare",
        tmp_path / "mine",
        tmp_path / "np-regressed",
        "--task-map",
        f"mine={np_reg}",
        "--threshold",
        0.03,
        "--format",
        "json",
    )
    assert code == 1, err
    (t,) = json.loads(out)["tasks"]
    assert t["pairing"]["by"] == "map" and t["candidate_task"] == np_reg
    # the Python API takes the same map
    api = compare_runs(
        tmp_path / "mine", tmp_path / "np-regressed", task_map={"mine": np_reg}, threshold=0.03
    )
    assert api.verdict == "regression"
    with pytest.raises(UsageError, match="--task-map"):
        compare_runs(tmp_path / "mine", tmp_path / "np-regressed", task_map={"nope": np_reg})


# ------------------------------------------------------------------ across harnesses


@pytest.fixture(scope="module")
def harness_runs(tmp_path_factory):
    """The seed1 imports of one benchmark (CopyColors) from three harnesses, each regraded by
    rolleval's short_answer grader (the harnesses' own scorers are different rulers, which
    compare refuses to mix), and two imported with their source's own verdicts."""
    root = tmp_path_factory.mktemp("harnesses")
    runs = {}
    for fmt in ("lm-eval", "inspect", "lighteval"):
        runs[fmt] = root / fmt
        import_run(fmt, DATA / fmt / "seed1", runs[fmt], regrade="short_answer")
    for fmt in ("lm-eval", "inspect"):
        runs[f"{fmt}-source"] = root / f"{fmt}-source"
        import_run(fmt, DATA / fmt / "seed1", runs[f"{fmt}-source"])
    return runs


def _pass_at_1_by_content(run: Path) -> dict[str, Fraction]:
    """pass@1 of every problem of a one-task run, keyed by content hash, from its files."""
    (task,) = (run / "tasks").iterdir()
    prompts = [orjson.loads(x) for x in (task / "prompts.jsonl").read_bytes().splitlines()]
    hash_of = {p["problem_id"]: p["content_hash"] for p in prompts}
    assert len(set(hash_of.values())) == len(hash_of)  # no duplicate content in the fixtures
    counts: dict[str, list[int]] = {h: [0, 0] for h in hash_of.values()}
    for line in (task / "judgements.jsonl").read_bytes().splitlines():
        j = orjson.loads(line)
        assert j["status"] == "ok"  # every rollout is scored: no eligibility drop
        c = counts[hash_of[j["problem_id"]]]
        c[0] += bool(j["correct"])
        c[1] += 1
    return {h: Fraction(c, n) for h, (c, n) in counts.items()}


# (baseline, candidate, task names, problems of each side, matched by content, and left out
# as only in the baseline / only in the candidate): lm-eval ran questions 0-99, Inspect 40
# of them, lighteval another 40 of them; Inspect and lighteval share 12
HARNESS_PAIRS = [
    ("lm-eval", "inspect", ("copycolors_local", "copycolors"), (100, 40), 40, (60, 0)),
    ("lm-eval", "lighteval", ("copycolors_local", "copycolors_0"), (100, 40), 40, (60, 0)),
    ("inspect", "lighteval", ("copycolors", "copycolors_0"), (40, 40), 12, (28, 28)),
]


@pytest.mark.parametrize(
    ("baseline", "candidate", "names", "sizes", "matched", "left"), HARNESS_PAIRS
)
def test_harness_imports_of_one_benchmark_compare_without_a_flag(
    harness_runs, capsys, baseline, candidate, names, sizes, matched, left
):
    b, c = harness_runs[baseline], harness_runs[candidate]
    code, out, err = run_main(capsys, "compare", b, c, "--n-resamples", 500, "--format", "json")
    assert code in (0, 1, 3), err  # a verdict, whichever: no flag was needed
    (t,) = json.loads(out)["tasks"]
    assert (t["task"], t["candidate_task"]) == names
    assert t["pairing"]["by"] == "content" and t["pairing"]["matched_by_content"] == matched
    # the comparison is on the problems matched by content, exactly; the others are left out
    # and counted by side (60 of lm-eval's 100 are in neither 40-question subset)
    assert t["problems"]["compared"] == t["alignment"]["matched"] == matched
    assert (t["problems"]["baseline"], t["problems"]["candidate"]) == sizes
    left_out = {"only_in_baseline": left[0], "only_in_candidate": left[1]}
    left_out = {k: v for k, v in left_out.items() if v}
    assert {k: v["count"] for k, v in t["alignment"]["excluded"].items()} == left_out
    assert t["pairing"]["left_out"] == left_out
    assert t["alignment"]["unmatched"] == {"policy": "exclude", "set_by": "content pairing"}
    # the effect is the mean paired difference over exactly the shared content (exact sums)
    pb, pc = _pass_at_1_by_content(b), _pass_at_1_by_content(c)
    shared = pb.keys() & pc.keys()
    assert len(shared) == matched
    expected = sum((pc[h] - pb[h] for h in shared), Fraction(0)) / matched
    assert t["effect"] == pytest.approx(float(expected), abs=1e-12)
    # said once, in words, in the text output
    sides = [f"{left[0]} only in the baseline", f"{left[1]} only in the candidate"]
    note = (
        f"{names[0]} ~ {names[1]}: {matched} of {sizes[0]} problems matched by content"
        + (f" (the candidate has {sizes[1]})" if sizes[1] != sizes[0] else "")
        + f"; {' and '.join(x for x, n in zip(sides, left) if n)} left out"
    )
    assert t["pairing"]["note"] == note and t["alignment"]["notes"][0] == note
    code, text, err = run_main(capsys, "compare", b, c, "--n-resamples", 500, "--format", "md")
    assert code in (0, 1, 3), err
    assert text.count(note) == 1
    # a user who wants every problem matched still gets the refusal, naming the pair
    code, _o, err = run_main(capsys, "compare", b, c, "--unmatched", "error")
    assert code == 2 and f"{names[0]} ~ {names[1]}" in err and "only in baseline" in err


def test_gate_leaves_out_what_a_content_pair_does_not_share(harness_runs):
    out = gate_run(harness_runs["inspect"], harness_runs["lm-eval"], n_resamples=500).to_dict()
    assert out["exit_code"] != 2 and len(out["comparisons"]) == 2
    for t in out["comparisons"]:
        assert (t["task"], t["candidate_task"]) == ("copycolors_local", "copycolors")
        assert t["problems"]["compared"] == 40
        assert t["alignment"]["excluded"]["only_in_baseline"]["count"] == 60


def test_tasks_paired_by_name_still_refuse_problems_on_one_side(harness_runs, tmp_path, capsys):
    """The same 40 Inspect problems under lm-eval's task name pair by name: there a problem
    on one side only says the data changed, so the default refuses (TraceLens's rule)."""
    named = tmp_path / "inspect-named"
    import_run(
        "inspect", DATA / "inspect" / "seed1", named,
        regrade="short_answer", task_name=["copycolors_local"],
    )  # fmt: skip
    code, out, err = run_main(capsys, "compare", harness_runs["lm-eval"], named)
    assert code == 2 and out == ""
    assert "60 only in baseline" in err and "--unmatched exclude" in err
    res = compare_runs(harness_runs["lm-eval"], named, unmatched="exclude", n_resamples=500)
    (t,) = res.to_dict()["tasks"]
    assert t["pairing"] is None and t["problems"]["compared"] == 40
    assert t["alignment"]["unmatched"] == {"policy": "exclude", "set_by": "--unmatched"}


def test_harness_graders_are_never_mixed_and_the_refusal_names_the_regrade(harness_runs, capsys):
    """A verdict across lm-eval's exact_match and Inspect's match would measure the graders
    too: exit 2, naming the re-import with --regrade for each side that kept its source's
    verdicts (both here; one when the other side is graded by rolleval)."""
    runs = harness_runs
    code, out, err = run_main(capsys, "compare", runs["lm-eval-source"], runs["inspect-source"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "graders too" in err
    for fmt in ("lm-eval", "inspect"):
        assert f"`rolleval import {fmt} {DATA / fmt / 'seed1'} --out NEW --regrade TYPE`" in err
    assert "TYPE: math, mcq, short_answer" in err
    code, _o, err = run_main(capsys, "compare", runs["lm-eval"], runs["inspect-source"])
    assert code == 2 and "rolleval import lm-eval" not in err
    assert (
        f"`rolleval import inspect {DATA / 'inspect' / 'seed1'} --out NEW --regrade short_answer`"
        in err
    )
    # --unmatched exclude does not override a grader difference
    code, _o, err = run_main(
        capsys, "compare", runs["lm-eval"], runs["inspect-source"], "--unmatched", "exclude"
    )
    assert code == 2 and "--regrade short_answer" in err


def test_regrade_of_an_import_with_source_verdicts_names_the_reimport(tmp_path, capsys):
    run = tmp_path / "lm-eval-source"
    import_run("lm-eval", DATA / "lm-eval" / "seed1", run)
    before = (run / "tasks" / "copycolors_local" / "judgements.jsonl").read_bytes()
    code, _o, err = run_main(capsys, "regrade", run)
    assert code == 2 and "no grader spec" in err
    assert f"`rolleval import lm-eval {DATA / 'lm-eval' / 'seed1'} --out NEW --regrade TYPE`" in err
    assert (run / "tasks" / "copycolors_local" / "judgements.jsonl").read_bytes() == before


def test_an_import_records_its_source_as_an_absolute_path(tmp_path, monkeypatch, capsys):
    # Imported from a relative path: the stored source, and the re-import command a
    # refusal prints from another directory, are absolute.
    source = (DATA / "lm-eval" / "seed1").resolve()
    monkeypatch.chdir(source.parent)
    run = tmp_path / "rel"
    summary = import_run("lm-eval", "seed1", run)
    assert summary.source == str(source)
    assert json.loads((run / "manifest.json").read_text())["import"]["source"] == str(source)
    monkeypatch.chdir(tmp_path)
    code, _o, err = run_main(capsys, "regrade", run)
    assert code == 2 and f"`rolleval import lm-eval {source} --out NEW --regrade TYPE`" in err


def test_import_task_name_renames_the_task(harness_runs, tmp_path, capsys):
    out = tmp_path / "lighteval-named"
    code, _printed, err = run_main(
        capsys, "import", "lighteval", DATA / "lighteval" / "seed1", "--out", out,
        "--task-name", "copycolors", "--regrade", "short_answer",
    )  # fmt: skip
    assert code == 0, err
    assert [p.name for p in (out / "tasks").iterdir()] == ["copycolors"]
    res = compare_runs(harness_runs["inspect"], out, unmatched="exclude", n_resamples=500)
    assert res.tasks[0].pair is None  # paired by name now
    code, _o, err = run_main(
        capsys, "import", "lighteval", DATA / "lighteval" / "seed1", "--out", tmp_path / "x",
        "--task-name", "nope=other",
    )  # fmt: skip
    assert code == 2 and "nope" in err and not (tmp_path / "x").exists()
