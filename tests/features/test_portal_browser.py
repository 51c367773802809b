"""In a real browser: the Advanced features tab — toggle KubeRay, preview the plan, confirm, watch the
phases finish live; only the changed field is sent."""

from __future__ import annotations

import pytest

from clusters.serializers import ClusterCreateSerializer
from clusters.services import create_cluster
from features.gate import has_feature
from instantstart.operations.models import Operation
from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.roles import Role
from tests.browser import BROWSER_MARKS, open_page, screenshot
from tests.clusters.helpers import cluster_body, wait_for_operation

pytestmark = BROWSER_MARKS


@pytest.fixture
def page():
    yield from open_page(1360, 1000)


def test_toggle_a_feature_preview_confirm_and_watch_it_finish(
    live_server, sandbox, start_worker, team, admin_user, page, tmp_path
):
    from playwright.sync_api import expect

    start_worker()
    access = Access(user=admin_user, team=team, role=Role.ADMIN, via=Via.UI)
    serializer = ClusterCreateSerializer(data=cluster_body("panel"), context={"access": access})
    assert serializer.is_valid(), serializer.errors
    cluster, operation, _ = create_cluster(access=access, data=serializer.validated_data)
    wait_for_operation(operation.pk)
    cluster.refresh_from_db()

    page.goto(f"{live_server.url}/clusters/{cluster.pk}/?tab=features")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    row = page.locator("#feature-kuberay")
    expect(row).to_have_attribute("data-status", "disabled")
    # The pod identity agent is required by nothing enabled yet, and the tab offers every feature.
    expect(page.locator("#feature-training_operator")).to_contain_text("cert_manager")
    screenshot(page, "features-before.png", tmp_path)

    page.check("#toggle-kuberay")
    page.click("#features-preview-button")
    plan = page.locator("#features-plan")
    expect(plan).to_contain_text("Will install KubeRay operator.")
    expect(plan.locator("input[type=hidden][name=kuberay]")).to_have_value("on")
    # Only the changed field travels: no other feature is in the confirm form.
    assert plan.locator("input[type=hidden]:not([name=csrfmiddlewaretoken])").count() == 1
    screenshot(page, "features-plan.png", tmp_path)
    page.click("#features-confirm")
    # the features operation's own panel (the cluster page also shows the cluster's finished create)
    panel = page.locator("#features-operation #operation-panel")
    expect(panel).to_have_attribute("data-status", "succeeded", timeout=60_000)
    expect(page.locator("#feature-kuberay")).to_have_attribute("data-status", "enabled", timeout=30_000)
    expect(page.locator("#toggle-kuberay")).to_be_checked()
    screenshot(page, "features-after.png", tmp_path)

    op = Operation.objects.get(kind="features.update")
    assert [p.name for p in op.phases.all()] == ["enable_kuberay"]
    assert op.via == "ui"
    assert has_feature(cluster, "kuberay")
