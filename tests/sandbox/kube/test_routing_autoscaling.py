"""The SGLang router spreads requests over the replicas it discovers; an in-cluster Prometheus
scrapes them and answers PromQL; KEDA reads it and changes the replica count; the inference
operator builds a managed endpoint with routing and autoscaling."""

from __future__ import annotations

import concurrent.futures
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from sandbox.kube import KubeWorld

from .conftest import KEY, Kube, deployment, gpu_node, wait_for
from .test_serving import PODS, SVC, chat, ready, serving
from .test_serving import SGLANG as SGLANG_SERVER

SGLANG = SGLANG_SERVER + ["--enable-metrics"]
PROMETHEUS_YML = """
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: router
    static_configs:
      - targets: ["router.default.svc.cluster.local:29000"]
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: "true"
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        action: replace
        regex: ([^:]+)(?::\\d+)?;(\\d+)
        replacement: $1:$2
        target_label: __address__
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_label_app]
        target_label: app
"""


def router(selector: str, policy: str = "round_robin") -> dict[str, Any]:
    dep = deployment("router", image="lmsysorg/sglang:v0.5.2")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["command"] = ["python", "-m", "sglang_router.launch_router"]
    c["args"] = [
        "--service-discovery",
        "--selector",
        selector,
        "--service-discovery-port",
        "30000",
        "--service-discovery-namespace",
        "default",
        "--policy",
        policy,
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--prometheus-port",
        "29000",
    ]
    c["ports"] = [{"containerPort": 30000, "name": "http"}, {"containerPort": 29000, "name": "metrics"}]
    return dep


def router_service(kube: Kube) -> None:
    ports = [
        {"name": "http", "port": 30000, "targetPort": "http"},
        {"name": "metrics", "port": 29000, "targetPort": "metrics"},
    ]
    kube.core.create_namespaced_service(
        "default", {"metadata": {"name": "router"}, "spec": {"selector": {"app": "router"}, "ports": ports}}
    )


def prometheus(kube: Kube) -> None:
    kube.core.create_namespaced_config_map(
        "default", {"metadata": {"name": "prometheus-server"}, "data": {"prometheus.yml": PROMETHEUS_YML}}
    )
    dep = deployment("prometheus-server", image="quay.io/prometheus/prometheus:v3.5.0")
    spec = dep["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = [
        "--config.file=/etc/config/prometheus.yml",
        "--storage.tsdb.path=/data",
        "--web.enable-lifecycle",
    ]
    spec["containers"][0]["ports"] = [{"containerPort": 9090, "name": "http"}]
    spec["containers"][0]["volumeMounts"] = [{"name": "config", "mountPath": "/etc/config"}]
    spec["volumes"] = [{"name": "config", "configMap": {"name": "prometheus-server"}}]
    kube.apps.create_namespaced_deployment("default", dep)
    kube.core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "prometheus-server"},
            "spec": {
                "selector": {"app": "prometheus-server"},
                "ports": [{"name": "http", "port": 80, "targetPort": 9090}],
            },
        },
    )


def query(kube: Kube, q: str) -> tuple[int, Any]:
    return kube.raw("GET", f"{SVC}/prometheus-server:80/proxy/api/v1/query", query=[("query", q)])


def value(kube: Kube, q: str) -> float | None:
    code, body = query(kube, q)
    res = body["data"]["result"] if code == 200 else []
    return float(res[0]["value"][1]) if res else None


@pytest.fixture
def world(world_factory: Callable[..., Kube]) -> Kube:
    k = world_factory(nodes=0, world=KubeWorld(None, speedup=100))
    k.world.sync_nodes(KEY, [gpu_node(f"hyperpod-i-0000000{i}") for i in range(3)])
    yield k
    assert not k.world.controller_errors, k.world.controller_errors[0]


def _workers(kube: Kube, replicas: int) -> None:
    dep = serving("sglang", SGLANG, replicas=replicas, image="lmsysorg/sglang:v0.5.2", port=30000)
    dep["spec"]["template"]["metadata"]["annotations"] = {"prometheus.io/scrape": "true", "prometheus.io/port": "30000"}
    kube.apps.create_namespaced_deployment("default", dep)


