"""SGLang behind the SGLang router with KEDA on requests in flight (sandbox, real worker): the router
answers through invoke, KEDA raises replicas under load and lowers them after, delete removes the router,
Prometheus and ScaledObject too."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from kubernetes import client as k8s

from tests.clusters.helpers import wait_for_operation
from tests.inference.conftest import enable_keda, kube
from tests.support import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

QWEN = {"source": "huggingface", "id": "Qwen/Qwen3-0.6B"}


def test_keda_raises_replicas_under_load_and_lowers_them_after(admin_api, cluster):
    enable_keda(cluster)
    body = {
        "name": "chat",
        "engine": "sglang",
        "model": QWEN,
        "instance_group": "gpu",
        "replicas": 1,
        "service": "internal",
        "router": True,
        "autoscaling": {"min": 1, "max": 3, "target": 2, "cooldown": 30},
    }
    accepted = admin_api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/", body, format="json")
    assert accepted.status_code == 202, accepted.content
    wait_for_operation(accepted.json()["operation"]["id"], timeout=120)
    base = f"/api/v1/clusters/{cluster.pk}/endpoints/chat/"
    detail = admin_api.get(base).json()
    kinds = sorted(f"{m['kind']}/{m['metadata']['name']}" for m in detail["manifest"])
    assert kinds == [
        "ConfigMap/chat-prometheus",
        "Deployment/chat",
        "Deployment/chat-prometheus",
        "Deployment/chat-router",
        "Role/chat-router",
        "RoleBinding/chat-router",
        "ScaledObject/chat",
        "Service/chat",
        "Service/chat-prometheus",
        "Service/chat-router",
        "ServiceAccount/chat-router",
    ]
    trigger = next(m for m in detail["manifest"] if m["kind"] == "ScaledObject")["spec"]["triggers"][0]["metadata"]
    assert trigger["query"] == 'sum(sgl_router_running_requests{job="chat-router"})'  # in flight, not job queue
    assert detail["url"] == "" and detail["router"] is True

    chat = {"messages": [{"role": "user", "content": "tell me a long story " * 10}], "max_tokens": 60}
    answer = admin_api.post(base + "invoke/", chat, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["model"] == "Qwen/Qwen3-0.6B" and answer.json()["usage"]["completion_tokens"] > 0
    same = admin_api.patch(base, {"replicas": 1}, format="json")
    assert same.status_code == 409 and "autoscaled" in same.json()["error"]["message"]

    stop = threading.Event()

    def load() -> None:
        try:
            while not stop.is_set():
                admin_api.post(base + "invoke/", chat, format="json")
        finally:
            connection.close()

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: admin_api.get(base).json()["replicas"]["desired"] == 3, timeout=60, message="scaled up to 3")
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    wait_until(lambda: admin_api.get(base).json()["replicas"]["ready"] >= 1, timeout=30)
    wait_until(lambda: admin_api.get(base).json()["replicas"]["desired"] == 1, timeout=60, message="scaled back to 1")
    after = admin_api.get(base).json()
    assert any(e["reason"] == "SuccessfulRescale" for e in after["events"])
    metrics = after["router_metrics"]  # the router's own counters, shown on the endpoint
    assert metrics["requests_total"] >= 2 and metrics["active_workers"] >= 1 and metrics["requests_in_flight"] == 0

    gone = admin_api.delete(base)
    wait_for_operation(gone.json()["id"], timeout=120)
    api = kube(cluster)
    ns = cluster.team.slug
    selector = "instantstart.io/endpoint=chat"
    assert not k8s.AppsV1Api(api).list_namespaced_deployment(ns, label_selector=selector).items
    assert not k8s.CoreV1Api(api).list_namespaced_service(ns, label_selector=selector).items
    assert not k8s.CustomObjectsApi(api).list_namespaced_custom_object("keda.sh", "v1alpha1", ns, "scaledobjects")[
        "items"
    ]
    hpas = k8s.AutoscalingV2Api(api).list_namespaced_horizontal_pod_autoscaler(ns).items
    assert not [h for h in hpas if "chat" in h.metadata.name]  # KEDA's HPA went with its ScaledObject
    assert not k8s.RbacAuthorizationV1Api(api).list_namespaced_role(ns, label_selector=selector).items
    assert not k8s.CoreV1Api(api).list_namespaced_pod(ns, label_selector="app=chat").items
