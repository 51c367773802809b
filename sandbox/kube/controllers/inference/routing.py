"""Intelligent routing: the router Deployment and its Service in `hyperpod-inference-system`."""

from __future__ import annotations

from typing import Any

from ...admission import default_pod_spec
from ...store import Cluster
from .objects import MANAGED, OTEL_IMAGE, SYSTEM_NS, delete, ensure

Obj = dict[str, Any]
ROUTER_IMAGE = "public.ecr.aws/sagemaker/hyperpod-inference-router:v3.2"


def router(c: Cluster, iec: Obj, spec: Obj, want: bool) -> None:
    name, ns = iec["metadata"]["name"], iec["metadata"]["namespace"]
    rname = f"{name}-{ns}-router"
    svc_name = f"{name}-{ns}-routing-service"
    if not want:
        delete(c, "apps/deployments", SYSTEM_NS, rname)
        delete(c, "/services", SYSTEM_NS, svc_name)
        return
    if c.get("/namespaces", "", SYSTEM_NS) is None:
        ns_rt = c.type_by_gr("/namespaces")
        assert ns_rt is not None
        c.create(ns_rt, {"metadata": {"name": SYSTEM_NS}})
    routing = spec.get("intelligentRoutingSpec") or {}
    w = spec.get("worker") or {}
    port = int((w.get("modelInvocationPort") or {}).get("containerPort", 8080))
    session = next(
        (str(e.get("value")) for e in w.get("environmentVariables") or [] if e.get("name") == "SESSION_KEY"),
        "x-user-id",
    )
    labels = {"app": rname, MANAGED: f"{ns}.{name}"}
    args = [
        "--port",
        "8080",
        "--service-discovery",
        "k8s",
        "--k8s-namespace",
        ns,
        "--k8s-label-selector",
        f"app={name}",
        "--k8s-port",
        str(port),
        "--routing-logic",
        str(routing.get("routingStrategy") or "prefixaware"),
        "--session-key",
        session,
    ]
    tpl_spec: Obj = {
        "containers": [
            {
                "name": "router-container",
                "image": ROUTER_IMAGE,
                "command": ["python3", "-m", "vllm_router.app"],
                "args": args,
                "ports": [{"containerPort": 8080, "name": "http"}],
                "resources": {"requests": {"cpu": "2", "memory": "4Gi"}},
            },
            {
                "name": "otel-collector",
                "image": OTEL_IMAGE,
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
            },
        ],
    }
    default_pod_spec(tpl_spec)
    ensure(
        c,
        "apps/deployments",
        SYSTEM_NS,
        {
            "metadata": {"name": rname, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": rname}},
                "template": {"metadata": {"labels": dict(labels)}, "spec": tpl_spec},
            },
        },
    )
    ensure(
        c,
        "/services",
        SYSTEM_NS,
        {
            "metadata": {"name": svc_name, "labels": labels},
            "spec": {
                "selector": {"app": rname},
                "ports": [{"name": "https", "port": 443, "targetPort": 8080, "protocol": "TCP"}],
            },
        },
    )