def test_router_spreads_requests_over_discovered_replicas_and_counts_them(world: Kube) -> None:
    kube = world
    _workers(kube, 3)
    kube.apps.create_namespaced_deployment("default", router("app=sglang"))
    router_service(kube)
    ready(kube, "sglang", 3)
    ready(kube, "router")
    wait_for(
        lambda: len(kube.raw("GET", f"{SVC}/router:30000/proxy/list_workers")[1]["urls"]) == 3,
        what="3 workers discovered",
    )
    for i in range(6):
        code, out = chat(kube, f"{SVC}/router:30000/proxy/v1/chat/completions", content=f"question {i}", max_tokens=4)
        assert code == 200 and out["usage"]["completion_tokens"] == 4
    code, text = kube.raw("GET", f"{SVC}/router:29000/proxy/metrics")
    assert code == 200
    assert 'sgl_router_requests_total{route="/v1/chat/completions"} 6' in text
    per_worker = [int(n) for n in re.findall(r"sgl_router_processed_requests_total\{worker=\"[^\"]+\"} (\d+)", text)]
    assert per_worker == [2, 2, 2]  # round robin over three ready replicas
    assert "sgl_router_running_requests{worker=" in text and "sgl_router_active_workers 3" in text
    # a replica that goes away stops getting requests
    kube.apps.patch_namespaced_deployment_scale("sglang", "default", {"spec": {"replicas": 1}})
    wait_for(lambda: len(kube.raw("GET", f"{SVC}/router:30000/proxy/list_workers")[1]["urls"]) == 1)
    assert chat(kube, f"{SVC}/router:30000/proxy/v1/chat/completions", max_tokens=2)[0] == 200


def test_cache_aware_routing_keeps_a_prefix_on_one_replica(world: Kube) -> None:
    kube = world
    _workers(kube, 2)
    kube.apps.create_namespaced_deployment("default", router("app=sglang", policy="cache_aware"))
    ready(kube, "sglang", 2)
    ready(kube, "router")
    pod = kube.core.list_namespaced_pod("default", label_selector="app=router").items[0].metadata.name
    wait_for(lambda: len(kube.raw("GET", f"{PODS}/{pod}:30000/proxy/list_workers")[1]["urls"]) == 2)
    long = "You are a helpful assistant that answers questions about Kubernetes. " * 4
    for _ in range(4):
        chat(kube, f"{PODS}/{pod}:30000/proxy/v1/chat/completions", content=long, max_tokens=2)
    text = kube.raw("GET", f"{PODS}/{pod}:29000/proxy/metrics")[1]
    assert sorted(int(n) for n in re.findall(r"processed_requests_total\{worker=\"[^\"]+\"} (\d+)", text)) == [0, 4]
    assert "sgl_router_cache_hits_total 3" in text


def test_prometheus_scrapes_and_answers_promql(world: Kube) -> None:
    kube = world
    _workers(kube, 2)
    kube.apps.create_namespaced_deployment("default", router("app=sglang"))
    router_service(kube)
    prometheus(kube)
    ready(kube, "sglang", 2)
    ready(kube, "prometheus-server")
    wait_for(lambda: value(kube, 'count(up{job="pods"} == 1)') == 2, what="both pods scraped")
    code, body = query(kube, "sum by (app) (sglang:num_running_reqs)")
    assert code == 200 and body["data"]["resultType"] == "vector"
    assert body["data"]["result"][0]["metric"] == {"app": "sglang"}
    assert body["data"]["result"][0]["value"][1] == "0"
    code, body = kube.raw("GET", f"{SVC}/prometheus-server:80/proxy/api/v1/targets")
    assert {t["labels"]["job"] for t in body["data"]["activeTargets"]} == {"router", "pods"}
    code, err = query(kube, "sum(rate(sglang:num_requests_total[1m])")
    assert code == 400 and err["errorType"] == "bad_data" and "unclosed left parenthesis" in err["error"]
    # traffic shows up as a rate (per real second) and in the router's counters
    pod = kube.core.list_namespaced_pod("default", label_selector="app=router").items[0].metadata.name
    wait_for(lambda: len(kube.raw("GET", f"{PODS}/{pod}:30000/proxy/list_workers")[1]["urls"]) == 2)
    for i in range(10):
        chat(kube, f"{PODS}/{pod}:30000/proxy/v1/chat/completions", content=f"q{i}", max_tokens=2)
    wait_for(lambda: (value(kube, 'sum(sgl_router_requests_total{job="router"})') or 0) == 10, what="router scraped")
    wait_for(lambda: (value(kube, "sum(rate(sglang:num_requests_total[1m]))") or 0) > 0, what="rate > 0")
    now = time.time()
    code, rng = kube.raw(
        "GET",
        f"{SVC}/prometheus-server:80/proxy/api/v1/query_range",
        query=[
            ("query", 'sum(sgl_router_requests_total{job="router"})'),
            ("start", f"{now - 1:.3f}"),
            ("end", f"{now:.3f}"),
            ("step", "15s"),
        ],
    )
    assert code == 200 and rng["data"]["resultType"] == "matrix" and rng["data"]["result"][0]["values"]
    code, series = kube.raw(
        "GET", f"{SVC}/prometheus-server:80/proxy/api/v1/series", query=[("match[]", "sglang:num_running_reqs")]
    )
    assert code == 200 and {m["pod"] for m in series["data"]} == {
        p.metadata.name for p in kube.core.list_namespaced_pod("default", label_selector="app=sglang").items
    }
    code, quantile = query(kube, "histogram_quantile(0.5, sum by (le) (sgl_router_request_duration_seconds_bucket))")
    assert code == 200 and float(quantile["data"]["result"][0]["value"][1]) > 0


