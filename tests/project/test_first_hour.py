"""Issue 25: rough edges a new user hits in the first hour, each checked as a user meets it
(the CLI as a real process, a real OpenAI-protocol server on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import child_env, math_task_entry, rolleval_argv, sum_responder, write_math_task
from rolleval.testing import Fault, OpenAIServer
from rolleval.testing._synthetic import write_synthetic_run

N = 6  # problems of the sums task


def _task_file(tmp_path: Path) -> Path:
    """A task config file beside its data (``path`` relative to the file)."""
    write_math_task(tmp_path / "sums.jsonl", N)
    doc = {**math_task_entry("sums.jsonl")}
    path = tmp_path / "sums.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


class _Result:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys):
    """``cli(*args)``: the CLI's ``main`` in this process (as the console script calls it),
    with its exit code and what it printed; a process start costs seconds on a loaded
    machine, and the commands here do not depend on being one."""
    from rolleval._cli import main

    def call(*args: str) -> _Result:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return _Result(code, out, err)

    return call


def _flags(srv: OpenAIServer, tmp_path: Path) -> list[str]:
    """The server's model and endpoint, no progress, and grading in this process (a setting
    only a config file gives: a pool of grading processes takes seconds to start)."""
    speed = tmp_path / "speed.yaml"
    speed.write_text("grading_workers: 0\n")
    return [
        "--model",
        srv.model,
        "--endpoint",
        srv.base_url,
        "--no-progress",
        "--config",
        str(speed),
    ]


# ---------------------------------------------------------------- 1. a task file as a task


def test_a_task_file_is_accepted_as_task_flag_and_in_a_config(tmp_path, cli, monkeypatch):
    task = _task_file(tmp_path)
    with OpenAIServer(responder=sum_responder) as srv:
        res = cli(
            "run",
            "--task",
            str(task),
            "-n",
            "2",
            "--out",
            str(tmp_path / "r1"),
            *_flags(srv, tmp_path),
        )
        assert res.returncode == 0, res.stderr
        assert "task sums" in res.stdout and srv.completion_requests == 2 * N
        # a config naming the file relative to itself, run from another directory
        sub = tmp_path / "conf"
        sub.mkdir()
        (sub / "run.yaml").write_text(
            f"model: {srv.model}\nendpoints: [{srv.base_url}]\nn_rollouts: 1\ngrading_workers: 0\ntasks: [../sums.yaml]\n"
        )
        monkeypatch.chdir("/")
        res = cli(
            "run",
            "--config",
            str(sub / "run.yaml"),
            "--out",
            str(tmp_path / "r2"),
            "--no-progress",
        )
        assert res.returncode == 0, res.stderr
    manifest = json.loads((tmp_path / "r2" / "manifest.json").read_text())
    assert manifest["measurement"]["tasks"] == [str(task.resolve())]
    # the commands that read runs take the file too, for the task it declares
    res = cli("show", str(tmp_path / "r1"), "--task", str(task), "--limit", "1")
    assert res.returncode == 0 and res.stdout.startswith("=== sums / sums/s00"), res.stderr
    r1 = str(tmp_path / "r1")
    res = cli("compare", r1, r1, "--task", str(task), "--n-resamples", "100", "--format", "json")
    assert res.returncode == 3 and json.loads(res.stdout)["tasks"][0]["task"] == "sums"


def test_a_missing_task_file_names_the_file(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli(
        "run",
        "--task",
        "nowhere/capitals.yaml",
        "--model",
        "m",
        "--out",
        str(tmp_path / "r"),
        "--dry-run",
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "capitals.yaml" in res.stderr and "not found" in res.stderr
    res = cli("run", "--task", "no_such_task", "--model", "m", "--out", str(tmp_path / "r"))
    assert res.returncode == 2 and "--task my_task.yaml" in res.stderr


# ---------------------------------------------------------------- 2. broken pipes


def _closed_pipe_run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with stdout a pipe whose reader has already gone (as ``| head`` after it
    read what it wanted): every write to stdout fails with EPIPE."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(
            rolleval_argv(*args),
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            timeout=300,
        )
    finally:
        os.close(w)
    return proc


def test_a_closed_pipe_exits_quietly_with_the_commands_exit_code(tmp_path, cli):
    base = write_synthetic_run(tmp_path / "base", n_problems=60, n_rollouts=4, rng=1, outcome_rng=2)
    cand = write_synthetic_run(
        tmp_path / "cand", n_problems=60, n_rollouts=4, rng=1, outcome_rng=3, shift=-0.4
    )
    res = _closed_pipe_run("show", str(base.path))
    assert (res.returncode, res.stderr) == (0, "")
    # the gate decided "blocked" (exit 1) before it printed: the exit code stays 1
    full = cli("gate", str(cand.path), "--baseline", str(base.path), "--n-resamples", "500")
    assert full.returncode == 1, full.stderr
    res = _closed_pipe_run(
        "gate", str(cand.path), "--baseline", str(base.path), "--n-resamples", "500"
    )
    assert (res.returncode, res.stderr) == (1, "")
    res = _closed_pipe_run("compare", str(base.path), str(cand.path), "--n-resamples", "500")
    assert (res.returncode, res.stderr) == (1, "")


# ---------------------------------------------------------------- 3. resume from --out alone


def test_resume_needs_only_out_and_explicit_flags_must_match(tmp_path, cli):
    task = _task_file(tmp_path)
    out = tmp_path / "r"
    failing = {"on": True}

    def faults(request):  # the first run: every rollout of problem s01 fails (HTTP 400)
        return (
            Fault.http_status(400)
            if failing["on"] and "What is 1+2?" in request.prompt_text
            else None
        )

    with OpenAIServer(responder=sum_responder, faults=faults) as srv:
        args = ["run", "--task", str(task), "-n", "3", "--limit", "4", "--seed", "5"]
        first = cli(*args, "--out", str(out), *_flags(srv, tmp_path), "--concurrency", "2")
        assert first.returncode == 0, first.stderr
        failing["on"] = False
        srv.reset_counters()
        # a changed measurement setting is still refused, naming it
        res = cli("run", "--out", str(out), "--resume", "--limit", "5")
        assert res.returncode == 2 and "limit: 4 -> 5" in res.stderr, res.stderr
        assert srv.completion_requests == 0
        # --out alone: the stored settings (task, n, limit, seed, endpoint, concurrency,
        # grading workers)
        res = cli("run", "--out", str(out), "--resume", "--no-progress")
        assert res.returncode == 0, res.stderr
        assert "3 rollouts to request" in res.stderr
        assert srv.completion_requests == 3  # only s01's failed rollouts
        # the same settings given explicitly are accepted
        res = cli(*args, "--out", str(out), "--resume", "--no-progress")
        assert res.returncode == 0 and "0 rollouts to request" in res.stderr, res.stderr
    rep = json.loads((out / "report.json").read_text())["tasks"]["sums"]
    assert rep["problems"]["total"] == 4 and rep["health"]["infra_errors"]["count"] == 0


def test_resume_of_nothing_says_so(tmp_path, cli):
    res = cli("run", "--out", str(tmp_path / "none"), "--resume")
    assert res.returncode == 2 and "nothing to resume" in res.stderr


# ---------------------------------------------------------------- 4. incomplete runs


def _truncate(run: Path, task: str, problems: int, n: int) -> None:
    """Keep the records of the first ``problems`` problems (a run stopped there)."""
    for name in ("rollouts.jsonl", "judgements.jsonl"):
        f = run / "tasks" / task / name
        lines = f.read_bytes().splitlines(keepends=True)
        f.write_bytes(b"".join(lines[: problems * n]))


def test_an_incomplete_run_is_announced_at_the_top_of_every_rendering(tmp_path):
    from rolleval import report_run
    from rolleval._report._html import report_html
    from rolleval._report._render import render

    run = write_synthetic_run(tmp_path / "r", n_problems=50, n_rollouts=4, rng=1).path
    _truncate(run, "synthetic_math", 8, 4)
    rep = report_run(run, n_resamples=200, write=False).report
    want = "WARNING: incomplete run: task synthetic_math: 8 of 50 problems complete (168 of 200 rollouts missing)"
    text = render("run", rep, "text")
    assert " ".join(" ".join(text.splitlines()[1:4]).split()).startswith(want)
    md = render("run", rep, "md")
    assert md.splitlines()[2].startswith(want)
    page = report_html(rep, run=run)
    assert want in page and page.index(want) < page.index("task synthetic_math")


def test_an_incomplete_side_is_announced_first_in_compare(tmp_path):
    from rolleval._report._render import render
    from rolleval.compare import compare_runs

    base = write_synthetic_run(tmp_path / "b", n_problems=40, n_rollouts=4, rng=1).path
    cand = write_synthetic_run(
        tmp_path / "c", n_problems=40, n_rollouts=4, rng=1, outcome_rng=5
    ).path
    _truncate(cand, "synthetic_math", 30, 4)
    data = compare_runs(base, cand, n_resamples=200, allow_incomplete=True).to_dict()
    lines = render("compare", data, "text").splitlines()
    assert (
        lines[2]
        .strip()
        .startswith("WARNING: incomplete run: the candidate's task synthetic_math has 40 of 160")
    )


# ---------------------------------------------------------------- 6. pre-flight


def test_a_dead_endpoint_fails_before_anything_is_written(tmp_path, dead_base_url, cli):
    # before: every rollout was tried 6 times (the default 5 retries) until the circuit
    # breaker stopped the run after 24 of them, 14 s later, with a run directory written
    task = _task_file(tmp_path)
    out = tmp_path / "r"
    res = cli(
        "run", "--task", str(task), "--model", "m", "--endpoint", dead_base_url, "--out", str(out)
    )
    assert res.returncode == 4 and "Traceback" not in res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith(f"rolleval: error: cannot connect to {dead_base_url}")
    assert f"check that the server at {dead_base_url} is up and serves model 'm'" in line
    assert not out.exists()


# ---------------------------------------------------------------- 7. --dry-run


def test_dry_run_prints_the_size_and_writes_nothing(tmp_path, cli):
    from rolleval import build_config
    from rolleval._runner import resolve_tasks

    task = _task_file(tmp_path)
    out = tmp_path / "r"
    res = cli(
        "run",
        "--task",
        str(task),
        "--model",
        "m",
        "-n",
        "4",
        "--max-tokens",
        "100",
        "--out",
        str(out),
        "--dry-run",
    )
    assert res.returncode == 0, res.stderr
    assert not out.exists()
    # the prompt characters as the run would send them, 4 characters a token
    cfg = build_config({"model": "m", "tasks": [str(task)], "n_rollouts": 4})
    (t,) = resolve_tasks(cfg)
    chars = sum(len(m.content) for pid in t.problem_ids for m in t.prompts[pid].prompt)
    prompt_tokens = -(-chars * 4 // 4)
    assert max(len(line) for line in res.stdout.splitlines()) <= 100
    text = " ".join(res.stdout.split())
    assert f"sums: {N} problems x 4 rollouts; {4 * N} rollouts in {4 * N} requests" in text
    assert f"about {prompt_tokens:,} prompt tokens, at most {100 * 4 * N:,} output tokens" in text
    res = cli(
        "run",
        "--task",
        str(task),
        "--model",
        "m",
        "-n",
        "4",
        "--server-n",
        "--out",
        str(out),
        "--dry-run",
    )
    assert f"{4 * N} rollouts in {N} requests" in " ".join(res.stdout.split()), res.stdout
    assert not out.exists()


def test_dry_run_on_resume_counts_what_is_left(tmp_path, cli):
    task = _task_file(tmp_path)
    out = tmp_path / "r"
    with OpenAIServer(
        responder=sum_responder,
        faults=lambda r: Fault.http_status(400) if "What is 2+4?" in r.prompt_text else None,
    ) as srv:
        res = cli("run", "--task", str(task), "-n", "2", "--out", str(out), *_flags(srv, tmp_path))
        assert res.returncode == 0, res.stderr
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    res = cli("run", "--out", str(out), "--resume", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "sums: 6 problems x 2 rollouts; 2 rollouts in 2 requests" in " ".join(res.stdout.split())
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


# ---------------------------------------------------------------- 13, 14: statistics as printed


def test_a_degenerate_task_shows_the_exact_bound():
    import numpy as np
    from scipy import stats as sps

    from rolleval._report._build import degenerate_bound

    b = degenerate_bound(0.0, 10, 0.95)
    # 0 of 10 problems could differ: the one-sided Clopper-Pearson bound at 0.975
    assert b["bound_low"] == 0.0
    assert b["bound_high"] == pytest.approx(sps.beta.ppf(0.975, 1, 10), rel=1e-12)
    assert b["bound_high"] == pytest.approx(0.3085, abs=5e-5)  # "about [0, 0.31]"
    top = degenerate_bound(1.0, 10, 0.95)
    assert (top["bound_low"], top["bound_high"]) == (pytest.approx(1 - b["bound_high"]), 1.0)
    assert np.isclose(degenerate_bound(0.5, 10, 0.95)["bound_low"], 0.5 - 0.5 * b["bound_high"])


def test_a_task_at_zero_prints_its_exact_bound(tmp_path):
    from rolleval import report_run
    from rolleval._report._render import render

    run = write_synthetic_run(tmp_path / "r", n_problems=10, n_rollouts=4, rng=1, shift=-1.0).path
    rep = report_run(run, n_resamples=200, write=False).report
    m = rep["tasks"]["synthetic_math"]["metrics"]["pass@1"]
    assert (m["value"], m["ci"]["status"]) == (0.0, "degenerate")
    row = next(
        line
        for line in render("run", rep, "text").splitlines()
        if line.strip().startswith("pass@1 ")
    )
    assert "exact [0.0000, 0.3085] (degenerate)" in row


def test_self_consistency_is_na_with_one_rollout(tmp_path):
    from rolleval import report_run

    run = write_synthetic_run(tmp_path / "r", n_problems=20, n_rollouts=1, rng=1).path
    sc = report_run(run, n_resamples=200, write=False).report["tasks"]["synthetic_math"]["metrics"][
        "self_consistency"
    ]
    assert sc["status"] != "ok" and sc["value"] is None
    assert "at least 2 rollouts per problem" in sc["reason"]


# ---------------------------------------------------------------- 8. an A/A pair of examples


def test_example_has_a_sampling_seed_and_labels_the_runs_apart(tmp_path, cli):
    from rolleval.compare import compare_runs

    a, b = tmp_path / "a", tmp_path / "b"
    assert cli("example", str(a), "--problems", "40", "-n", "4").returncode == 0
    res = cli("example", str(b), "--problems", "40", "-n", "4", "--sampling-seed", "1")
    assert res.returncode == 0 and "synthetic-0-sampling-1" in res.stdout
    ids = [json.loads((p / "manifest.json").read_text())["run_id"] for p in (a, b)]
    assert ids == ["synthetic-0", "synthetic-0-sampling-1"]
    prompts = [(p / "tasks" / "synthetic_math" / "prompts.jsonl").read_bytes() for p in (a, b)]
    judged = [(p / "tasks" / "synthetic_math" / "judgements.jsonl").read_bytes() for p in (a, b)]
    assert prompts[0] == prompts[1] and judged[0] != judged[1]  # same problems, new outcomes
    t = compare_runs(a, b, n_resamples=200).to_dict()["tasks"][0]
    assert (t["problems"]["compared"], t["problems"]["dropped_total"]) == (40, 0)


# ---------------------------------------------------------------- 9. output width, gate's format


def test_tasks_and_plan_fit_100_columns_and_gate_prints_text_on_a_terminal(tmp_path, cli):
    res = cli("tasks")
    assert res.returncode == 0 and max(len(line) for line in res.stdout.splitlines()) <= 100
    assert len(res.stdout.splitlines()) > 20  # descriptions wrapped, not cut
    base = write_synthetic_run(tmp_path / "b", n_problems=30, n_rollouts=4, rng=1).path
    cand = write_synthetic_run(tmp_path / "c", n_problems=30, n_rollouts=4, rng=1, outcome_rng=2)
    res = cli("plan", str(base), "--candidate", str(cand.path))
    assert res.returncode == 0 and max(len(line) for line in res.stdout.splitlines()) <= 100
    # not a terminal (CI): Markdown, as before; a terminal: text (tmux runs it as a user would)
    res = cli("gate", str(cand.path), "--baseline", str(base), "--n-resamples", "200")
    assert res.stdout.startswith("## ") and "| task |" in res.stdout
    shown = _on_a_terminal(
        tmp_path, "gate", str(cand.path), "--baseline", str(base), "--n-resamples", "200"
    )
    assert "rolleval gate:" in shown and "| task |" not in shown and "## " not in shown


def _on_a_terminal(tmp_path: Path, *args: str) -> str:
    """What the CLI prints on a real terminal (a tmux pane, 100 columns)."""
    import shlex
    import shutil
    import time

    if shutil.which("tmux") is None:
        pytest.fail("tmux is needed (apt-get install tmux)")
    done = tmp_path / "done"
    cmd = " ".join(shlex.quote(a) for a in rolleval_argv(*args))
    session = f"rv{os.getpid()}"
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "100",
            "-y",
            "200",
            f"env NO_COLOR=1 PYTHONWARNINGS=ignore {cmd}; touch {shlex.quote(str(done))}; sleep 60",
        ],
        check=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", session],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


# ---------------------------------------------------------------- 10. plan names what it cannot plan


def test_plan_names_a_task_the_candidate_lacks_and_the_size_for_equivalent(tmp_path, cli):
    from rolleval.stats import minimum_detectable_effect

    pilot = write_synthetic_run(tmp_path / "p", n_problems=30, n_rollouts=4, rng=1).path
    other = write_synthetic_run(
        tmp_path / "o", n_problems=30, n_rollouts=4, rng=1, task="other"
    ).path
    res = cli("plan", str(pilot), "--candidate", str(other))
    assert res.returncode == 0
    assert "task synthetic_math: in the pilot, not in the candidate" in res.stdout
    res = cli("plan", str(pilot), "--format", "json")
    entry = json.loads(res.stdout)["tasks"]["synthetic_math"]
    need = entry["equivalence_problems"]
    kw = {
        k: entry["components"][k]
        for k in (
            "omega2",
            "sigma2_baseline",
            "n_rollouts_baseline",
            "sigma2_candidate",
            "n_rollouts_candidate",
        )
    }
    # the smallest number of problems whose minimum detectable effect is at most the threshold
    assert minimum_detectable_effect(need, **kw) <= 0.02 < minimum_detectable_effect(need - 1, **kw)
    res = cli("plan", str(pilot))
    assert "problems needed for the equivalent verdict" in " ".join(res.stdout.split())


# ---------------------------------------------------------------- 12. what "moved" means


def test_moved_counts_the_problems_whose_value_differs_and_says_so(tmp_path):
    import shutil

    from rolleval._report._render import render
    from rolleval.compare import compare_runs

    base = write_synthetic_run(tmp_path / "b", n_problems=40, n_rollouts=4, rng=1).path
    cand = tmp_path / "c"
    shutil.copytree(base, cand)
    f = cand / "tasks" / "synthetic_math" / "judgements.jsonl"
    recs = [json.loads(line) for line in f.read_text().splitlines()]
    flipped: set[str] = set()
    for r in recs:  # flip one judged rollout of each of three problems
        if len(flipped) < 3 and r["problem_id"] not in flipped and r.get("correct") is not None:
            r["correct"] = not r["correct"]
            flipped.add(r["problem_id"])
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    data = compare_runs(base, cand, n_resamples=200).to_dict()
    assert data["tasks"][0]["n_moved"] == 3
    text = " ".join(render("compare", data, "text").split())
    assert (
        "moved 3 of 40 (problems whose pass@1 differs between the sides by any amount, chance included)"
        in text
    )
