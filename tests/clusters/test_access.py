"""Clusters are a team's own: another team gets 404 everywhere; roles gate who manages them."""

from __future__ import annotations

import pytest

from clusters.models import Cluster
from tests.clusters.helpers import cluster_body

pytestmark = pytest.mark.usefixtures("sandbox")


@pytest.fixture
def cluster(admin_api):
    response = admin_api.post("/api/v1/clusters/", cluster_body("mine"), format="json")
    assert response.status_code == 202
    return Cluster.objects.get(pk=response.json()["cluster"]["id"])


def test_another_team_gets_404_on_every_cluster_endpoint(outsider_api, cluster):
    base = f"/api/v1/clusters/{cluster.pk}/"
    for method, path, data in [
        ("get", base, None),
        ("delete", base, None),
        ("patch", base, {"availability_zone": "us-west-2c"}),
        ("post", f"{base}activate/", None),
    ]:
        response = getattr(outsider_api, method)(path, data, format="json")
        assert response.status_code == 404, (method, path, response.status_code)
    assert outsider_api.get("/api/v1/clusters/").json()["results"] == []
    cluster.refresh_from_db()
    assert cluster.status == "creating" and cluster.availability_zone == "us-west-2a"


def test_without_a_token_cluster_endpoints_are_401(anonymous_api, cluster):
    assert anonymous_api.get("/api/v1/clusters/").status_code == 401
    assert anonymous_api.post("/api/v1/clusters/", cluster_body("x"), format="json").status_code == 401
    assert anonymous_api.get("/api/v1/catalog/availability-zones/?region=us-west-2").status_code == 401


def test_only_admins_create_and_delete_clusters(member_api, viewer_api, cluster):
    assert member_api.post("/api/v1/clusters/", cluster_body("nope"), format="json").status_code == 403
    assert member_api.delete(f"/api/v1/clusters/{cluster.pk}/").status_code == 403
    assert viewer_api.get(f"/api/v1/clusters/{cluster.pk}/").status_code == 200
    assert viewer_api.post(f"/api/v1/clusters/{cluster.pk}/activate/").status_code == 200
    assert Cluster.objects.count() == 1


def test_region_and_name_cannot_change(admin_api, cluster):
    response = admin_api.patch(f"/api/v1/clusters/{cluster.pk}/", {"region": "us-east-1"}, format="json")
    assert response.status_code == 400 and "region" in response.json()["error"]["fields"]


def test_a_duplicate_name_is_refused(admin_api, cluster):
    response = admin_api.post("/api/v1/clusters/", cluster_body("mine"), format="json")
    assert response.status_code == 400 and "name" in response.json()["error"]["fields"]


def test_groups_and_nodes_of_a_cluster_still_creating_are_a_clear_409(admin_api, cluster):
    base = f"/api/v1/clusters/{cluster.pk}"
    for method, path, data in [
        ("patch", f"{base}/instance-groups/gpu/", {"count": 3}),
        ("delete", f"{base}/instance-groups/gpu/", None),
        ("post", f"{base}/nodes/i-0123456789abcdef0/reboot/", None),
    ]:
        response = getattr(admin_api, method)(path, data, format="json")
        assert response.status_code == 409, (method, path, response.status_code)
        assert "creating" in response.json()["error"]["message"]
