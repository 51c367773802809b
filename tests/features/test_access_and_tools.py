"""Who may see and change features, on every face; the MCP tools' listing (no cloud needed)."""

from __future__ import annotations

import pytest

from tests.factories import ClusterFactory
from tests.mcp_client import MCP, body

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def theirs(other_team):
    return ClusterFactory(team=other_team, name="theirs", eks_cluster_name="theirs-eks", hyperpod_cluster_name="hp")


def test_the_tools_are_listed_with_their_annotations_and_status_tool(admin_token):
    tools = {tool.name: tool for tool in MCP(admin_token, read_only=False).list_tools()}
    get, update = tools["get_features"], tools["update_features"]
    assert get.annotations.read_only_hint is True
    assert update.annotations.read_only_hint is False and update.annotations.idempotent_hint is True
    assert update.annotations.destructive_hint is False
    assert "get_operation" in update.description
    properties = update.input_schema["properties"]
    assert {"cluster_id", "training_operator", "tiered_checkpointing", "cert_manager", "idempotency_key"} <= set(
        properties
    )
    assert "update_features" not in MCP(admin_token, read_only=True).tool_names()


def test_another_teams_cluster_is_the_same_404_on_every_path_and_tool(admin_api, admin_token, theirs):
    url = f"/api/v1/clusters/{theirs.pk}/features/"
    assert admin_api.get(url).status_code == 404
    assert admin_api.patch(url, {"kuberay": True}, format="json").status_code == 404
    mcp = MCP(admin_token)
    for tool, arguments in (
        ("get_features", {"cluster_id": str(theirs.pk)}),
        ("update_features", {"cluster_id": str(theirs.pk), "kuberay": True}),
    ):
        result = mcp.call(tool, arguments)
        assert result.is_error and body(result)["error"]["code"] == "not_found", tool


def test_viewers_and_members_may_not_change_features(viewer_api, member_api, team):
    cluster = ClusterFactory(team=team, name="mine", eks_cluster_name="mine-eks")
    url = f"/api/v1/clusters/{cluster.pk}/features/"
    assert viewer_api.patch(url, {"kuberay": True}, format="json").status_code == 403
    assert member_api.patch(url, {"kuberay": True}, format="json").status_code == 403


def test_a_cluster_that_is_not_active_yet_has_no_features_to_change(admin_api, team):
    cluster = ClusterFactory(team=team, name="young", status="creating")
    response = admin_api.patch(f"/api/v1/clusters/{cluster.pk}/features/", {"kuberay": True}, format="json")
    assert response.status_code == 409 and "creating" in response.json()["error"]["message"]
