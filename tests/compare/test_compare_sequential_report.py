"""`rolleval compare BASE CAND` of a sequential run (`run --until-decided`) in every format:
text, Markdown, GitHub, JSON and the HTML page with the chart of the confidence sequence;
and the compare flags a sequential comparison cannot honour (usage errors, exit 2)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import math_task_entry, run_cli, run_config, write_math_task
from rendered_numbers import missing
from rolleval import run_eval
from rolleval._report._render import render
from rolleval._runner import SequentialOptions
from rolleval.testing import OpenAIServer

N_PROBLEMS = 60


def _responder(right_share: float):
    """Right when (seed % 100) < 100 * right_share, so the share is known in advance."""

    def answer(request):
        a, b = map(
            int, re.search(r"What is (\d+)\+(\d+)\?", request["messages"][-1]["content"]).groups()
        )
        right = request["seed"] % 100 < 100 * right_share
        return f"The answer is \\boxed{{{a + b if right else a + b + 1}}}.", "stop"

    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    """BASE (every rollout right) and a sequential candidate right half the time, two tasks,
    looking every 3 problems: both tasks stop early on a regression (the tests only read)."""
    root = tmp_path_factory.mktemp("seq")
    data = write_math_task(root / "sums.jsonl", N_PROBLEMS)
    tasks = [math_task_entry(data, "sums"), math_task_entry(data, "more")]
    with OpenAIServer(responder=_responder(1.0)) as srv:
        cfg = run_config(srv, data, n_rollouts=2, seed=1, tasks=tasks)
        run_eval(cfg, root / "base", progress=False)
    with OpenAIServer(responder=_responder(0.5)) as srv:
        out = run_eval(
            run_config(srv, data, n_rollouts=2, seed=5, tasks=tasks),
            root / "cand",
            progress=False,
            sequential=SequentialOptions(baseline=root / "base", round_problems=3),
        )
    assert out.exit_code == 1
    # the design as recorded (the manifest's task order is the one compare lists)
    design = json.loads((root / "cand" / "manifest.json").read_text())["sequential"]
    for rec in design["tasks"].values():  # the fixture is what the tests need
        assert rec["verdict"] == "regression" and len(rec["looks"]) >= 3
        assert rec["stopped_after"] < N_PROBLEMS
    return {"base": str(root / "base"), "cand": str(root / "cand"), "design": design}


def _compare(runs: dict[str, Any], *args: str, env: dict[str, str] | None = None):
    return run_cli("compare", runs["base"], runs["cand"], *args, env=env)


def _look_cells(look: dict[str, Any]) -> list[str]:
    verdict = look["verdict"].replace("_", " ") if look.get("verdict") else "look again"
    return [
        str(look["problems"]),
        str(look["values"]),
        f"{look['effect']:+.4f}",
        f"{look['lower']:+.4f}",
        f"{look['upper']:+.4f}",
        verdict,
    ]


def _design_facts(design: dict[str, Any]) -> list[str]:
    return [
        design["method"],
        f"alpha {design['alpha']:g}",
        f"threshold ±{design['threshold']:g}",
        f"order seed {design['order_seed']}",
        f"rounds of {design['round_problems']} problems",
        f"budget {design['max_problems']} problems per task",
    ]


def test_json_keeps_its_fields_and_adds_every_look(runs, tmp_path):
    res = _compare(runs, "--format", "json", "--output", str(tmp_path / "c.json"))
    assert res.returncode == 1, res.stderr
    data = json.loads(res.stdout)
    assert json.loads((tmp_path / "c.json").read_text()) == data
    design = runs["design"]
    assert data["design"] == "sequential" and data["method"] == f"sequential: {design['method']}"
    assert (data["verdict"], data["exit_code"], data["observe"]) == ("regression", 1, False)
    for key in ("alpha", "threshold", "order_seed", "round_problems", "max_problems"):
        assert data[key] == design[key], key
    assert data["stopping_reason"] == design["stopping_reason"]
    assert [t["task"] for t in data["tasks"]] == list(design["tasks"])
    for t in data["tasks"]:
        rec = design["tasks"][t["task"]]
        # every look, as the run recorded it (the manifest leaves out a look's None fields)
        assert t["sequence"] == [{"effect": None, "verdict": None, **lk} for lk in rec["looks"]]
        assert t["looks"] == len(rec["looks"]) and t["budget"] == N_PROBLEMS
        assert (t["ci_low"], t["ci_high"]) == (rec["looks"][-1]["lower"], rec["looks"][-1]["upper"])
        assert (t["alpha"], t["reason"]) == (rec["alpha"], rec["reason"])
        assert t["summary"].startswith(f"{t['task']}: stopped after {rec['stopped_after']} of 60")


@pytest.mark.parametrize("fmt", ["text", "md", "github"])
def test_text_and_markdown_show_the_design_every_look_and_the_verdict(runs, tmp_path, fmt):
    summary = tmp_path / "summary.md"
    res = _compare(
        runs,
        "--format",
        fmt,
        "--output",
        str(tmp_path / "c.json"),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert res.returncode == 1, res.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    out = res.stdout
    assert out.rstrip("\n") == render("compare", data, "text" if fmt == "text" else "md").rstrip()
    assert missing(data, out) == []  # every number of the JSON is printed
    assert "rolleval compare (sequential): REGRESSION (exit 1)" in out
    assert "overall verdict: regression (exit 1)" in out
    flat = re.sub(r"\s+", " ", out)
    for fact in _design_facts(runs["design"]):
        assert fact in flat, fact
    for name, rec in runs["design"]["tasks"].items():
        assert f"task {name}: pass@1" in out
        assert f"why it stopped: {rec['reason']}" in flat
        for i, look in enumerate(rec["looks"], 1):
            cells = [str(i), *_look_cells(look)]
            row = "| " + " | ".join(cells) + " |" if fmt != "text" else None
            if row is not None:
                assert row in out, row
            else:
                assert re.search(r"\n  " + r"\s+".join(map(re.escape, cells)) + r"\n", out), cells
    assert out.count("run seed: 1 -> 5") == 1  # what changed, once
    if fmt == "github":
        assert summary.read_text().strip() == out.strip()
    else:
        assert not summary.exists()


class _Svg(HTMLParser):
    """The sequence charts of a page: per chart its frame (``g.sequence``) and its shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "g" and a.get("class") == "sequence":
            self.charts.append({"frame": a, "cs": [], "threshold": [], "zero": [], "band": []})
            self.inside = True
        elif self.inside and a.get("class") in ("cs", "threshold", "zero", "band"):
            self.charts[-1][a["class"]].append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag == "g":
            self.inside = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _scale(frame: dict[str, str]):
    left, right = float(frame["data-left"]), float(frame["data-right"])
    top, bottom = float(frame["data-top"]), float(frame["data-bottom"])
    budget, span = float(frame["data-budget"]), float(frame["data-span"])
    return (
        lambda n: left + n / budget * (right - left),
        lambda v: bottom - (v + span) / (2 * span) * (bottom - top),
    )


