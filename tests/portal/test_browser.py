"""In a real browser: log in, open an operation and watch its panel follow a real worker to the end."""

from __future__ import annotations

import pytest

from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.services import start_operation
from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.roles import Role
from tests.browser import BROWSER_MARKS, open_page, screenshot

pytestmark = BROWSER_MARKS


@pytest.fixture
def browser_page():
    yield from open_page(1280, 860)


def test_operation_panel_follows_a_real_worker(
    live_server, settings, start_worker, team, admin_user, browser_page, tmp_path
):
    from playwright.sync_api import expect

    settings.OPERATIONS = {**settings.OPERATIONS, "DEFAULT_POLL_SECONDS": 0.5}
    worker = start_worker()
    page = browser_page

    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Acme ML")

    access = Access(user=admin_user, team=team, role=Role.ADMIN, via=Via.UI)
    operation, _ = start_operation(access=access, kind="engine.selftest", params={"waits": 4, "interval": 1})
    page.goto(f"{live_server.url}/operations/{operation.pk}/")
    panel = page.locator("#operation-panel")
    expect(panel).to_be_visible()
    page.evaluate("window.__sameDocument = true")  # gone if anything reloaded the page
    # The wait phase reports its polls while it runs; the panel fetches them on its own.
    expect(panel.locator("tr.phase-running")).to_contain_text("waiting", timeout=20_000)
    screenshot(page, "operation-running.png", tmp_path)

    expect(panel).to_have_attribute("data-status", "succeeded", timeout=30_000)
    expect(panel.locator(".panel-status")).to_have_text("Succeeded")
    expect(panel.locator("tr.phase-succeeded")).to_have_count(3)
    assert page.evaluate("window.__sameDocument === true")  # no reload: htmx swapped the panel
    assert panel.get_attribute("hx-trigger") is None  # a terminal panel stops polling
    assert Operation.objects.get(pk=operation.pk).status == OperationStatus.SUCCEEDED, worker.log()[-2000:]
    screenshot(page, "operation-succeeded.png", tmp_path)

    page.goto(f"{live_server.url}/")
    expect(page.locator(".card").first).to_be_visible()
    screenshot(page, "dashboard.png", tmp_path)
