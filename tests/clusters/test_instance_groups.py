"""Instance groups and nodes: add with placement, immutable fields, explicit-diff scaling, health and remediation."""

from __future__ import annotations

import ipaddress

import pytest
from kubernetes import client as k8s

from clusters.models import Cluster, ComputeSubnet, InstanceGroup
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from instantstart.operations.models import Operation
from tests.clusters.helpers import add_fault, cluster_body, sandbox_calls, wait_for_operation
from tests.support import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


@pytest.fixture
def cluster(admin_api, start_worker) -> Cluster:
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("fleet"), format="json").json()
    wait_for_operation(body["operation"]["id"])
    return Cluster.objects.get(pk=body["cluster"]["id"])


def kube_nodes(team, cluster: Cluster, group: str) -> list:
    api = api_client(team_cloud(team, "us-west-2"), cluster.eks_cluster_name)
    return k8s.CoreV1Api(api).list_node(label_selector=f"sagemaker.amazonaws.com/instance-group-name={group}").items


def test_add_a_spot_efa_only_p5_group_in_a_zone_without_a_subnet(admin_api, team, cluster, sandbox):
    assert not ComputeSubnet.objects.filter(cluster=cluster, availability_zone="us-west-2b").exists()
    before = sandbox_calls(sandbox, team.sandbox_account_id)
    response = admin_api.post(
        f"/api/v1/clusters/{cluster.pk}/instance-groups/",
        {
            "name": "p5-spot",
            "instance_type": "ml.p5.48xlarge",
            "count": 2,
            "capacity_type": "spot",
            "efa_only": True,
            "availability_zone": "us-west-2b",
            "deep_health_checks": ["InstanceStress"],
            "labels": {"team": "research"},
        },
        format="json",
    )
    assert response.status_code == 202, response.json()
    operation = response.json()["operation"]
    assert [p["name"] for p in operation["phases"]] == ["placement", "hyperpod"]
    wait_for_operation(operation["id"])

    subnet = ComputeSubnet.objects.get(cluster=cluster, availability_zone="us-west-2b")
    assert ipaddress.ip_network(subnet.cidr).prefixlen == 20
    others = [ipaddress.ip_network(s.cidr) for s in ComputeSubnet.objects.filter(cluster=cluster).exclude(pk=subnet.pk)]
    assert not any(ipaddress.ip_network(subnet.cidr).overlaps(o) for o in others)
    group = InstanceGroup.objects.get(cluster=cluster, name="p5-spot")
    assert group.subnet_id == subnet.subnet_id and group.status == "InService"
    nodes = kube_nodes(team, cluster, "p5-spot")
    assert len(nodes) == 2
    assert {n.metadata.labels["node.kubernetes.io/instance-type"] for n in nodes} == {"ml.p5.48xlarge"}
    assert {n.metadata.labels["topology.kubernetes.io/zone"] for n in nodes} == {"us-west-2b"}
    assert {n.metadata.labels["team"] for n in nodes} == {"research"}
    assert {n.status.allocatable["nvidia.com/gpu"] for n in nodes} == {"8"}
    after = sandbox_calls(sandbox, team.sandbox_account_id)
    assert after.get("sagemaker:UpdateCluster", 0) - before.get("sagemaker:UpdateCluster", 0) == 1
    assert after["ec2:CreateSubnet"] - before["ec2:CreateSubnet"] == 1