def test_keda_scales_replicas_up_under_load_and_down_when_idle(world: Kube) -> None:
    kube = world
    kube.world.set_addons(KEY, {"keda"})
    _workers(kube, 1)
    kube.apps.create_namespaced_deployment("default", router("app=sglang"))
    router_service(kube)
    prometheus(kube)
    ready(kube, "sglang")
    ready(kube, "router")
    ready(kube, "prometheus-server")
    so = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "sglang"},
        "spec": {
            "scaleTargetRef": {"name": "sglang"},
            "minReplicaCount": 1,
            "maxReplicaCount": 3,
            "pollingInterval": 5,
            "cooldownPeriod": 30,
            "advanced": {
                "horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": "http://prometheus-server.default.svc.cluster.local:80",
                        # requests in flight, summed over the router's view of every replica
                        "query": 'sum(sgl_router_running_requests{job="router"})',
                        "threshold": "2",
                        "activationThreshold": "1",
                    },
                }
            ],
        },
    }
    kube.custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", so)
    stop = time.monotonic() + 25
    with concurrent.futures.ThreadPoolExecutor(8) as pool:

        def load() -> None:
            while time.monotonic() < stop:
                if (kube.apps.read_namespaced_deployment("sglang", "default").spec.replicas or 0) >= 3:
                    return
                chat(kube, f"{SVC}/router:30000/proxy/v1/chat/completions", content="load " * 20, max_tokens=60)

        futures = [pool.submit(load) for _ in range(8)]
        wait_for(
            lambda: kube.apps.read_namespaced_deployment("sglang", "default").spec.replicas == 3,
            timeout=25,
            what="scaled up to 3",
        )
        for f in futures:
            f.result()
    hpa = kube.raw("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/keda-hpa-sglang")[1]
    assert hpa["spec"]["metrics"][0]["external"]["metric"]["name"] == "s0-prometheus"
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=keda-hpa-sglang").items
    assert any(e.reason == "SuccessfulRescale" and "above target" in e.message for e in events)
    # idle: after the scale-down stabilization window the HPA goes back to the minimum
    wait_for(
        lambda: kube.apps.read_namespaced_deployment("sglang", "default").spec.replicas == 1,
        timeout=20,
        what="scaled back down to 1",
    )
    st = kube.custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", "sglang")
    assert st["status"]["health"]["s0-prometheus"]["status"] == "Happy"


def test_keda_reports_an_unreachable_prometheus(world: Kube) -> None:
    kube = world
    kube.world.set_addons(KEY, {"keda"})
    kube.apps.create_namespaced_deployment("default", deployment("web"))
    so = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"name": "web"},
            "pollingInterval": 5,
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": "http://nowhere.monitoring.svc:9090",
                        "query": "up",
                        "threshold": "1",
                    },
                }
            ],
        },
    }
    kube.custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", so)

    def failing() -> Any:
        o = kube.custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", "web")
        return ((o.get("status") or {}).get("health") or {}).get("s0-prometheus", {}).get("status") == "Failing"

    wait_for(failing, what="trigger Failing")

    def scaler_failed() -> Any:
        events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=web").items
        return [e for e in events if e.reason == "KEDAScalerFailed"]

    event = wait_for(scaler_failed, what="KEDAScalerFailed event")[0]
    assert event.type == "Warning" and "lookup nowhere.monitoring.svc: no such host" in event.message
    bad = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"name": "web"}, "triggers": [{"type": "prometheus", "metadata": {"query": "up"}}]},
    }
    kube.custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", bad)

    def not_ready() -> Any:
        o = kube.custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", "bad")
        return next(
            (
                c
                for c in (o.get("status") or {}).get("conditions") or []
                if c["type"] == "Ready" and c["status"] == "False"
            ),
            None,
        )

    cond = wait_for(not_ready)
    assert (
        cond["message"] == 'error parsing prometheus metadata: missing required parameter "serverAddress" in '
        "[triggerMetadata]"
    )
