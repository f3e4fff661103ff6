"""The HTML pages as a person uses them, in real headless Chromium (issue 11, part 3)."""

from __future__ import annotations

import itertools
import re

import pytest

from browser.conftest import HOSTILE, plant
from rendered_numbers import missing
from rolleval import report_run
from rolleval._report._html import compare_html, gate_html, report_html, write_html
from rolleval._report._html_data import ProblemView, SideView, TaskView
from rolleval.compare import compare_runs, gate_run
from rolleval.testing._synthetic import write_synthetic_run

pytestmark = pytest.mark.browser

TARGET = "synthetic_math/000002"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Run, compare and gate pages of a regressed candidate whose rollout 0 of TARGET holds
    hostile text; with their JSON results."""
    root = tmp_path_factory.mktemp("pages")
    kw = dict(n_problems=30, n_rollouts=6, rng=7, p_unextracted=0.05, p_truncated=0.05)
    b = write_synthetic_run(root / "b", **kw)
    c = write_synthetic_run(root / "c", **kw, outcome_rng=8, shift=-0.2, p_grader_error=0.02)
    plant(c.path, TARGET, 0, HOSTILE)
    rep = report_run(c.path, n_resamples=300, write=False).report
    cmp = compare_runs(b.path, c.path, n_resamples=300).to_dict()
    gate = gate_run(c.path, b.path, n_resamples=300).to_dict()
    return {
        "run": (write_html(root / "run.html", report_html(rep, run=c.path)), rep),
        "compare": (write_html(root / "compare.html", compare_html(cmp)), cmp),
        "gate": (write_html(root / "gate.html", gate_html(gate)), gate),
        "c": c.path,
    }


@pytest.mark.parametrize("name", ["run", "compare", "gate"])
def test_page_loads_without_console_error_or_network_request(pages, open_page, name):
    page = open_page(pages[name][0])
    page.tab.click(f"#problems tbody tr:has-text('{TARGET}')")
    page.tab.wait_for_selector(".rollout")
    assert page.errors == []
    assert [m for m in page.console if m[0] in ("error", "warning")] == []
    assert page.requests == [page.url]  # the file itself, nothing else


@pytest.mark.parametrize(
    ("name", "plots"),
    [("run", {"curve", "band", "bar"}), ("compare", {"ci", "threshold", "pt", "bar"})],
)
def test_each_plot_renders_non_empty_svg(pages, open_page, name, plots):
    page = open_page(pages[name][0])
    svgs = page.tab.query_selector_all("svg.plot")
    assert len(svgs) >= 3
    for svg in svgs:
        box = svg.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 40
        assert (
            svg.evaluate("e => e.querySelectorAll('circle,rect,polyline,polygon,line').length") > 3
        )
    for cls in plots:
        shapes = page.tab.query_selector_all(f"svg.plot .{cls}")
        assert shapes, cls
        assert any((s.bounding_box() or {}).get("width", 0) > 0 for s in shapes), cls


@pytest.mark.parametrize("name", ["run", "compare", "gate"])
def test_banner_and_tables_hold_every_number_of_the_json_result(pages, open_page, name):
    path, data = pages[name]
    page = open_page(path)
    page.tab.click("details > summary >> nth=0") if name != "run" else None
    page.tab.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    shown = page.tab.inner_text("body")
    assert missing(data, shown) == []
    if name != "run":
        t = (data.get("tasks") or data["comparisons"])[0]
        banner = page.tab.inner_text("#verdict")
        for fact in (
            f"{t['effect']:+.4f}",
            f"[{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]",
            f"±{t['threshold']:g}",
            f"exit {data['exit_code']}",
            f"MDE {t['mde']:.4f}",
        ):
            assert fact in banner


def test_clicking_a_problem_shows_both_sides_rollouts(pages, open_page):
    page = open_page(pages["compare"][0])
    page.tab.click(f"#problems tbody tr:has-text('{TARGET}')")
    page.tab.wait_for_selector(".rollout")
    for side in ("baseline", "candidate"):
        boxes = page.tab.query_selector_all(f".side-{side} .rollout")
        assert len(boxes) == 6
        meta = boxes[1].query_selector(".meta").inner_text()
        assert re.search(
            r"#1 (correct|wrong|not judged) \| status ok \| finish \w+ \| tokens \d+", meta
        )
        assert "extracted" in meta and "cluster" in meta
    assert page.tab.inner_text("#rv-detail pre.reference").strip()
    assert "Synthetic problem 2" in page.tab.inner_text("#rv-detail pre.prompt")


def test_hostile_rollout_text_is_shown_inertly_and_runs_nothing(pages, open_page):
    page = open_page(pages["run"][0])
    page.tab.click(f"#problems tbody tr:has-text('{TARGET}')")
    page.tab.wait_for_selector(".rollout")
    text = page.tab.inner_text(".rollout >> nth=0 >> pre")
    assert "<script>window.__pwned = 1; alert(1)</script></textarea></pre><img" in text
    assert "\u2039U+202E\u203aevil-rtl" in text and "\u2039U+0000\u203anul" in text
    assert "\u2039U+001B\u203a[31mred <b>bold</b> &amp;" in text
    assert page.tab.evaluate("() => window.__pwned === undefined")
    assert page.dialogs == [] and page.errors == []
    assert page.tab.query_selector_all("#rv-detail script, #rv-detail img, #rv-detail b") == []


def test_search_and_filters_select_problems(pages, open_page):
    path, data = pages["compare"]
    page = open_page(path)
    visible = "#problems tbody tr:not([hidden])"
    assert len(page.tab.query_selector_all(visible)) == 30
    page.tab.fill("#rv-search", "000002")
    assert [r.inner_text().split("\t")[1] for r in page.tab.query_selector_all(visible)] == [TARGET]
    page.tab.fill("#rv-search", "")
    for flag in ("moved", "failed", "unextracted", "errored"):
        page.tab.select_option("#rv-filter", flag)
        rows = page.tab.query_selector_all(visible)
        assert rows and all(flag in r.inner_text() for r in rows), flag
    page.tab.select_option("#rv-filter", "moved")
    assert len(page.tab.query_selector_all(visible)) == data["tasks"][0]["n_moved"]


def test_lone_surrogates_and_nul_in_data_stay_inert(tmp_path, open_page, pages):
    """Text that a JSON file cannot hold but a Python string can (a lone surrogate)."""
    rollout = {
        "i": 0,
        "status": "ok",
        "text": "a\ud800b\x00c</script><script>window.__pwned=3</script>",
        "finish": "stop",
        "tokens": 3,
        "latency": 0.1,
        "extracted": "\udfff",
        "correct": False,
        "cluster": 0,
        "grader_error": None,
    }
    view = TaskView(
        "t", {"p\u202e1": ProblemView("p\u202e1", "</textarea>", "1", [rollout], 1, 0, 0, 0)}
    )
    rep = pages["run"][1]
    html = report_html({**rep, "tasks": {}}, side=SideView("x", {"t": view}))
    page = open_page(write_html(tmp_path / "s.html", html))
    page.tab.click("#problems tbody tr")
    page.tab.wait_for_selector(".rollout")
    text = page.tab.inner_text(".rollout pre")
    # the lone surrogate is kept or replaced, never an error; the rest is literal text
    assert re.match("a[\ud800\ufffd]b\u2039U\\+0000\u203ac</script><script>window", text)
    assert page.tab.evaluate("() => window.__pwned === undefined") and page.errors == []


def test_the_thought_is_shown_collapsed_above_the_answer_and_inert(tmp_path, open_page):
    """Issue 19: a reasoning model's thought (here hostile text in the rollout's
    ``reasoning``) sits in a closed <details> above the answer, as text only."""
    import orjson

    run = write_synthetic_run(tmp_path / "r", n_problems=5, n_rollouts=2, rng=3).path
    path = next(run.glob("tasks/*/rollouts.jsonl"))
    lines = []
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec["index"] == 0:
            rec["reasoning"] = HOSTILE
        lines.append(orjson.dumps(rec))
    path.write_bytes(b"\n".join(lines) + b"\n")
    rep = report_run(run, n_resamples=100, write=False).report
    page = open_page(write_html(tmp_path / "run.html", report_html(rep, run=run)))
    page.tab.click("#problems tbody tr >> nth=0")
    page.tab.wait_for_selector(".rollout")
    box = page.tab.query_selector(".rollout >> nth=0")
    thought = box.query_selector("details.thought")
    assert thought is not None and thought.get_attribute("open") is None  # collapsed
    children = box.eval_on_selector_all(":scope > *", "els => els.map(e => e.tagName)")
    assert children.index("DETAILS") < children.index("PRE")  # above the answer
    assert f"thought ({len(HOSTILE)} chars)" in thought.query_selector("summary").inner_text()
    text = thought.eval_on_selector("pre", "e => e.textContent")
    assert "<script>window.__pwned = 1; alert(1)</script>" in text
    assert page.tab.evaluate("() => window.__pwned === undefined")
    assert page.dialogs == [] and page.errors == []
    assert page.tab.query_selector_all("#rv-detail script, #rv-detail img, #rv-detail b") == []
    assert page.tab.query_selector(".rollout >> nth=1").query_selector("details") is None


def test_clicking_a_problem_that_moved_most_opens_its_rollouts(pages, open_page):
    """Issue 25 item 20: the movers table of the comparison opens the problem it names."""
    data = pages["compare"][1]
    first = next(m for m in data["tasks"][0]["movers"] if (m.get("delta") or 0) != 0)
    page = open_page(pages["compare"][0])
    page.tab.click(f"#facts tr.goto:has-text('{first['id']}')")
    page.tab.wait_for_selector(".rollout")
    assert page.tab.inner_text("#rv-detail h3").strip() == f"synthetic_math / {first['id']}"
    assert len(page.tab.query_selector_all(".side-candidate .rollout")) == 6
    assert page.errors == []


def test_forest_ticks_are_round_and_every_label_is_inside_the_plot(pages, open_page):
    """Issue 25 item 21: ticks at round values (a step of 1, 2, 2.5 or 5 times a power of
    ten, symmetric about 0), none clipped at the plot's edge."""
    from decimal import Decimal

    page = open_page(pages["compare"][0])
    svg = page.tab.query_selector("svg[aria-label='effect per task with its interval']")
    labels = [t.text_content() for t in svg.query_selector_all("text.tick")]
    values = [Decimal(x) for x in labels]
    assert len(values) >= 3 and values == sorted(values) and values[len(values) // 2] == 0
    assert values == [-v for v in reversed(values)]
    step = values[-1] - values[-2]
    assert all(b - a == step for a, b in itertools.pairwise(values))
    mantissa = step.scaleb(-step.adjusted()).normalize()
    assert mantissa in {Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5)}, step
    width = float(svg.get_attribute("width"))
    for t in svg.query_selector_all("text"):
        box = t.evaluate("e => { const b = e.getBBox(); return [b.x, b.x + b.width]; }")
        assert box[0] >= 0 and box[1] <= width, (t.text_content(), box, width)


def test_token_histograms_share_their_bins_and_one_axis(pages, open_page):
    """Issue 25 item 21: baseline and candidate output tokens in one plot over the same bins."""
    page = open_page(pages["compare"][0])
    svg = page.tab.query_selector("svg[aria-label='synthetic_math: output tokens']")
    bars = {
        side: svg.query_selector_all(f"rect.bar[data-series='{side}']")
        for side in ("baseline", "candidate")
    }
    assert len(bars["baseline"]) == len(bars["candidate"]) >= 2
    for b, c in zip(bars["baseline"], bars["candidate"]):  # bin by bin, side by side
        assert (
            b.query_selector("title").text_content().split(" ", 1)[1].split(":")[0]
            == (c.query_selector("title").text_content().split(" ", 1)[1].split(":")[0])
        )
    assert len(page.tab.query_selector_all("svg[aria-label*='output tokens']")) == 1
