"""What every browser test shares: Debian's chromium driven by Playwright, and screenshots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
# Headless, and quiet on a machine with no internet: no background networking or updates.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Marks for a browser test module; Playwright's sync API runs an event loop in the test's thread,
# and the ORM calls made between browser steps are ordinary synchronous ones.
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"Debian chromium is not installed at {CHROMIUM}"),
]
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def open_page(width: int = 1280, height: int = 860):
    """A generator yielding a fresh page in a new headless chromium (use it from a fixture)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def screenshot(page, name: str, tmp_path: Path) -> None:
    """Kept with the test's files; also written to PORTAL_SCREENSHOT_DIR when set (to look at)."""
    page.screenshot(path=str(tmp_path / name), full_page=True)
    target = os.environ.get("PORTAL_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=True)


# htmx is loaded and nothing is in flight: no request (htmx marks the element that asked, e.g. a
# fragment that loads itself), swap or settle under way.
_HTMX_IDLE = (
    "() => window.htmx !== undefined && !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
)


def wait_idle(page) -> None:
    """Wait until htmx has nothing in flight (e.g. the tab reload an operation's last poll asked for)."""
    page.wait_for_function(_HTMX_IDLE)


def swapped(page, action) -> None:
    """Do ``action`` and wait until htmx has swapped in and settled the fragment it asked for.

    Waits for htmx to be idle first and again after, so a fragment still loading from before (or a
    second swap the first one caused) does not settle in place of the one ``action`` asked for."""
    page.wait_for_function(_HTMX_IDLE)
    page.evaluate(
        "window.__settled = false;"
        "document.body.addEventListener('htmx:afterSettle', () => { window.__settled = true; }, {once: true})"
    )
    action()
    page.wait_for_function("() => window.__settled === true")
    page.wait_for_function(_HTMX_IDLE)
