"""Check before create: catalog and preflight against the sandbox account of the team."""

from __future__ import annotations

import pytest

from clusters.models import Cluster

pytestmark = pytest.mark.usefixtures("sandbox")


def test_zones_of_a_region(viewer_api):
    body = viewer_api.get("/api/v1/catalog/availability-zones/?region=us-west-2").json()
    names = [z["name"] for z in body["results"]]
    assert "us-west-2a" in names and all(n.startswith("us-west-2") for n in names)


def test_unknown_region_is_a_field_error(viewer_api):
    response = viewer_api.get("/api/v1/catalog/availability-zones/?region=mars-1")
    assert response.status_code == 400 and "region" in response.json()["error"]["fields"]


def test_instance_types_with_gpu_and_efa_facts(viewer_api):
    body = viewer_api.get("/api/v1/catalog/instance-types/?region=us-west-2&availability_zone=us-west-2a").json()
    types = {t["instance_type"]: t for t in body["results"]}
    p5 = types["ml.p5.48xlarge"]
    assert p5["gpu_model"] == "H100" and p5["gpu_count"] == 8 and p5["gpu_memory_gib"] == 640
    assert p5["efa_supported"] and p5["efa_only_allowed"] and "us-west-2a" in p5["zones"]
    g5 = types["ml.g5.xlarge"]
    assert g5["gpu_count"] == 1 and not g5["efa_only_allowed"]
    assert all(not t.startswith("ml.m5") for t in types)  # accelerators only


def test_instance_types_grouped_by_accelerator_and_sorted_by_size_with_neuron_memory(viewer_api):
    body = viewer_api.get("/api/v1/catalog/instance-types/?region=us-west-2&availability_zone=us-west-2b").json()
    names = [t["instance_type"] for t in body["results"]]
    g5 = [n for n in names if n.startswith("ml.g5.")]
    assert g5 == sorted(g5, key=lambda n: float(n.split(".")[2].removesuffix("xlarge") or 1))
    assert g5.index("ml.g5.xlarge") < g5.index("ml.g5.2xlarge") < g5.index("ml.g5.12xlarge")
    models = [t["gpu_model"] for t in body["results"]]
    assert models == sorted(models, key=lambda m: m or "")  # grouped by accelerator
    trainium = [t for t in body["results"] if t["instance_type"].startswith("ml.trn")]
    assert trainium and all(t["gpu_memory_gib"] > 0 for t in trainium), trainium


def test_preflight_reports_checks_and_creates_nothing(admin_api):
    body = {
        "name": "preflight",
        "region": "us-west-2",
        "availability_zone": "us-west-2a",
        "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 2}],
    }
    response = admin_api.post("/api/v1/preflight/", body, format="json")
    assert response.status_code == 200, response.json()
    result = response.json()
    assert result["ok"] is True
    names = {c["name"] for c in result["checks"]}
    assert {"role_assumable", "name_free", "quota:ml.g5.xlarge", "offered:gpu"} <= names
    too_many = {**body, "instance_groups": [{"name": "gpu", "instance_type": "ml.p5.48xlarge", "count": 50}]}
    result = admin_api.post("/api/v1/preflight/", too_many, format="json").json()
    assert result["ok"] is False
    quota = next(c for c in result["checks"] if c["name"] == "quota:ml.p5.48xlarge")
    assert not quota["ok"] and "needs 50" in quota["message"]
    assert not Cluster.objects.exists()


@pytest.mark.parametrize(
    ("group", "field"),
    [
        ({"name": "g", "instance_type": "ml.nope.xlarge", "count": 1}, "instance_type"),
        ({"name": "g", "instance_type": "ml.g5.xlarge", "count": 0}, "count"),
        ({"name": "g", "instance_type": "ml.g5.xlarge", "count": 1, "efa_only": True}, "efa_only"),
        (
            {"name": "g", "instance_type": "ml.g5.xlarge", "count": 1, "capacity_type": "training_plan"},
            "training_plan_arn",
        ),
    ],
)
def test_bad_groups_are_400s_naming_the_field(admin_api, group, field):
    body = {"name": "bad", "region": "us-west-2", "availability_zone": "us-west-2a", "instance_groups": [group]}
    response = admin_api.post("/api/v1/clusters/", body, format="json")
    assert response.status_code == 400, response.json()
    fields = response.json()["error"]["fields"]
    assert field in fields["instance_groups"]["0"], fields
    assert not Cluster.objects.exists()


def test_zone_not_offered_and_duplicate_names(admin_api):
    base = {
        "name": "bad",
        "region": "us-west-2",
        "availability_zone": "us-west-2z",
        "instance_groups": [{"name": "g", "instance_type": "ml.g5.xlarge", "count": 1}],
    }
    response = admin_api.post("/api/v1/clusters/", base, format="json")
    assert "availability_zone" in response.json()["error"]["fields"]
    dup = {
        **base,
        "availability_zone": "us-west-2a",
        "instance_groups": [
            {"name": "g", "instance_type": "ml.g5.xlarge", "count": 1},
            {"name": "g", "instance_type": "ml.g5.xlarge", "count": 1},
        ],
    }
    fields = admin_api.post("/api/v1/clusters/", dup, format="json").json()["error"]["fields"]
    assert "name" in fields["instance_groups"]["1"]
    assert not Cluster.objects.exists()


def test_a_cluster_without_a_version_gets_the_catalogs_current_eks_default(team):
    from clusters.readers.catalog import DEFAULT_KUBERNETES_VERSION, KUBERNETES_VERSIONS
    from sandbox.aws.eks_clusters import DEFAULT_VERSION as SANDBOX_EKS_DEFAULT

    cluster = Cluster.objects.create(team=team, name="bare", region="us-west-2", availability_zone="us-west-2a")
    assert cluster.kubernetes_version == DEFAULT_KUBERNETES_VERSION == max(KUBERNETES_VERSIONS) == SANDBOX_EKS_DEFAULT
