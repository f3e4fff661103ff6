"""Every renderer of report, compare and gate states the same facts (issue 11, part 1).

Each test walks every number of the JSON result (``rendered_numbers.walk``) and finds it in
the text, Markdown and HTML renderings, at the precision printed.
"""

from __future__ import annotations

import io
import json
import re

import pytest

from conftest import run_cli
from rendered_numbers import missing, walk
from rolleval import report_run
from rolleval._report._html import compare_html, gate_html, report_html
from rolleval._report._render import WIDTH, emit, render, use_color
from rolleval._sanitize import terminal_safe
from rolleval.compare import compare_runs, gate_run
from rolleval.testing._synthetic import write_synthetic_run


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A baseline, a regressed candidate with infra errors (so pass@8 drops problems), and
    the three results: run report, comparison (pass@1 and pass@8), gate."""
    root = tmp_path_factory.mktemp("fmt")
    kw = dict(n_problems=40, n_rollouts=8, rng=3, p_unextracted=0.05, p_truncated=0.03)
    b = write_synthetic_run(root / "b", **kw)
    c = write_synthetic_run(root / "c", **kw, outcome_rng=4, shift=-0.12, p_infra_error=0.05)
    rep = report_run(c.path, n_resamples=300, write=False).report
    cmp1 = compare_runs(b.path, c.path, n_resamples=300).to_dict()
    cmp8 = compare_runs(b.path, c.path, metric="pass@8", n_resamples=300).to_dict()
    gate = gate_run(c.path, b.path, n_resamples=300).to_dict()
    return {"b": b.path, "c": c.path, "run": rep, "compare": cmp1, "compare8": cmp8, "gate": gate}


def _kind(name: str) -> str:
    return "compare" if name.startswith("compare") else name


def _html_text(page: str) -> str:
    """The visible text of a page outside its data blocks and plots."""
    page = re.sub(r"<script.*?</script>", " ", page, flags=re.S)
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", page).replace("&amp;", "&").replace("&lt;", "<")


def test_fixture_exercises_drops_na_and_health(results):
    t8 = results["compare8"]["tasks"][0]
    assert t8["problems"]["dropped_total"] > 0  # pass@8 needs 8 gradable rollouts
    assert results["run"]["tasks"]["synthetic_math"]["health"]["infra_errors"]["count"] > 0
    assert len(walk(results["compare"])) > 100


@pytest.mark.parametrize("name", ["run", "compare", "compare8", "gate"])
@pytest.mark.parametrize("fmt", ["text", "md"])
def test_every_number_of_the_json_is_in_the_rendering(results, name, fmt):
    # a run report's text shows every metric with --all-metrics (its default is compact);
    # Markdown carries all of them by default, in a collapsible section
    data = results[name]
    out = render(_kind(name), data, fmt, all_metrics=fmt == "text")
    assert missing(data, out) == []


def test_a_run_reports_text_is_compact_by_default(results):
    """Issue 25 item 15: pass@1 with its interval, pass@k and pass^k at the run's ks, the
    health lines; the other metrics only with --all-metrics (and a line saying so)."""
    data = results["run"]
    rep = data["tasks"]["synthetic_math"]
    out = render("run", data, "text")
    rows = {line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()}
    assert {"pass@1", "pass@2", "pass^2", "pass@4", "pass^4", "pass@8", "pass^8"} <= rows
    assert {"maj@n", "self_consistency", "G-Pass@4_0.5", "mG-Pass@8"}.isdisjoint(rows)
    assert {"n_unextracted", "infra_errors", "missing", "output_tokens_mean"} <= rows
    assert f"{len(rep['metrics']) - 7} more metrics" in out and "--all-metrics" in out
    full = render("run", data, "text", all_metrics=True)
    lines = full.splitlines()
    head = {
        g: i
        for i, line in enumerate(lines)
        for g in ("accuracy", "consistency")
        if line.strip().startswith(g + " ")
    }
    at = {
        line.split()[0]: i for i, line in enumerate(lines) if line.startswith("  ") and line.split()
    }
    # self_consistency sits with the agreement metrics, under the consistency heading, and the
    # legend says what it measures
    assert head["accuracy"] < at["maj@n"] < head["consistency"] < at["self_consistency"]
    assert (
        "self_consistency = the share of a problem's rollouts that give its most common answer"
        in " ".join(full.split())
    )


@pytest.mark.parametrize("name", ["run", "compare", "compare8", "gate"])
def test_every_number_of_the_json_is_on_the_html_page(results, name):
    data = results[name]
    if name == "run":
        page = report_html(data, run=results["c"])
    elif name == "gate":
        page = gate_html(data)
    else:
        page = compare_html(data)
    assert missing(data, _html_text(page)) == []


def test_the_checker_notices_a_missing_number():
    data = {"effect": -0.1781, "ci": [-0.2438, -0.1156], "n": 40, "ok": True}
    assert missing(data, "effect -0.1781 [-0.2438, -0.1156] over 40") == []
    assert missing(data, "effect ? [-0.2438, -0.1156] over 40") == [(".effect", -0.1781)]
    assert missing(data, "effect -0.1781 [-0.2438, -0.1156] over 41") == [(".n", 40.0)]
    # a coarser number does not stand for a precise one
    assert missing({"x": 0.5469}, "value 0.5") == [(".x", 0.5469)]
    assert missing({"x": 0.5469}, "value 0.547") == []
    assert missing({"x": 0.040625}, "rate 4.06%") == []


def test_text_fits_100_columns_and_is_plain_without_a_terminal(results):
    for name in ("run", "compare", "compare8", "gate"):
        out = render(_kind(name), results[name], "text")
        assert max(len(line) for line in out.splitlines()) <= WIDTH
        assert "\x1b" not in out
    coloured = render("compare", results["compare"], "text", color=True)
    assert "\x1b[1;31mREGRESSION\x1b[0m" in coloured


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_under_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(_Tty()) is True
    assert use_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(_Tty()) is False


def test_control_sequences_in_data_are_stripped(results):
    data = json.loads(json.dumps(results["compare"]))
    evil = "p\x1b[2J\x1b]0;owned\x07\u202eevil\x00\x9b<script>|x"
    data["tasks"][0]["movers"][0]["id"] = evil
    data["tasks"][0]["warnings"] = [f"look at {evil}"]
    text = render("compare", data, "text", color=True)
    md = render("compare", data, "md")
    for out in (text, md):
        assert "owned" not in out.replace("\x1b[1;31m", "")  # the OSC payload is gone
        assert not re.search("[\x00\x07\x9b\u202e]|\x1b\\[2J|\x1b\\]", out)
    assert "<script" not in md and "&lt;script>\\|x" in md
    assert terminal_safe("a\x1b[31mb\x1b[0mc\u2066d", strip=True) == "abcd"


def test_rendered_text_and_printed_text_make_the_same_characters_inert():
    """One definition of an unsafe character: the renderers remove exactly what ``show`` and
    error messages escape (every C0/C1 control but tab and newline, bidi controls, BOM,
    lone surrogates); printable text, tabs and newlines are kept by both."""
    unsafe = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]]
    unsafe += ["\u061c", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069"]
    unsafe += ["\ufeff", "\ud800", "\udfff"]
    for ch in unsafe:
        shown = terminal_safe(f"a{ch}b")
        assert shown.startswith("a\\") and shown.endswith("b") and ch not in shown, repr(ch)
        assert terminal_safe(f"a{ch}b", strip=True) == "ab", repr(ch)
    kept = "tab\tnewline\nünïcødé 数 <x>|"
    assert terminal_safe(kept) == terminal_safe(kept, strip=True) == kept
    # a whole escape sequence goes when stripping; only its ESC is escaped when shown
    osc = "\x1b]0;title\x07"
    assert terminal_safe(f"a{osc}b", strip=True) == "ab"
    assert terminal_safe(f"a{osc}b") == "a\\x1b]0;title\\x07b"


def test_github_format_appends_to_the_step_summary(results, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = emit("gate", results["gate"], "github")
    assert not summary.exists()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = emit("gate", results["gate"], "github")
    assert summary.read_text().strip() == out.strip()
    assert out.startswith("## ") and "| task | check | value | verdict | Holm p |" in out


def test_cli_formats_are_the_renderings_of_the_written_json(results, tmp_path):
    b, c = str(results["b"]), str(results["c"])
    out_json = tmp_path / "c.json"
    summary = tmp_path / "s.md"
    md = run_cli(
        "compare",
        b,
        c,
        "--n-resamples",
        "300",
        "--format",
        "github",
        "--output",
        str(out_json),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert md.returncode == 1, md.stderr
    data = json.loads(out_json.read_text())
    assert md.stdout.rstrip("\n") == render("compare", data, "md").rstrip("\n")
    assert summary.read_text().strip() == md.stdout.strip()
    js = run_cli("compare", b, c, "--n-resamples", "300", "--format", "json")
    assert json.loads(js.stdout) == data
    rep = run_cli("report", c, "--no-write", "--n-resamples", "300", "--format", "md")
    assert rep.returncode == 0 and rep.stdout.startswith("## rolleval report")
    gate = run_cli("gate", c, "--baseline", b, "--n-resamples", "300", "--format", "text")
    assert (
        gate.returncode == 4 and "verdict: RUN FAILED" in gate.stdout and "\x1b" not in gate.stdout
    )


def test_gate_page_against_a_baseline_file_says_the_baseline_has_no_rollouts(results, tmp_path):
    from rolleval.compare import save_baseline

    base = tmp_path / "base.json"
    save_baseline(results["b"], base)
    gate = gate_run(results["c"], base, n_resamples=300).to_dict()
    page = gate_html(gate)
    assert "baseline: a baseline file holds per-problem counts only, no rollout text" in page
    assert missing(gate, _html_text(page)) == []
    index = json.loads(re.search(r'id="rv-index">(.*?)</script>', page).group(1))
    assert index["sides"] == ["baseline", "candidate"]
    assert len(index["problems"]) == 40
    assert all(p["s"][0] is None and p["s"][1] is not None for p in index["problems"])


def test_embedded_data_is_inert_and_survives_lone_surrogates():
    from rolleval._report._html import _json_script, _pack

    s = _json_script({"t": "</script><!--\ud800\u202e&"})
    assert s.isascii() and "<" not in s and ">" not in s and "&" not in s
    assert json.loads(s) == {"t": "</script><!--\ud800\u202e&"}
    packed, cap = _pack([{"prompt": "p", "reference": "r", "sides": [[{"text": "x\ud800"}]]}])
    assert cap is None and packed.isascii() and re.fullmatch(r"[A-Za-z0-9+/=]+", packed)


def test_rollout_texts_are_cut_in_the_middle_to_fit_the_budget(monkeypatch):
    import base64
    import zlib

    import numpy as np

    from rolleval._report import _html as html

    rng = np.random.default_rng(0)
    texts = ["".join(rng.choice(list("abcdefghij "), size=3000)) + "END" for _ in range(40)]
    blob = [{"prompt": "p", "reference": "r", "sides": [[{"text": t} for t in texts]]}]
    packed, cap = html._pack(blob)
    assert cap is None  # the real budget holds them whole
    monkeypatch.setattr(html, "BLOB_BUDGET", 20_000)
    packed, cap = html._pack(blob)
    assert cap is not None and cap < 3003 and len(packed) <= 20_000
    shown = json.loads(zlib.decompress(base64.b64decode(packed)))[0]["sides"][0]
    for original, r in zip(texts, shown):
        head, _, tail = r["text"].partition("\n[... ")
        assert original.startswith(head) and r["text"].endswith("END")
        assert f"{len(original) - 2 * (cap // 2):,} characters cut ...]" in tail
