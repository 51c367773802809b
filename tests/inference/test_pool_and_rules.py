"""A pool of warm workers (no Service of its own) whose worker is reassigned by a label change, without a
restart, and then answers invoke for that model; and every bad input refused with nothing applied."""

from __future__ import annotations

import re

import pytest
from kubernetes import client as k8s

from inference.models import Endpoint
from tests.clusters.helpers import wait_for_operation
from tests.inference.conftest import kube

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

QWEN = {"source": "huggingface", "id": "Qwen/Qwen3-0.6B"}
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}


def served_by(cluster, pod: str) -> int:
    """Chat requests a pool worker has answered (its own vLLM metrics, read through the pod proxy)."""
    api = kube(cluster)
    text = (
        api.call_api(
            *api.param_serialize(
                "GET",
                f"/api/v1/namespaces/{cluster.team.slug}/pods/{pod}:8000/proxy/metrics",
                auth_settings=["BearerToken"],
            )[:3]
        )
        .read()
        .decode()
    )
    return int(sum(float(n) for n in re.findall(r"^vllm:request_success_total\{[^}]*\} ([\d.]+)", text, re.M)))


def assert_bad_input_refused(admin_api, cluster) -> None:
    """Every bad input is a clear error and nothing is recorded or applied."""
    url = f"/api/v1/clusters/{cluster.pk}/endpoints/"
    good = {"name": "bad", "model": QWEN, "instance_group": "gpu"}
    for change, field in (
        ({"engine": "tgi"}, "engine"),
        ({"gpus": 5}, "gpus"),  # ml.g5.12xlarge has 4
        ({"replicas": -1}, "replicas"),
        ({"router": True}, "router"),  # vLLM
        ({"instance_group": "nope"}, "instance_group"),
        ({"model": {"source": "s3", "uri": "s3://someone-elses-bucket/models/x"}}, "model"),
        ({"model": {"source": "huggingface", "id": "not a repo"}}, "model"),
        ({"service": "pool", "mode": "managed"}, "service"),
        ({"routing": "prefixaware"}, "routing"),
        ({"autoscaling": {"min": 1, "max": 2, "target": 2}}, "autoscaling"),  # needs the router
    ):
        response = admin_api.post(url, {**good, **change}, format="json")
        assert response.status_code == 400, (change, response.content)
        assert field in response.json()["error"]["fields"], (change, response.json())
    scaled = {**good, "engine": "sglang", "router": True, "autoscaling": {"min": 1, "max": 2, "target": 2}}
    response = admin_api.post(url, scaled, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "feature_required"
    assert "keda" in response.json()["error"]["message"]
    assert not Endpoint.objects.exists()
    assert not k8s.AppsV1Api(kube(cluster)).list_namespaced_deployment(cluster.team.slug).items


def test_bad_input_is_refused_then_a_pool_worker_is_reassigned_by_a_label(admin_api, admin_mcp, cluster):
    # one cluster for both halves: creating a cluster is most of a test's time
    assert_bad_input_refused(admin_api, cluster)

    body = {"name": "pool", "model": QWEN, "instance_group": "gpu", "replicas": 2, "service": "pool"}
    url = f"/api/v1/clusters/{cluster.pk}/endpoints/"
    accepted = admin_api.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="pool-1")
    assert accepted.status_code == 202, accepted.content
    repeat = admin_api.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="pool-1")
    assert repeat.json()["operation"]["id"] == accepted.json()["operation"]["id"]
    assert Endpoint.objects.filter(name="pool").count() == 1
    wait_for_operation(accepted.json()["operation"]["id"], timeout=120)
    base = f"/api/v1/clusters/{cluster.pk}/endpoints/pool/"
    detail = admin_api.get(base).json()
    assert [m["kind"] for m in detail["manifest"]] == ["Deployment"]  # no Service of its own
    assert [p["model"] for p in detail["pods"]] == ["Qwen--Qwen3-0.6B", "Qwen--Qwen3-0.6B"]
    assert admin_api.post(base + "invoke/", CHAT, format="json").status_code == 200

    worker = detail["pods"][1]["name"]
    assigned = admin_mcp.call(
        "assign_worker", {"cluster_id": str(cluster.pk), "name": "pool", "pod": worker, "model": "support-bot"}
    ).structured_content
    assert assigned == {"pod": worker, "model": "support-bot", "changed": True}
    again = admin_api.post(base + f"workers/{worker}/assign/", {"model": "support-bot"}, format="json").json()
    assert again["changed"] is False
    after = admin_api.get(base).json()["pods"]
    assert [(p["name"], p["model"], p["restarts"]) for p in after] == [
        (detail["pods"][0]["name"], "Qwen--Qwen3-0.6B", 0),
        (worker, "support-bot", 0),
    ]

    before = served_by(cluster, worker)
    for _ in range(3):
        answer = admin_api.post(base + "invoke/", {**CHAT, "model": "support-bot"}, format="json")
        assert answer.status_code == 200, answer.content
    assert served_by(cluster, worker) == before + 3
    missing = admin_api.post(base + "invoke/", {**CHAT, "model": "nobody"}, format="json")
    assert missing.status_code == 409 and missing.json()["error"]["code"] == "not_ready"
    not_a_pool = admin_api.post(base + "workers/pool-xyz/assign/", {"model": "x"}, format="json")
    assert not_a_pool.status_code == 404
