"""Instance groups: one serializer for a cluster create and a group add — Kubernetes' label and taint
rules, HyperPod's bounds, unknown fields refused, and every field error of a body at once."""

from __future__ import annotations

import pytest

from clusters.models import Cluster, InstanceGroup
from tests.clusters.helpers import GROUP, cluster_body, cluster_with_group, sandbox_calls

pytestmark = pytest.mark.usefixtures("sandbox", "no_enqueue")


def fields(response) -> dict:
    assert response.status_code == 400, response.json()
    return response.json()["error"]["fields"]


@pytest.fixture
def active(team) -> Cluster:
    return cluster_with_group(team, name="fleet", hyperpod_cluster_name="fleet-hp")


def add(api, cluster: Cluster, **group):
    return api.post(f"/api/v1/clusters/{cluster.pk}/instance-groups/", {**GROUP, **group}, format="json")


@pytest.mark.parametrize(
    ("labels", "why"),
    [
        ({"bad key!": "v"}, "the name must consist of alphanumeric"),
        ({"a" * 64: "v"}, "no more than 63"),
        ({"Example.com/x": "v"}, "lowercase RFC 1123 subdomain"),
        ({("a" * 254) + "/x": "v"}, "no more than 253"),
        ({"a/b/c": "v"}, "at most one '/'"),
        ({"kubernetes.io/role": "v"}, "reserved"),
        ({"node.kubernetes.io/x": "v"}, "reserved"),
        ({"k8s.io/x": "v"}, "reserved"),
        ({"sagemaker.amazonaws.com/instance-group-name": "v"}, "reserved"),
        ({"team": "bad value!"}, "value: must consist"),
        ({"team": "-x"}, "value: must consist"),
        ({"team": ""}, "value: must be non-empty"),
    ],
)
def test_a_label_kubernetes_refuses_is_a_400_naming_it_in_add_and_create(admin_api, active, labels, why):
    key = next(iter(labels))
    found = fields(add(admin_api, active, name="extra", labels=labels))["labels"]
    assert why in " ".join(found[key])
    body = cluster_body("new", instance_groups=[{**GROUP, "labels": labels}])
    found = fields(admin_api.post("/api/v1/clusters/", body, format="json"))["instance_groups"]["0"]["labels"]
    assert why in " ".join(found[key])
    assert not InstanceGroup.objects.filter(name="extra").exists() and not Cluster.objects.filter(name="new").exists()


@pytest.mark.parametrize(
    ("taint", "field", "why"),
    [
        ({"key": "bad key!", "effect": "NoSchedule"}, "key", "must consist"),
        ({"key": "kubernetes.io/x", "effect": "NoSchedule"}, "key", "reserved"),
        ({"key": "dedicated", "value": "no way!", "effect": "NoSchedule"}, "value", "must consist"),
        ({"key": "dedicated", "effect": "Sometimes"}, "effect", "not a valid choice"),
        ({"key": "dedicated", "effect": "NoSchedule", "extra": 1}, "extra", "Unknown field"),
    ],
)
def test_a_taint_kubernetes_refuses_is_a_400_naming_the_field(admin_api, active, taint, field, why):
    found = fields(add(admin_api, active, name="extra", taints=[taint]))["taints"]["0"]
    assert why in " ".join(found[field])


def test_the_same_taint_twice_is_refused(admin_api, active):
    taint = {"key": "dedicated", "value": "a", "effect": "NoSchedule"}
    assert "unique by key and effect" in fields(add(admin_api, active, name="x", taints=[taint, taint]))["taints"][0]


def test_cluster_create_keeps_the_groups_labels_taints_and_volume(admin_api):
    group = {
        **GROUP,
        "labels": {"example.com/team": "research", "tier": "gold"},
        "taints": [
            {"key": "dedicated", "effect": "NoSchedule"},
            {"key": "gpu", "value": "a100", "effect": "NoExecute"},
        ],
        "ebs_volume_gb": 1000,
        "min_count": 1,
    }
    response = admin_api.post("/api/v1/clusters/", cluster_body("kept", instance_groups=[group]), format="json")
    assert response.status_code == 202, response.json()
    stored = response.json()["cluster"]["instance_groups"][0]
    assert stored["labels"] == {"example.com/team": "research", "tier": "gold"}
    # HyperPod's shape; an empty value is left out (its API refuses an empty Value).
    assert stored["taints"] == [
        {"Key": "dedicated", "Effect": "NoSchedule"},
        {"Key": "gpu", "Value": "a100", "Effect": "NoExecute"},
    ]
    assert (stored["ebs_volume_gb"], stored["min_count"]) == (1000, 1)


