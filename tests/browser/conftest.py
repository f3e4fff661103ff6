"""Fixtures of the browser tests: real headless Chromium (Debian's ``/usr/bin/chromium``)
driven by Playwright, and pages built from synthetic runs holding hostile rollout text."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

CHROMIUM = "/usr/bin/chromium"

#: A rollout text that would run script, break out of markup or reorder what follows it
#: if the page interpreted it.
HOSTILE = (
    '<script>window.__pwned = 1; alert(1)</script></textarea></pre><img src=x onerror="window.__pwned=2">'
    "\u202eevil-rtl\u202c\x00nul\x1b[31mred <b>bold</b> &amp;"
)


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One headless Chromium for the browser tests (fails, does not skip, when it is
    missing: scripts/setup.sh installs Debian's package). Package-scoped: Playwright's sync
    API keeps an asyncio loop running while it is open, which the other tests' asyncio.run()
    must not see."""
    from playwright.sync_api import sync_playwright  # the test extra installs it

    assert shutil.which(CHROMIUM) or Path(CHROMIUM).exists(), (
        f"{CHROMIUM} missing: apt-get install -y chromium (scripts/setup.sh does it)"
    )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM)
        yield b
        b.close()


class Page:
    """A Playwright page that records console messages, page errors and requests."""

    def __init__(self, browser: Any, path: Path):
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.tab = browser.new_page(viewport={"width": 1280, "height": 900})
        self.tab.on("console", lambda m: self.console.append((m.type, m.text)))
        self.tab.on("pageerror", lambda e: self.errors.append(str(e)))
        self.tab.on("request", lambda r: self.requests.append(r.url))
        self.tab.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.resolve().as_uri()
        self.tab.goto(self.url)
        self.tab.wait_for_selector("body[data-ready='1']", state="attached")


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    pages: list[Page] = []

    def _open(path: Path) -> Page:
        page = Page(browser, path)
        pages.append(page)
        return page

    yield _open
    for p in pages:
        p.tab.close()


def plant(run: Path, problem_id: str, index: int, text: str) -> None:
    """Replace the text of one rollout in a run's rollouts file (a file format we own)."""
    path = next(run.glob("tasks/*/rollouts.jsonl"))
    out = []
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec["problem_id"] == problem_id and rec["index"] == index:
            rec["text"] = text
        out.append(orjson.dumps(rec))
    path.write_bytes(b"\n".join(out) + b"\n")
