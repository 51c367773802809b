"""An Idempotency-Key names one request: the same request replays, another body is a 422."""

from __future__ import annotations

import pytest

from clusters.models import Cluster
from tests.clusters.helpers import cluster_body, cluster_with_group

pytestmark = pytest.mark.usefixtures("sandbox", "no_enqueue")


def test_the_same_key_with_another_body_is_a_422_naming_the_first_request(admin_api):
    first = admin_api.post("/api/v1/clusters/", cluster_body("idem-a"), format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    assert first.status_code == 202, first.json()
    again = admin_api.post("/api/v1/clusters/", cluster_body("idem-a"), format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    assert again.status_code == 202 and again["Idempotent-Replayed"] == "true"
    assert again.json()["cluster"]["id"] == first.json()["cluster"]["id"]
    other = admin_api.post("/api/v1/clusters/", cluster_body("idem-b"), format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    assert other.status_code == 422
    error = other.json()["error"]
    assert error["code"] == "idempotency_key_reused" and "POST /api/v1/clusters/" in error["message"]
    assert not Cluster.objects.filter(name="idem-b").exists()


def test_key_order_and_whitespace_do_not_make_another_request(admin_api):
    body = cluster_body("idem-c")
    admin_api.post("/api/v1/clusters/", body, format="json", HTTP_IDEMPOTENCY_KEY="key-2")
    reordered = '{"instance_groups": [{"count": 2, "instance_type": "ml.g5.xlarge", "name": "gpu"}],' + (
        ' "availability_zone": "us-west-2a", "region": "us-west-2", "name": "idem-c"}'
    )
    again = admin_api.post(
        "/api/v1/clusters/", reordered, content_type="application/json", HTTP_IDEMPOTENCY_KEY="key-2"
    )
    assert again.status_code == 202 and again["Idempotent-Replayed"] == "true"


def test_a_patch_with_the_same_key_and_another_body_is_a_422(admin_api, team):
    cluster = cluster_with_group(team, name="fleet", status="failed")
    path = f"/api/v1/clusters/{cluster.pk}/"
    first = admin_api.patch(path, {"availability_zone": "us-west-2b"}, format="json", HTTP_IDEMPOTENCY_KEY="p1")
    assert first.status_code == 200, first.json()
    other = admin_api.patch(path, {"availability_zone": "us-west-2c"}, format="json", HTTP_IDEMPOTENCY_KEY="p1")
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    assert f"PATCH {path}" in other.json()["error"]["message"]
    cluster.refresh_from_db()
    assert cluster.availability_zone == "us-west-2b"
