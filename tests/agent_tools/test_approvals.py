"""The human gate (issue 12 item 5): a costly change from an agent token waits for a team admin."""

from __future__ import annotations

import json

import pytest

from clusters.models import Cluster, ClusterStatus, InstanceGroup
from clusters.services import create_cluster
from instantstart.operations.models import AuditEvent, Operation, OperationStatus
from instantstart.tenancy.roles import Role
from instantstart.tenancy.services import create_token, system_access
from tests.mcp_client import MCP, body
from tests.support import client_with, make_member, token_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox")]

WAIT = "wait_for_operation"
# 8 × ml.g5.xlarge at the shipped 1.41 USD/h: 11.28 USD/h, above a threshold of 10.
COSTLY = {"name": "big", "instance_type": "ml.g5.xlarge", "count": 8}


def settled_cluster(team, user) -> Cluster:
    data = {
        "name": "train",
        "region": "us-west-2",
        "availability_zone": "us-west-2a",
        "kubernetes_version": "1.31",
        "storage": "s3",
        "instance_groups": [
            {
                "name": "gpu",
                "instance_type": "ml.g5.xlarge",
                "count": 1,
                "capacity_type": "on_demand",
                "efa_only": False,
            }
        ],
    }
    cluster, operation, _ = create_cluster(access=system_access(team, user), data=data)
    Operation.objects.filter(pk=operation.pk).update(status=OperationStatus.SUCCEEDED)
    Cluster.objects.filter(pk=cluster.pk).update(
        status=ClusterStatus.ACTIVE, eks_cluster_name="train-gone", hyperpod_cluster_name="train-hp-gone"
    )
    return cluster


@pytest.fixture
def gated(team, admin_user):
    """The team holds agent changes above 10 USD/h; an agent token of another admin; a settled cluster."""
    team.agent_approval_above = 10
    team.save()
    owner = make_member(team, "ada", Role.ADMIN)
    _, raw = create_token(access=system_access(team, owner), user=owner, name="claude", role=Role.ADMIN, agent=True)
    return {"agent": MCP(raw), "cluster": settled_cluster(team, admin_user), "owner": owner}


def ask(gated, group=COSTLY):
    return gated["agent"].call("add_instance_group", {"cluster_id": str(gated["cluster"].pk), **group})


def held_approval(result) -> dict:
    assert not result.is_error, body(result)
    approval = body(result)["approval"]
    assert approval["status"] == "pending"
    assert json.loads(result.content[1].text) == {"next": WAIT, "operation_id": approval["id"]}
    return approval


def nothing_started():
    assert not InstanceGroup.objects.filter(name="big").exists()
    assert not Operation.objects.filter(kind="instance_group.add").exists()
    assert not AuditEvent.objects.filter(action="instance_group.add").exists()


def test_a_costly_group_is_held_until_an_admin_approves(gated, admin_token, member_token, admin_user):
    approval = held_approval(ask(gated))
    assert approval["estimate"]["usd_per_hour"] == pytest.approx(11.28)
    assert approval["estimate"]["threshold"] == 10
    assert approval["estimate"]["instances"] == {"ml.g5.xlarge": 8}
    assert (approval["tool"], approval["requested_by"]) == ("add_instance_group", "ada")
    nothing_started()
    # Asking again (a retry) is the same approval.
    assert held_approval(ask(gated))["id"] == approval["id"]

    waited = body(gated["agent"].call(WAIT, {"id": approval["id"], "timeout_seconds": 1}))
    assert (waited["timed_out"], waited["approval"]["status"]) == (True, "pending")
    nothing_started()

    url = f"/api/v1/approvals/{approval['id']}/"
    assert client_with(member_token).post(url + "approve/").status_code == 403
    decided = client_with(admin_token).post(url + "approve/", {"reason": "ok for the demo"}, format="json")
    assert decided.status_code == 200, decided.json()
    assert (decided.json()["status"], decided.json()["decided_by"]) == ("approved", admin_user.username)

    done = gated["agent"].call(WAIT, {"id": approval["id"], "timeout_seconds": 5})
    answer = body(done)
    assert answer["terminal"] is True, answer
    operation = answer["approval"]["operation"]
    assert operation["kind"] == "instance_group.add"
    assert (answer["next"], answer["operation_id"]) == (WAIT, operation["id"])
    assert InstanceGroup.objects.get(name="big").count == 8
    # It ran once, as the agent's token over MCP; the audit shows who approved.
    assert Operation.objects.filter(kind="instance_group.add").count() == 1
    assert list(AuditEvent.objects.filter(action="instance_group.add").values_list("via", "actor__username")) == [
        ("mcp", "ada")
    ]
    approved = AuditEvent.objects.get(action="approval.approve")
    assert (approved.actor.username, approved.summary["reason"]) == (admin_user.username, "ok for the demo")
    again = body(gated["agent"].call(WAIT, {"id": approval["id"], "timeout_seconds": 1}))
    assert again["terminal"] and Operation.objects.filter(kind="instance_group.add").count() == 1
    assert client_with(admin_token).post(url + "reject/").status_code == 409


