"""The compare page of a sequential run (`run --until-decided`) in real headless Chromium."""

from __future__ import annotations

import re

import pytest

from conftest import run_cli, write_math_task, write_run_yaml
from rendered_numbers import missing
from rolleval._report._html import compare_html, write_html
from rolleval.compare._sequential_run import compare_sequential_run
from rolleval.testing import OpenAIServer

pytestmark = pytest.mark.browser


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
def seq_page(tmp_path_factory):
    """The page of a sequential candidate right half the time against an always-right BASE
    (a real server on 127.0.0.1), with its JSON result: a regression (exit 1), settled
    within a few looks every 3 problems."""
    root = tmp_path_factory.mktemp("seqpage")
    data = write_math_task(root / "sums.jsonl", 40)
    # the runs in processes of their own (as a user runs them): Playwright's sync API keeps
    # an asyncio loop running in this one
    for name, share, extra in (
        ("base", 1.0, ["--seed", "1"]),
        ("cand", 0.5, ["--seed", "5", "--baseline", str(root / "base"), "--until-decided"]),
    ):
        with OpenAIServer(responder=_responder(share)) as srv:
            cfg = write_run_yaml(root / f"{name}.yaml", srv, data, n_rollouts=2)
            args = ["run", "--config", str(cfg), "--out", str(root / name), "--no-progress"]
            res = run_cli(*args, *extra, *(["--round-size", "3"] if name == "cand" else []))
            assert res.returncode == (0 if name == "base" else 1), res.stderr
    result = compare_sequential_run(root / "base", root / "cand").to_dict()
    assert result["tasks"][0]["looks"] >= 3  # a chart with several looks
    return write_html(root / "seq.html", compare_html(result)), result


def test_sequential_page_renders_its_chart_without_console_error(seq_page, open_page):
    path, result = seq_page
    page = open_page(path)
    assert page.errors == []
    assert [m for m in page.console if m[0] in ("error", "warning")] == []
    assert page.requests == [page.url]  # the file itself, nothing else
    chart = page.tab.query_selector("svg.plot:has(g.sequence)")
    assert chart is not None
    box = chart.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 40
    looks = result["tasks"][0]["sequence"]
    segments = chart.query_selector_all("line.cs")
    assert len(segments) == len(looks)
    # a look whose bounds differ is drawn as a visible vertical segment
    heights = [(s.bounding_box() or {}).get("height", 0) for s in segments]
    assert all(h > 0 for h, lk in zip(heights, looks) if lk["upper"] > lk["lower"])
    for cls in ("band", "estimate", "zero", "threshold", "stop"):
        shapes = chart.query_selector_all(f".{cls}")
        assert shapes and any((s.bounding_box() or {}).get("width", 0) > 0 for s in shapes), cls
    # every number of the JSON result is on the page (the look tables are open)
    assert missing(result, page.tab.inner_text("body")) == []


def test_sequential_page_opens_a_problems_rollouts(seq_page, open_page):
    path, result = seq_page
    page = open_page(path)
    first = result["tasks"][0]
    visited = "sums/s"  # any problem the candidate visited has rollouts on both sides
    page.tab.click(f"#problems tbody tr:has-text('{visited}') >> nth=0")
    page.tab.wait_for_selector(".rollout")
    assert page.tab.query_selector_all(".side-baseline .rollout")
    assert first["stopped_after"] <= 40 and page.errors == []
