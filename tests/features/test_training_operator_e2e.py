"""Enable the training operator on a fresh cluster (real worker, sandbox): dependencies first, its CRD
served; the same PATCH again changes nothing; the 400 rules; idempotency; disable leaves nothing."""

from __future__ import annotations

import pytest

from features.gate import has_feature
from instantstart.operations.models import Operation
from tests.clusters.helpers import wait_for_operation
from tests.features.helpers import active_cluster, features_of, leftovers, mutating_calls
from tests.mcp_client import MCP
from tests.mcp_client import body as tool_body

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


def test_training_operator_enable_no_op_rules_and_disable(
    admin_api, admin_token, outsider_api, team, sandbox, start_worker
):
    start_worker()
    cluster = active_cluster(admin_api)
    url = f"/api/v1/clusters/{cluster.pk}/features/"
    before = features_of(admin_api, cluster)
    assert before["training_operator"]["enabled"] is False and before["training_operator"]["status"] == "disabled"
    assert before["training_operator"]["requires"] == ["cert_manager", "pod_identity_agent"]
    assert before["cert_manager"]["kind"] == "dependency" and before["cert_manager"]["enabled"] is False
    assert "training_operator" in before["cert_manager"]["required_by"]
    assert before["pod_identity_agent"]["enabled"] is True  # the cluster create installed it
    assert not has_feature(cluster, "training_operator")

    response = admin_api.patch(url, {"training_operator": True}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert [(a["feature"], a["action"]) for a in body["plan"]] == [
        ("cert_manager", "enable"),
        ("training_operator", "enable"),
    ]
    assert body["summary"] == "Will install cert-manager, then install HyperPod training operator."
    assert body["operation"]["status_tool"] == "get_operation"
    operation = wait_for_operation(body["operation"]["id"])
    assert [p.name for p in operation.phases.order_by("index")] == ["enable_cert_manager", "enable_training_operator"]
    assert has_feature(cluster, "training_operator")  # the HyperPodPyTorchJob CRD is served
    after = features_of(admin_api, cluster)
    assert after["training_operator"]["enabled"] is True and after["training_operator"]["status"] == "enabled"
    assert after["cert_manager"]["enabled"] is True and after["training_operator"]["drift"] is False

    # The same request again: 200 changed:false and not one mutating call.
    calls = mutating_calls(sandbox, team)
    again = admin_api.patch(url, {"training_operator": {"enabled": True}}, format="json")
    assert again.status_code == 200 and again.json()["changed"] is False
    assert mutating_calls(sandbox, team) == calls
    # The MCP tools are the same endpoint: the same list, the same no-op.
    mcp = MCP(admin_token)
    listed = tool_body(mcp.call("get_features", {"cluster_id": str(cluster.pk)}))
    assert listed == admin_api.get(url).json()
    unchanged = tool_body(mcp.call("update_features", {"cluster_id": str(cluster.pk), "training_operator": True}))
    assert unchanged["changed"] is False
    assert mutating_calls(sandbox, team) == calls

    # 400 rules, each naming what is wrong; nothing starts.
    alone = admin_api.patch(url, {"cert_manager": False}, format="json")
    assert alone.status_code == 400
    message = str(alone.json()["error"]["fields"]["cert_manager"])
    assert "training_operator" in message and "cert_manager" in message
    unknown = admin_api.patch(url, {"warp_drive": True}, format="json")
    assert unknown.status_code == 400 and "warp_drive" in unknown.json()["error"]["fields"]
    setting = admin_api.patch(url, {"training_operator": {"enabled": True, "colour": "red"}}, format="json")
    assert setting.status_code == 400 and "colour" in str(setting.json()["error"]["fields"]["training_operator"])
    out_of_range = admin_api.patch(
        url, {"tiered_checkpointing": {"enabled": True, "memory_percent": 101}}, format="json"
    )
    assert out_of_range.status_code == 400
    assert "between 0 and 100" in str(out_of_range.json()["error"]["fields"]["tiered_checkpointing"])
    assert mutating_calls(sandbox, team) == calls
    assert Operation.objects.filter(kind="features.update").count() == 1

    # Another team: the same 404 on GET and PATCH.
    assert outsider_api.get(url).status_code == 404
    assert outsider_api.patch(url, {"training_operator": False}, format="json").status_code == 404

    # Disable both at once, twice with one Idempotency-Key: one operation; cert-manager goes (InstantStart
    # installed it), the pod identity agent stays (the cluster create did), nothing tagged is left.
    first = admin_api.patch(url, {"training_operator": False}, format="json", HTTP_IDEMPOTENCY_KEY="off-1")
    assert first.status_code == 202, first.json()
    assert [(a["feature"], a["action"]) for a in first.json()["plan"]] == [
        ("training_operator", "disable"),
        ("cert_manager", "disable"),
    ]
    second = admin_api.patch(url, {"training_operator": False}, format="json", HTTP_IDEMPOTENCY_KEY="off-1")
    assert second.json()["operation"]["id"] == first.json()["operation"]["id"]
    wait_for_operation(first.json()["operation"]["id"])
    final = features_of(admin_api, cluster)
    assert final["training_operator"]["enabled"] is False and final["cert_manager"]["enabled"] is False
    assert final["pod_identity_agent"]["enabled"] is True
    assert not has_feature(cluster, "training_operator")
    assert leftovers(team, cluster) == {}