def test_a_rejected_change_leaves_nothing_created(gated, admin_token):
    approval = held_approval(ask(gated))
    rejected = client_with(admin_token).post(f"/api/v1/approvals/{approval['id']}/reject/")
    assert rejected.json()["status"] == "rejected"
    answer = body(gated["agent"].call(WAIT, {"id": approval["id"], "timeout_seconds": 5}))
    assert (answer["terminal"], answer["approval"]["status"]) == (True, "rejected")
    assert "next" not in answer
    nothing_started()
    assert AuditEvent.objects.filter(action="approval.reject").exists()


def test_cheap_changes_and_people_are_not_held(gated, team, admin_user):
    cheap = ask(gated, {"name": "small", "instance_type": "ml.g5.xlarge", "count": 2})  # 2.82 USD/h
    assert "instance_group" in body(cheap), body(cheap)
    # A token not marked agent goes ahead whatever it costs.
    person = MCP(token_for(team, admin_user, Role.ADMIN))
    result = person.call("add_instance_group", {"cluster_id": str(gated["cluster"].pk), **COSTLY})
    assert "instance_group" in body(result), body(result)


def test_team_admins_set_the_threshold_and_prices(admin_token, member_token, team):
    admin = client_with(admin_token)
    changed = admin.patch(
        "/api/v1/team/", {"agent_approval_above": 50, "price_overrides": {"ml.g5.xlarge": 2.5}}, format="json"
    )
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["agent_approval_above"], changed.json()["price_overrides"]) == (50.0, {"ml.g5.xlarge": 2.5})
    assert admin.patch("/api/v1/team/", {"price_overrides": {"p5": 1}}, format="json").status_code == 400
    assert (
        client_with(member_token).patch("/api/v1/team/", {"agent_approval_above": 1}, format="json").status_code == 403
    )
    team.refresh_from_db()
    assert team.price_overrides == {"ml.g5.xlarge": 2.5}
    created = admin.post("/api/v1/tokens/", {"name": "bot", "role": "viewer", "agent": True}, format="json")
    assert created.status_code == 201 and created.json()["agent"] is True


def test_an_admin_approves_in_the_portal(gated, admin_client, member_client, viewer_client):
    approval = held_approval(ask(gated))
    page = admin_client.get("/approvals/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "add_instance_group" in html and "11.28 USD/h" in html and "Approve" in html
    assert "Approve" not in viewer_client.get("/approvals/").content.decode()  # viewers see, admins decide
    assert member_client.post(f"/approvals/{approval['id']}/approve/").status_code == 403
    response = admin_client.post(f"/approvals/{approval['id']}/approve/", {"reason": "go"})
    assert response.status_code == 302
    answer = body(gated["agent"].call(WAIT, {"id": approval["id"], "timeout_seconds": 5}))
    assert answer["approval"]["operation"]["kind"] == "instance_group.add"
    assert AuditEvent.objects.get(action="approval.approve").via == "ui"
    decided = admin_client.get("/approvals/").content.decode()
    assert "Nothing is waiting for approval." in decided and "Approved by alice" in decided


def test_the_portal_sets_the_threshold_and_agent_tokens(admin_client, team):
    page = admin_client.get("/team/").content.decode()
    assert 'name="agent_approval_above"' in page and 'name="agent"' in page
    team.refresh_from_db()
    posted = {"name": team.name, "cloud": team.cloud, "default_region": team.default_region}
    admin_client.post("/team/settings/", {**posted, "agent_approval_above": "25"})
    team.refresh_from_db()
    assert team.agent_approval_above == 25
    admin_client.post("/team/settings/", {**posted, "agent_approval_above": ""})
    team.refresh_from_db()
    assert team.agent_approval_above is None
    admin_client.post("/team/tokens/", {"name": "claude", "role": "member", "agent": "on"})
    assert team.tokens.get(name="claude").agent is True
