"""Browser tests (headless Chromium through Playwright)."""
