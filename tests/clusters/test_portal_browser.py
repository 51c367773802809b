"""In a real browser: create a cluster through the portal form and watch its phases finish live."""

from __future__ import annotations

import pytest

from clusters.models import Cluster, ClusterStatus
from tests.browser import BROWSER_MARKS, open_page, screenshot, swapped

pytestmark = BROWSER_MARKS


@pytest.fixture
def page():
    yield from open_page(1280, 860)


def test_create_a_cluster_in_the_form_and_follow_it_to_the_end(
    live_server, sandbox, start_worker, team, admin_user, page, tmp_path
):
    from playwright.sync_api import expect

    worker = start_worker()  # after `sandbox`: the worker reads the sandbox endpoint from settings
    page.goto(f"{live_server.url}/clusters/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator(".empty-state h2")).to_have_text("No clusters yet")
    screenshot(page, "clusters-empty.png", tmp_path)

    page.click(".empty-state a.button")
    expect(page.locator("h1")).to_have_text("Create cluster")
    page.evaluate("window.__sameDocument = true")
    page.fill("#id_name", "train")
    swapped(page, lambda: page.select_option("#id_region", "us-west-2"))
    swapped(page, lambda: page.select_option("#id_availability_zone", "us-west-2b"))
    # The zone's own instance types arrive by htmx: us-west-2b offers trn1, us-west-2a does not.
    expect(page.locator("#id_instance_type option[value='ml.trn1.2xlarge']")).to_have_count(1)
    swapped(page, lambda: page.select_option("#id_instance_type", "ml.g5.xlarge"))
    expect(page.locator(".type-facts")).to_contain_text("1 × A10G")
    expect(page.locator("#id_efa_only")).to_be_disabled()
    page.fill("#id_count", "2")
    page.click("#preflight-button")
    expect(page.locator("#preflight")).to_have_attribute("data-ok", "true")
    assert page.evaluate("window.__sameDocument === true")  # the cascade and preflight swapped fragments
    screenshot(page, "cluster-form.png", tmp_path)

    page.click("button[type=submit].primary")
    expect(page.locator("h1")).to_have_text("train")
    cluster = Cluster.objects.get(team=team, name="train")
    assert page.url.endswith(f"/clusters/{cluster.pk}/")
    expect(page.locator(".message.success")).to_contain_text("Creating cluster train")
    page.evaluate("window.__sameDocument = true")  # gone if anything reloaded the page
    panel = page.locator("#operation-panel")
    expect(panel).to_have_attribute("data-status", "succeeded", timeout=60_000)
    expect(panel.locator("tr.phase-succeeded")).to_have_count(8)
    expect(page.locator("#cluster-summary")).to_have_attribute("data-status", "active", timeout=10_000)
    expect(page.locator("#cluster-summary")).to_contain_text("2 / 2")
    # The overview reloaded itself once the cluster settled: what the phases recorded shows.
    expect(page.locator("#cluster-tab")).to_contain_text("arn:aws:sagemaker")
    assert page.evaluate("window.__sameDocument === true")  # no reload: htmx swapped the pieces
    assert panel.get_attribute("hx-trigger") is None  # a terminal panel stops polling
    assert page.locator("#cluster-summary").get_attribute("hx-trigger") is None
    assert Cluster.objects.get(pk=cluster.pk).status == ClusterStatus.ACTIVE, worker.log()[-2000:]
    screenshot(page, "cluster-page.png", tmp_path)

    page.click(".tabs a:has-text('Network')")
    expect(page.locator("#cluster-tab")).to_contain_text("Compute subnets")
    expect(page.locator("#cluster-tab")).to_contain_text("vpc-")
    screenshot(page, "cluster-network.png", tmp_path)

    page.goto(f"{live_server.url}/clusters/")
    expect(page.locator("table.clusters")).to_contain_text("train")
    expect(page.locator(".cluster-switcher select")).to_have_value(str(cluster.pk))
    screenshot(page, "clusters-list.png", tmp_path)


def test_the_region_list_marks_regions_without_accelerator_types_once_loaded(
    live_server, sandbox, team, admin_user, page
):
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/clusters/new/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Create cluster")
    group = page.locator("#id_region optgroup[label='No accelerator types offered']")
    expect(group.locator("option[value='af-south-1']")).to_have_count(1, timeout=30_000)
    expect(group.locator("option[value='us-west-2']")).to_have_count(0)
    expect(page.locator("#id_region")).to_have_value("us-west-2")
    page.select_option("#id_region", "eu-west-1")  # the marked list still drives the zones
    expect(page.locator("#id_availability_zone")).to_have_value("eu-west-1a")