@pytest.mark.parametrize("size", [0, 16385, 10**12])
def test_an_ebs_volume_outside_hyperpods_bounds_is_refused_on_create_and_add(admin_api, active, size):
    body = cluster_body("big", instance_groups=[{**GROUP, "ebs_volume_gb": size}])
    assert "ebs_volume_gb" in fields(admin_api.post("/api/v1/clusters/", body, format="json"))["instance_groups"]["0"]
    assert "ebs_volume_gb" in fields(add(admin_api, active, name="big", ebs_volume_gb=size))
    assert not Cluster.objects.filter(name="big").exists()


def test_unknown_fields_are_a_400_at_every_level(admin_api, active):
    body = cluster_body("strict", colour="blue", instance_groups=[{**GROUP, "flavour": "x"}])
    found = fields(admin_api.post("/api/v1/clusters/", body, format="json"))
    assert found["colour"] == ["Unknown field."]
    assert found["instance_groups"]["0"]["flavour"] == ["Unknown field."]
    assert fields(add(admin_api, active, name="x", flavour="x"))["flavour"] == ["Unknown field."]
    patch = admin_api.patch(
        f"/api/v1/clusters/{active.pk}/", {"availability_zone": "us-west-2b", "x": 1}, format="json"
    )
    assert "x" in fields(patch)


def test_every_field_error_of_a_create_comes_at_once(admin_api):
    body = cluster_body("Bad Name!", zone="us-west-2z", instance_groups=[{**GROUP, "instance_type": "ml.c5.xlarge"}])
    found = fields(admin_api.post("/api/v1/clusters/", body, format="json"))
    assert set(found) == {"name", "availability_zone", "instance_groups"}
    assert "not an accelerator type" in found["instance_groups"]["0"]["instance_type"][0]
    assert "us-west-2z is not a zone of us-west-2" in found["availability_zone"][0]


def test_every_field_error_of_an_add_comes_at_once(admin_api, active):
    response = add(
        admin_api,
        active,
        name=active.instance_groups.get().name,
        instance_type="ml.c5.xlarge",
        availability_zone="us-west-2z",
        min_count=5,
        count=2,
    )
    found = fields(response)
    assert {"name", "availability_zone", "min_count"} <= set(found)


def test_a_cluster_has_at_most_hyperpods_100_groups(admin_api, active):
    groups = [{**GROUP, "name": f"g{i}"} for i in range(101)]
    found = fields(admin_api.post("/api/v1/clusters/", cluster_body("many", instance_groups=groups), format="json"))
    assert "no more than 100" in found["instance_groups"]["non_field_errors"][0]
    for i in range(99):
        InstanceGroup.objects.create(cluster=active, name=f"g{i}", instance_type="ml.g5.xlarge", count=1)
    assert "at most 100 instance groups" in " ".join(fields(add(admin_api, active, name="one-more"))["name"])


def test_each_distinct_instance_type_is_described_once_per_request(admin_api, team, sandbox):
    groups = [{**GROUP, "name": f"g{i}"} for i in range(30)]
    before = sandbox_calls(sandbox, team.sandbox_account_id).get("ec2:DescribeInstanceTypes", 0)
    response = admin_api.post("/api/v1/clusters/", cluster_body("wide", instance_groups=groups), format="json")
    assert response.status_code == 202, response.json()
    assert sandbox_calls(sandbox, team.sandbox_account_id).get("ec2:DescribeInstanceTypes", 0) - before == 1


def test_preflight_describes_each_distinct_instance_type_once(admin_api, team, sandbox):
    groups = [{**GROUP, "name": f"g{i}"} for i in range(30)]
    before = sandbox_calls(sandbox, team.sandbox_account_id).get("ec2:DescribeInstanceTypes", 0)
    response = admin_api.post("/api/v1/preflight/", cluster_body("wide", instance_groups=groups), format="json")
    assert response.status_code == 200, response.json()
    # once for the request's validation, once for the preflight's offer check
    assert sandbox_calls(sandbox, team.sandbox_account_id).get("ec2:DescribeInstanceTypes", 0) - before <= 2