def test_bad_groups_are_400s_naming_the_field_and_create_nothing(admin_api, cluster, sandbox, team):
    base = f"/api/v1/clusters/{cluster.pk}/instance-groups/"
    before = sandbox_calls(sandbox, team.sandbox_account_id)
    efa = admin_api.post(
        base, {"name": "small", "instance_type": "ml.g5.xlarge", "count": 1, "efa_only": True}, format="json"
    )
    assert efa.status_code == 400 and "efa_only" in efa.json()["error"]["fields"], efa.json()
    dup = admin_api.post(base, {"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 1}, format="json")
    assert dup.status_code == 400 and "name" in dup.json()["error"]["fields"]
    quota = admin_api.post(base, {"name": "huge", "instance_type": "ml.p5.48xlarge", "count": 40}, format="json")
    assert quota.status_code == 400 and "count" in quota.json()["error"]["fields"]
    assert list(cluster.instance_groups.values_list("name", flat=True)) == ["gpu"]
    assert sandbox_calls(sandbox, team.sandbox_account_id).get("sagemaker:UpdateCluster", 0) == before.get(
        "sagemaker:UpdateCluster", 0
    )


def test_capacity_type_and_network_mode_cannot_change(admin_api, cluster):
    url = f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/"
    for field, value in [("capacity_type", "spot"), ("efa_only", True), ("instance_type", "ml.p5.48xlarge")]:
        response = admin_api.patch(url, {field: value}, format="json")
        assert response.status_code == 400, response.json()
        assert field in response.json()["error"]["fields"]
    assert InstanceGroup.objects.get(cluster=cluster, name="gpu").capacity_type == "on_demand"


def test_scaling_is_an_explicit_diff(admin_api, team, cluster, sandbox):
    url = f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/"
    before = sandbox_calls(sandbox, team.sandbox_account_id).get("sagemaker:UpdateCluster", 0)
    operations = Operation.objects.count()
    same = admin_api.patch(url, {"count": 2}, format="json")
    assert same.status_code == 200 and same.json()["changed"] is False
    assert Operation.objects.count() == operations
    assert sandbox_calls(sandbox, team.sandbox_account_id).get("sagemaker:UpdateCluster", 0) == before

    up = admin_api.patch(url, {"count": 3}, format="json")
    assert up.status_code == 202 and up.json()["changed"] is True
    wait_for_operation(up.json()["operation"]["id"])
    assert len(kube_nodes(team, cluster, "gpu")) == 3
    assert InstanceGroup.objects.get(cluster=cluster, name="gpu").count == 3
    assert admin_api.patch(url, {"count": 3}, format="json").json()["changed"] is False


def test_health_fault_diagnosis_and_remediation(admin_api, team, cluster, sandbox):
    nodes_url = f"/api/v1/clusters/{cluster.pk}/nodes/"
    nodes = admin_api.get(nodes_url).json()["results"]
    assert len(nodes) == 2 and {n["health"] for n in nodes} == {"Schedulable"}
    victim = nodes[0]["instance_id"]

    sandbox.world.speedup = 20  # slow enough to watch HyperPod mark the node before it recovers it
    try:
        add_fault(sandbox, kind="deep_health_fail", instance_id=victim, fault_reason="DcgmDiagnosticLevel4Failed")
        unhealthy = wait_until(
            lambda: next(
                (
                    n
                    for n in admin_api.get(nodes_url).json()["results"]
                    if n["instance_id"] == victim and n["health"] != "Schedulable"
                ),
                None,
            ),
            message="the node to turn unhealthy",
        )
        assert unhealthy["health"].startswith("Unschedulable")
        assert unhealthy["deep_health_check"] == "Failed"
        assert unhealthy["fault_reason"] == "DcgmDiagnosticLevel4Failed"
        filtered = admin_api.get(f"{nodes_url}?health={unhealthy['health']}").json()["results"]
        assert [n["instance_id"] for n in filtered] == [victim]
        calls = sandbox_calls(sandbox, team.sandbox_account_id)
        diagnosis = admin_api.get(f"{nodes_url}{victim}/diagnosis/").json()
        assert diagnosis["healthy"] is False
        assert [a["action"] for a in diagnosis["suggested_actions"]] == ["investigate", "reboot", "replace"]
        assert any("DcgmDiagnosticLevel4Failed" in f["message"] for f in diagnosis["findings"])
        cluster_report = admin_api.get(f"/api/v1/clusters/{cluster.pk}/diagnosis/").json()
        assert cluster_report["nodes"]["unhealthy"] == 1
        after = sandbox_calls(sandbox, team.sandbox_account_id)
        mutations = {
            k: after[k] - calls.get(k, 0)
            for k in after
            if not k.split(":")[1].startswith(("Describe", "List", "Get")) and after[k] != calls.get(k, 0)
        }
        assert mutations == {}  # diagnosis only read
    finally:
        sandbox.world.speedup = 1000

    # HyperPod's automatic recovery replaces it; then reboot and replace a healthy node ourselves.
    wait_until(
        lambda: (
            {n["health"] for n in admin_api.get(nodes_url).json()["results"]} == {"Schedulable"}
            and len(admin_api.get(nodes_url).json()["results"]) == 2
        ),
        timeout=60,
        message="recovery",
    )
    healthy = admin_api.get(nodes_url).json()["results"][0]["instance_id"]
    reboot = admin_api.post(f"{nodes_url}{healthy}/reboot/")
    assert reboot.status_code == 202
    wait_for_operation(reboot.json()["id"])
    replace = admin_api.post(f"{nodes_url}{healthy}/replace/")
    assert replace.status_code == 202
    wait_for_operation(replace.json()["id"])
    ids = {n["instance_id"] for n in admin_api.get(nodes_url).json()["results"]}
    assert healthy not in ids and len(ids) == 2


def test_another_team_gets_404_on_every_group_and_node_path(outsider_api, cluster):
    base = f"/api/v1/clusters/{cluster.pk}"
    for method, path in [
        ("get", f"{base}/instance-groups/"),
        ("post", f"{base}/instance-groups/"),
        ("get", f"{base}/instance-groups/gpu/"),
        ("patch", f"{base}/instance-groups/gpu/"),
        ("delete", f"{base}/instance-groups/gpu/"),
        ("get", f"{base}/nodes/"),
        ("post", f"{base}/nodes/i-0123456789abcdef0/reboot/"),
        ("post", f"{base}/nodes/i-0123456789abcdef0/replace/"),
        ("post", f"{base}/nodes/i-0123456789abcdef0/delete/"),
        ("get", f"{base}/nodes/i-0123456789abcdef0/diagnosis/"),
        ("get", f"{base}/diagnosis/"),
    ]:
        response = getattr(outsider_api, method)(path, {"count": 5}, format="json")
        assert response.status_code == 404, (method, path, response.status_code)
    assert InstanceGroup.objects.get(cluster=cluster, name="gpu").count == 2


def test_delete_a_group_keeps_its_subnet(admin_api, cluster):
    response = admin_api.delete(f"/api/v1/clusters/{cluster.pk}/instance-groups/gpu/")
    assert response.status_code == 202
    wait_for_operation(response.json()["id"])
    assert not InstanceGroup.objects.filter(cluster=cluster, name="gpu").exists()
    assert ComputeSubnet.objects.filter(cluster=cluster, availability_zone="us-west-2a").exists()
