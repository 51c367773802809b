"""In a real browser: add an instance group through the form, follow its operation, scale it inline
(and to the same count: nothing to change), and see its nodes on the nodes tab."""

from __future__ import annotations

import pytest

from clusters.models import ClusterStatus, InstanceGroup
from clusters.serializers import ClusterCreateSerializer
from clusters.services import create_cluster
from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.roles import Role
from tests.browser import BROWSER_MARKS, open_page, screenshot, swapped, wait_idle

from .helpers import cluster_body, wait_for_operation

pytestmark = BROWSER_MARKS


@pytest.fixture
def page():
    yield from open_page(1360, 900)


def test_add_a_group_scale_it_inline_and_see_its_nodes(
    live_server, sandbox, start_worker, team, admin_user, page, tmp_path
):
    from playwright.sync_api import expect

    start_worker()  # after `sandbox`: the worker reads the sandbox endpoint from settings
    access = Access(user=admin_user, team=team, role=Role.ADMIN, via=Via.UI)
    serializer = ClusterCreateSerializer(data=cluster_body("fleet"), context={"access": access})
    assert serializer.is_valid(), serializer.errors
    cluster, operation, _ = create_cluster(access=access, data=serializer.validated_data)
    wait_for_operation(operation.pk)
    cluster.refresh_from_db()
    assert cluster.status == ClusterStatus.ACTIVE

    page.goto(f"{live_server.url}/clusters/{cluster.pk}/?tab=groups")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("#group-gpu")).to_contain_text("ml.g5.xlarge")

    # The add form: zone and instance type come from the catalog; EFA-only stays off for g5.
    page.fill("#id_group_name", "extra")
    expect(page.locator("#id_instance_type option[value='ml.trn1.2xlarge']")).to_have_count(0)
    swapped(page, lambda: page.select_option("#id_group_zone", "us-west-2b"))
    # The zone's own instance types arrive by htmx: us-west-2b offers trn1, us-west-2a does not.
    expect(page.locator("#id_instance_type option[value='ml.trn1.2xlarge']")).to_have_count(1)
    swapped(page, lambda: page.select_option("#id_instance_type", "ml.g5.xlarge"))
    expect(page.locator("#id_efa_only")).to_be_disabled()
    page.fill("#id_group_count", "1")
    page.fill("#id_labels", "team=research")
    page.click("#add-group-button")
    expect(page.locator(".message.success")).to_contain_text("Adding instance group extra")
    panel = page.locator("#operation-panel")
    expect(page.locator(".panel-caption")).to_contain_text("Add instance group")
    page.evaluate("window.__sameDocument = true")  # gone if anything reloaded the page
    page.evaluate(
        "window.__reloads = 0;document.body.addEventListener('cluster-settled', () => { window.__reloads += 1; })"
    )
    # Typing in the form while the operation runs: its end reloads the tab, and what was typed stays.
    page.fill("#id_group_name", "half-typed")
    page.evaluate("document.querySelector('#id_group_name').dataset.before = 'reload'")
    expect(panel).to_have_attribute("data-status", "succeeded", timeout=60_000)
    row = page.locator("#group-extra")
    expect(row).to_contain_text("InService", timeout=15_000)  # the table followed the operation
    expect(page.locator("#groups-table")).to_have_attribute("data-busy", "false")
    page.wait_for_function("() => window.__reloads > 0")
    wait_idle(page)  # the tab's reload is in
    expect(page.locator("#id_group_name")).to_have_value("half-typed")
    expect(page.locator("#id_group_name")).to_be_focused()
    expect(page.locator("#id_group_name")).not_to_have_attribute("data-before", "reload")  # a new field
    page.fill("#id_group_name", "")

    # Scale 1 → 2 inline: the scale operation's panel takes the page's slot, the row follows it.
    row.locator("input[name=count]").fill("2")
    swapped(page, lambda: row.locator("button:has-text('Scale')").click())
    expect(page.locator("#groups-flash")).to_contain_text("Scaling extra from 1 to 2")
    expect(page.locator(".panel-caption")).to_contain_text("Scale instance group")
    expect(page.locator("#operation-panel")).to_have_attribute("data-status", "succeeded", timeout=60_000)
    expect(page.locator("#group-extra")).to_have_attribute("data-count", "2", timeout=15_000)
    assert InstanceGroup.objects.get(cluster=cluster, name="extra").count == 2

    # The same count again: the explicit diff answers without starting anything.
    page.locator("#group-extra input[name=count]").fill("2")
    swapped(page, lambda: page.locator("#group-extra button:has-text('Scale')").click())
    expect(page.locator("#groups-flash")).to_contain_text("Already at 2 — nothing to change.")
    assert page.evaluate("window.__sameDocument === true")  # htmx swapped the pieces, no reload
    # A count selected to be typed over, the tab reloaded just then (an operation's end), then the key:
    # it never lands after the old value ("2" + "3" = 23 nodes); a number field has no selection to
    # carry over, so its focus stays behind and the new field shows the server's count.
    count = page.locator("#group-extra input[name=count]")
    count.focus()
    count.evaluate("field => field.select()")
    swapped(page, lambda: page.evaluate("htmx.trigger(document.body, 'cluster-settled')"))
    page.keyboard.insert_text("3")
    expect(page.locator("#group-extra input[name=count]")).to_have_value("2")
    screenshot(page, "cluster-groups.png", tmp_path)

    # The nodes tab lists the group's two nodes, healthy; a diagnosis reads and suggests nothing.
    swapped(page, lambda: page.click(".tabs a:has-text('Nodes')"))
    extra_nodes = page.locator("tr.node-row", has_text="extra")
    expect(extra_nodes).to_have_count(2)
    expect(extra_nodes.locator(".badge.health-ok")).to_have_count(2)
    swapped(page, lambda: extra_nodes.first.locator("button.diagnose").click())
    expect(page.locator("#diagnosis")).to_have_attribute("data-healthy", "true")
    expect(page.locator("#diagnosis")).to_contain_text("Read-only: nothing was changed")
    screenshot(page, "cluster-nodes.png", tmp_path)
