"""A real headless Chromium (Debian's ``chromium``, installed by bin/test's ensure_test_packages)
driven by Playwright, for the web console's tests (issue 18: "Tested in a real browser").
Playwright's own browser download cannot run here, so it is pointed at the system one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = os.environ.get("RELAYMQ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: bin/test installs Debian's chromium (ensure_test_packages in bin/_env.sh)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)  # every expectation waits for its condition up to this

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)  # every expectation waits for its condition up to this
    page.on("dialog", lambda dialog: dialog.accept())  # the console's "are you sure?" questions
    try:
        yield page
    finally:
        context.close()
