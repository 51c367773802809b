"""In a real browser, on one cluster page that never reloads by itself: a failed create offers its
recovery at once (the zone form, in the portal's words), Retry stays on the page, and when an
operation ends the parts that depend on the cluster's status follow (no "Creating…" banner after
Active; no "Make active" or "Delete…" on a deleted cluster)."""

from __future__ import annotations

import pytest

from clusters.models import Cluster
from tests.browser import BROWSER_MARKS, open_page, screenshot
from tests.clusters.helpers import add_fault, cluster_body

pytestmark = BROWSER_MARKS


@pytest.fixture
def page():
    yield from open_page(1280, 900)


def test_recover_a_failed_create_retry_and_delete_on_one_live_page(
    live_server, sandbox, start_worker, team, admin_user, admin_api, page, tmp_path
):
    from playwright.sync_api import expect

    add_fault(sandbox, kind="insufficient_capacity", instance_type="ml.g5.xlarge", availability_zone="us-west-2b")
    sandbox.world.speedup = 200  # slow enough to open the page while the create still runs
    try:
        start_worker()
        page.goto(f"{live_server.url}/clusters/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alice-123")
        page.click("button[type=submit]")
        body = admin_api.post("/api/v1/clusters/", cluster_body("stuck", zone="us-west-2b"), format="json").json()
        cluster = Cluster.objects.get(pk=body["cluster"]["id"])
        page.goto(f"{live_server.url}/clusters/{cluster.pk}/")
        page.evaluate("window.__sameDocument = true")  # gone if anything reloads the page

        # 5. The phase fails: the zone form appears in the live panel, without a reload.
        live = page.locator("#cluster-operation")
        expect(live.locator("#operation-panel")).to_have_attribute("data-status", "failed", timeout=90_000)
        expect(live.locator("#zone-change select")).to_be_visible()
        expect(live.locator("#recovery")).to_contain_text("Not enough capacity")
        expect(live.locator("#recovery")).to_contain_text("Delete the cluster")
        expect(live).not_to_contain_text("PATCH")
        expect(page.locator("#cluster-summary")).to_have_attribute("data-status", "failed")
        assert page.evaluate("window.__sameDocument === true")
        screenshot(page, "cluster-failed-recovery.png", tmp_path)
    finally:
        sandbox.world.speedup = 1000

    page.select_option("#id_zone_change", "us-west-2c")
    page.click("#zone-change button[type=submit]")
    expect(page.locator(".message.success")).to_contain_text("Instance groups moved to us-west-2c")
    page.click("#operation-panel button:has-text('Retry from where it stopped')")
    # Retry stays on the cluster page; its panel follows the operation to the end.
    expect(page.locator("h1")).to_have_text("stuck")
    assert f"/clusters/{cluster.pk}/" in page.url
    expect(page.locator(".message.success")).to_contain_text("Retrying")
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#operation-panel")).to_have_attribute("data-status", "succeeded", timeout=90_000)
    # 8. The terminal swap: summary, messages and recovery follow the new status.
    expect(page.locator("#cluster-summary")).to_have_attribute("data-status", "active")
    expect(page.locator("#cluster-summary")).to_contain_text("2 / 2")
    expect(page.locator("#messages")).not_to_contain_text("Retrying")
    expect(page.locator("#recovery")).to_have_count(0)
    assert page.evaluate("window.__sameDocument === true")

    # Delete through the portal: when it ends, the header no longer offers Make active or Delete….
    page.click("#cluster-actions a:has-text('Delete…')")
    page.fill("#id_confirm_name", "stuck")
    page.click("#delete-form button[type=submit]")
    expect(page.locator(".message.success")).to_contain_text("Deleting cluster stuck")
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#operation-panel")).to_have_attribute("data-status", "succeeded", timeout=90_000)
    expect(page.locator("#cluster-summary")).to_have_attribute("data-status", "deleted")
    expect(page.locator("#cluster-summary")).to_contain_text("0 / 0")
    expect(page.locator("#cluster-actions")).not_to_contain_text("Delete")
    expect(page.locator("#cluster-actions")).not_to_contain_text("Make active")
    expect(page.locator("#cluster-actions")).not_to_contain_text("active cluster")
    expect(page.locator("#messages")).not_to_contain_text("Deleting cluster")
    assert page.evaluate("window.__sameDocument === true")
    screenshot(page, "cluster-deleted.png", tmp_path)
