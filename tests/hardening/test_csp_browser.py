"""In a real browser, the Content-Security-Policy blocks nothing the portal and the API docs use:
no violation while logging in, switching team, browsing the portal and opening Swagger UI."""

from __future__ import annotations

import pytest

from tests.browser import BROWSER_MARKS, open_page
from tests.factories import MembershipFactory, TeamFactory

pytestmark = [m for m in BROWSER_MARKS if m.name != "worker"]


@pytest.fixture
def browser_page():
    yield from open_page(1280, 860)


def test_the_policy_blocks_nothing_the_pages_use(live_server, team, admin_user, browser_page):
    from playwright.sync_api import expect

    second = TeamFactory(slug="second", name="Second Team")
    MembershipFactory(team=second, user=admin_user, role="admin")
    page = browser_page
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(f"{page.url} {m.text}") if "Content Security Policy" in m.text else None
    )
    page.on("pageerror", lambda e: violations.append(str(e)))

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Acme ML")
    # The team switcher submits through its inline onchange handler, allowed by its hash.
    page.select_option("#team-switch", label="Second Team (admin)")
    expect(page.locator("h1")).to_have_text("Second Team")
    for path in ("/operations/", "/clusters/new/"):
        page.goto(f"{live_server.url}{path}")
    page.goto(f"{live_server.url}/api/v1/docs/")
    expect(page.locator(".swagger-ui .info")).to_be_visible(timeout=15000)
    assert violations == [], "\n".join(f"{page.url}: {v[:300]}" for v in violations)
