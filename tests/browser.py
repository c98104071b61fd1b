"""Headless Debian Chromium, driven by Playwright, with the network off (DESIGN §4)."""
from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def offline_page() -> Iterator:
    """A Chromium page that refuses every request that is not a local file."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make test does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page()
        blocked: list[str] = []

        def route(r):
            if r.request.url.startswith(("file://", "data:", "blob:")):
                return r.continue_()
            blocked.append(r.request.url)
            return r.abort()

        page.route("**/*", route)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        console: list[str] = []  # what the page's scripts report as errors (console.error, a failed fetch)
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        missing: list[str] = []  # local files the page asked for and could not load (a font, a script)
        page.on("requestfailed", lambda r: missing.append(r.url) if r.url.startswith("file://") else None)
        page.blocked, page.errors, page.missing, page.console_errors = blocked, errors, missing, console
        try:
            yield page
        finally:
            browser.close()
