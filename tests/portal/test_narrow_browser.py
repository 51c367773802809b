"""The portal at 390 px wide (a phone): the menu opens from a button, the header wraps, and wide
tables scroll inside their box instead of widening the page."""

from __future__ import annotations

import pytest

from tests.browser import BROWSER_MARKS, open_page, screenshot
from tests.factories import ClusterFactory, InstanceGroupFactory, OperationFactory

pytestmark = BROWSER_MARKS


@pytest.fixture
def phone():
    yield from open_page(390, 844)


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_the_portal_fits_a_390px_screen(live_server, sandbox, transactional_db, team, admin_user, phone, tmp_path):
    from playwright.sync_api import expect

    cluster = ClusterFactory(
        team=team, name="train", node_summary={"total": 2, "ready": 2, "by_health": {"Schedulable": 2}}
    )
    InstanceGroupFactory(cluster=cluster, name="gpu", instance_type="ml.g5.xlarge", count=2)
    OperationFactory(team=team, target=cluster, kind="cluster.create", status="succeeded")
    page = phone
    page.goto(f"{live_server.url}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Acme ML")

    nav = page.locator("#sidenav")
    expect(nav).to_be_hidden()
    page.click(".nav-toggle")
    expect(nav).to_be_visible()
    expect(page.locator(".nav-toggle")).to_have_attribute("aria-expanded", "true")
    assert page_width(page) <= 390
    screenshot(page, "narrow-dashboard.png", tmp_path)

    for path in (f"/clusters/{cluster.pk}/", "/clusters/", "/operations/", "/team/"):
        page.goto(live_server.url + path)
        expect(page.locator(".topbar")).to_be_visible()
        assert page_width(page) <= 390, path
    screenshot(page, "narrow-team.png", tmp_path)
    page.goto(f"{live_server.url}/clusters/{cluster.pk}/?tab=groups")
    table = page.locator("table.groups").first
    assert table.evaluate("t => t.scrollWidth > t.clientWidth")  # it scrolls inside its box
    screenshot(page, "narrow-cluster.png", tmp_path)
