"""Benchmark: size and time-to-interactive of the comparison HTML page (issue 11).

A 1,000-problem x 16-rollout comparison (two synthetic runs, ``rolleval.testing._synthetic``) is
written as one page with ``rolleval._report._html.compare_html``; headless Chromium (Debian's
``/usr/bin/chromium``, driven by Playwright) opens it from disk.

Targets: the file stays under 5 MB; the page is interactive (its script has built the
problem table: ``body[data-ready]``) in under 2 s after navigation starts. Also reported:
the time to open one problem (first decode of the compressed rollout block) and the time
to build the page in Python.

    python bench/bench_html.py [--problems 1000 --rollouts 16 --repeat 3 --text-chars 2000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from rolleval._report._html import compare_html, write_html
from rolleval.compare import compare_runs
from rolleval.testing._synthetic import write_synthetic_run

CHROMIUM = "/usr/bin/chromium"


_WORDS = [
    "so",
    "the",
    "we",
    "then",
    "let",
    "x",
    "y",
    "sum",
    "total",
    "answer",
    "compute",
    "check",
    "equals",
    "because",
    "step",
    "first",
    "next",
    "number",
    "value",
    "add",
    "subtract",
    "multiply",
    "divide",
    "gives",
    "therefore",
    "thus",
    "remaining",
    "each",
    "per",
    "times",
]


def lengthen(run: Path, chars: int, seed: int) -> None:
    """Prefix every rollout text with ``chars`` characters of word salad (real reasoning is
    long; synthetic rollouts are one line). The answer at the end is kept, so the judgements
    still hold."""
    rng = np.random.default_rng(seed)
    for path in run.glob("tasks/*/rollouts.jsonl"):
        lines = []
        for line in path.read_bytes().splitlines():
            rec = orjson.loads(line)
            if rec.get("text"):
                words = rng.choice(_WORDS, size=chars // 5 + 1)
                rng_nums = rng.integers(0, 100, size=len(words) // 7 + 1)
                salad = " ".join(words)
                salad += " " + " ".join(str(n) for n in rng_nums)
                rec["text"] = salad[:chars] + "\n" + rec["text"]
            lines.append(orjson.dumps(rec))
        path.write_bytes(b"\n".join(lines) + b"\n")


def build(root: Path, problems: int, rollouts: int, text_chars: int) -> tuple[Path, float]:
    kw = dict(n_problems=problems, n_rollouts=rollouts, rng=5, p_unextracted=0.03, p_truncated=0.02)
    b = write_synthetic_run(root / "b", **kw)
    c = write_synthetic_run(root / "c", **kw, outcome_rng=6, shift=-0.03, p_infra_error=0.01)
    for i, run in enumerate((b, c)):
        lengthen(run.path, text_chars, i)
    result = compare_runs(b.path, c.path, n_resamples=1000).to_dict()
    t0 = time.perf_counter()
    page = compare_html(result)
    seconds = time.perf_counter() - t0
    return write_html(root / "compare.html", page), seconds


def measure(page: Path, repeat: int) -> tuple[float, float]:
    from playwright.sync_api import sync_playwright

    ready, opened = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        for _ in range(repeat):
            tab = browser.new_page()
            t0 = time.perf_counter()
            tab.goto(page.as_uri())
            tab.wait_for_selector("body[data-ready='1']", state="attached")
            ready.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            tab.click("#problems tbody tr >> nth=0")
            tab.wait_for_selector(".rollout")
            opened.append(time.perf_counter() - t1)
            tab.close()
        browser.close()
    return min(ready), min(opened)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=1000)
    ap.add_argument("--rollouts", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--text-chars",
        type=int,
        default=2000,
        help="Characters of text added to every rollout (0: the synthetic one-liners).",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        page, build_s = build(Path(tmp), args.problems, args.rollouts, args.text_chars)
        cut = "rv-cut" in page.read_text()
        size = page.stat().st_size
        ready_s, open_s = measure(page, args.repeat)
    ok_size, ok_ready = size < 5_000_000, ready_s < 2.0
    print(
        f"comparison page, {args.problems} problems x {args.rollouts} rollouts per side, "
        f"about {args.text_chars} extra characters per rollout text"
        + ("; texts cut to fit the budget" if cut else "; no text cut")
    )
    print(
        f"  size              {size / 1e6:.2f} MB   (target < 5 MB: {'ok' if ok_size else 'MISSED'})"
    )
    print(
        f"  interactive after {ready_s:.2f} s    (target < 2 s: {'ok' if ok_ready else 'MISSED'})"
    )
    print(f"  open one problem  {open_s:.2f} s    (first decode of the rollout block)")
    print(f"  build in Python   {build_s:.2f} s")
    return 0 if ok_size and ok_ready else 1


if __name__ == "__main__":
    sys.exit(main())
