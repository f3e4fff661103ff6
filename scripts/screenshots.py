"""Screenshots of the run and compare pages (docs/img/run.png, docs/img/compare.png).

Builds the quickstart-like example (a baseline and a candidate that regressed by 0.05,
with injected faults, from ``rolleval.testing._synthetic``), writes both HTML pages, opens them in
headless Chromium (``/usr/bin/chromium``) and clicks the problem that moved most, so the
screenshot shows its rollouts side by side. Rerun after changing the page:

    python scripts/screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from rolleval import report_run
from rolleval._report._html import compare_html, report_html, write_html
from rolleval.compare import compare_runs
from rolleval.testing._synthetic import write_synthetic_run

FAULTS = dict(p_infra_error=0.01, p_grader_error=0.005, p_unextracted=0.05, p_truncated=0.02)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/img")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        b = write_synthetic_run(root / "base", n_problems=200, n_rollouts=8, rng=0, **FAULTS)
        c = write_synthetic_run(
            root / "candidate",
            n_problems=200,
            n_rollouts=8,
            rng=0,
            outcome_rng=1,
            shift=-0.05,
            **FAULTS,
        )
        rep = report_run(c.path, n_resamples=2000, write=False).report
        result = compare_runs(b.path, c.path, n_resamples=2000).to_dict()
        pages = {
            "run": write_html(root / "run.html", report_html(rep, run=c.path)),
            "compare": write_html(root / "compare.html", compare_html(result)),
        }
        mover = result["tasks"][0]["movers"][0]["id"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            for name, page_path in pages.items():
                tab = browser.new_page(viewport={"width": 1280, "height": 1000})
                tab.goto(page_path.as_uri())
                tab.wait_for_selector("body[data-ready='1']", state="attached")
                tab.click(f"#problems tbody tr:has-text('{mover}')")
                tab.wait_for_selector(".rollout")
                shot = out / f"{name}.png"
                tab.screenshot(path=str(shot), full_page=True)
                print(f"wrote {shot}")
                tab.close()
            browser.close()


if __name__ == "__main__":
    main()