def test_html_page_charts_the_confidence_sequence_at_every_look(runs, tmp_path):
    page = tmp_path / "seq.html"
    res = _compare(runs, "--html", str(page))
    assert res.returncode == 1, res.stderr
    assert f"HTML report: {page}" in res.stdout
    parser = _Svg()
    parser.feed(page.read_text())
    design = runs["design"]
    assert len(parser.charts) == len(design["tasks"])
    for chart, rec in zip(parser.charts, design["tasks"].values()):
        xs, ys = _scale(chart["frame"])
        assert float(chart["frame"]["data-budget"]) == N_PROBLEMS
        # every bound is inside the axis, which is symmetric about 0
        span = float(chart["frame"]["data-span"])
        assert span >= max(max(abs(lk["lower"]), abs(lk["upper"])) for lk in rec["looks"])
        assert len(chart["cs"]) == len(rec["looks"])
        for seg, look in zip(chart["cs"], rec["looks"]):
            assert int(seg["data-problems"]) == look["problems"]
            assert float(seg["data-lower"]) == look["lower"]
            assert float(seg["data-upper"]) == look["upper"]
            assert float(seg["x1"]) == pytest.approx(xs(look["problems"]), abs=0.05)
            assert float(seg["y1"]) == pytest.approx(ys(look["upper"]), abs=0.05)
            assert float(seg["y2"]) == pytest.approx(ys(look["lower"]), abs=0.05)
        (zero,) = chart["zero"]
        top, bottom = float(chart["frame"]["data-top"]), float(chart["frame"]["data-bottom"])
        assert float(zero["y1"]) == pytest.approx((top + bottom) / 2, abs=0.05)
        assert sorted(float(t["data-value"]) for t in chart["threshold"]) == [-0.02, 0.02]
        assert [float(t["y1"]) for t in chart["threshold"]] == pytest.approx(
            [ys(-0.02), ys(0.02)], abs=0.05
        )
        (band,) = chart["band"]
        assert len(band["points"].split()) == 2 * len(rec["looks"])
    text = re.sub(r"\s+", " ", "".join(parser.text))
    for fact in _design_facts(design):
        assert fact in text, fact
    for name, rec in design["tasks"].items():
        assert f"why it stopped: {rec['reason']}" in text
        assert f"{name}: stopped after {rec['stopped_after']} of {N_PROBLEMS} problems" in text
    assert "what changed" in text and "run seed: 1 -> 5" in text
    assert "rolleval compare (sequential): regression (exit 1)" in text


def test_sequence_chart_coordinates_by_hand():
    """Budget 100 on x from 48 to 428 px; bounds within 1, so the y axis runs from -1 (220
    px) to +1 (12 px): the look after 10 problems at x = 48 + 0.1 * 380 = 86.0, its upper
    bound 0.5 at y = 220 - 1.5 / 2 * 208 = 64.0, its lower bound -1 at y = 220.0."""
    from rolleval._report._svg import sequence_svg

    svg = sequence_svg(
        [(10, -1.0, 0.5, -0.2), (20, -0.6, 0.1, -0.25)], budget=100, threshold=0.05, label="t"
    )
    assert (
        '<line class="cs" data-problems="10" data-lower="-1.0" data-upper="0.5" '
        'x1="86.0" y1="64.0" x2="86.0" y2="220.0"'
    ) in svg
    assert '<line class="zero" x1="48" y1="116.0" x2="428" y2="116.0"' in svg
    # +0.05 at 220 - 1.05 / 2 * 208 = 110.8
    assert '<line class="threshold" data-value="0.05" x1="48" y1="110.8"' in svg
    assert 'points="86.0,64.0 124.0,105.6 124.0,178.4 86.0,220.0"' in svg  # band: upper, lower


@pytest.mark.parametrize(
    "flag",
    [
        ["--power", "0.9"],
        ["--confidence-level", "0.9"],
        ["--n-resamples", "100"],
        ["--seed", "3"],
        ["--task-map", "sums=more"],
        ["--unmatched", "exclude"],
        ["--run-noise", "noise.json"],
        ["--baseline-replicate", "x"],
        ["--candidate-replicate", "x"],
        ["--allow-incomplete"],
        ["--metric", "pass@2"],
        ["--threshold", "0.05"],
        ["--alpha", "0.1"],
    ],
)
def test_a_flag_a_sequential_compare_cannot_honour_is_a_usage_error(runs, tmp_path, flag):
    page = tmp_path / "p.html"
    res = _compare(runs, *flag, "--html", str(page))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rolleval: error: {flag[0]}"), res.stderr
    assert "sequential run" in lines[0] and "Traceback" not in res.stderr
    assert res.stdout == "" and not page.exists()


@pytest.mark.parametrize(
    "flag", [["--metric", "PASS@1"], ["--threshold", "0.02"], ["--alpha", "0.05"]]
)
def test_a_flag_restating_the_recorded_design_is_honoured(runs, flag):
    res = _compare(runs, *flag)
    assert res.returncode == 1, res.stderr
    assert "rolleval compare (sequential): REGRESSION (exit 1)" in res.stdout


def test_task_observe_and_require_provenance_are_honoured(runs):
    res = _compare(runs, "--task", "more", "--format", "json")
    data = json.loads(res.stdout)
    assert res.returncode == 1 and [t["task"] for t in data["tasks"]] == ["more"]
    # each task keeps its recorded level (alpha over the run's two tasks)
    assert data["tasks"][0]["alpha"] == pytest.approx(0.025)
    res = _compare(runs, "--task", "nope")
    assert res.returncode == 2 and "--task nope: not a task of the sequential run" in res.stderr
    res = _compare(runs, "--observe")
    assert res.returncode == 0, res.stderr
    assert "REGRESSION (exit 0, --observe)" in res.stdout
    res = _compare(runs, "--observe", "--format", "json")
    data = json.loads(res.stdout)
    assert (data["verdict"], data["exit_code"], data["observe"]) == ("regression", 0, True)
    # both runs were written by this rolleval: content hashes and grader identity on both sides
    res = _compare(runs, "--require-provenance")
    assert res.returncode == 1, res.stderr


def test_report_of_a_sequential_run_shows_every_look_and_charts_them(runs, tmp_path):
    page = tmp_path / "r.html"
    res = run_cli("report", runs["cand"], "--no-write", "--format", "md", "--html", str(page))
    assert res.returncode == 0, res.stderr
    for name, rec in runs["design"]["tasks"].items():
        assert f"{name}: the {len(rec['looks'])} looks of the confidence sequence" in res.stdout
        for i, look in enumerate(rec["looks"], 1):
            assert "| " + " | ".join([str(i), *_look_cells(look)]) + " |" in res.stdout
        # stopped by its design, not interrupted: no "resume it" (a sequential run cannot be)
        head = f"sequential run: task {name}: {rec['stopped_after']} of {N_PROBLEMS} problems"
        assert head in res.stdout
    assert "resume it" not in res.stdout and "stopped when its verdict was settled" in res.stdout
    parser = _Svg()
    parser.feed(page.read_text())
    assert [len(c["cs"]) for c in parser.charts] == [
        len(rec["looks"]) for rec in runs["design"]["tasks"].values()
    ]


def test_the_run_reports_text_holds_every_look(runs):
    """The run report's text (what `run --until-decided` prints at its end) lists every look."""
    text = render("run", _report(runs["cand"]), "text")
    for rec in runs["design"]["tasks"].values():
        for i, look in enumerate(rec["looks"], 1):
            cells = [str(i), *_look_cells(look)]
            assert re.search(r"\s+".join(map(re.escape, cells)), text), cells


def _report(run: str) -> dict[str, Any]:
    from rolleval import report_run

    return report_run(Path(run), n_resamples=200, write=False).report
