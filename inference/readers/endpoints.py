"""An endpoint's live state: replicas desired and ready, its pods, events and address, read from Kubernetes."""

from __future__ import annotations

import re

from kubernetes import client as k8s

from instantstart.cloud.kube import get
from instantstart.errors import cloud_read

from ..manifests import IEC_API, POOL_MODEL_LABEL, ROUTER_METRICS_PORT, router_name, served_name
from ..models import Endpoint, EndpointStatus, Mode, ServiceShape
from .cluster_api import kube_of

# Statuses the record decides; otherwise ready/degraded is read live on every GET.
RECORDED = {EndpointStatus.DEPLOYING, EndpointStatus.FAILED, EndpointStatus.DELETING, EndpointStatus.DELETED}


def _pod(pod: k8s.V1Pod) -> dict:
    statuses = pod.status.container_statuses or []
    waiting = next((s.state.waiting.reason for s in statuses if s.state and s.state.waiting), None)
    return {
        "name": pod.metadata.name,
        "phase": pod.status.phase,
        "ready": bool(statuses) and all(s.ready for s in statuses),
        "restarts": sum(s.restart_count or 0 for s in statuses),
        "waiting": waiting or "",
        "node": pod.spec.node_name or "",
        "model": (pod.metadata.labels or {}).get(POOL_MODEL_LABEL, ""),
    }


def _events(core: k8s.CoreV1Api, endpoint: Endpoint) -> list[dict]:
    prefixes = (endpoint.name, f"keda-hpa-{endpoint.name}")
    found = [
        e
        for e in core.list_namespaced_event(endpoint.namespace).items
        if (e.involved_object.name or "").startswith(prefixes)
    ]
    found.sort(key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
    return [
        {
            "type": e.type,
            "reason": e.reason,
            "object": f"{e.involved_object.kind}/{e.involved_object.name}",
            "message": e.message,
            "count": e.count or 1,
            "time": (e.last_timestamp or e.event_time or e.metadata.creation_timestamp).isoformat(),
        }
        for e in found[-50:]
    ]


def external_address(core: k8s.CoreV1Api, endpoint: Endpoint) -> str:
    if endpoint.service != ServiceShape.EXTERNAL:
        return ""
    name = f"{endpoint.name}-nlb" if endpoint.mode == Mode.MANAGED else endpoint.name
    try:
        service = core.read_namespaced_service(name, endpoint.namespace)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return ""
        raise
    ingress = (service.status.load_balancer.ingress or []) if service.status.load_balancer else []
    if not ingress:
        return ""
    host = ingress[0].hostname or ingress[0].ip
    return f"http://{host}:{service.spec.ports[0].port}"


@cloud_read()
def actual_replicas(endpoint: Endpoint) -> dict[str, int] | None:
    """{desired, ready} from the endpoint's Deployment, or None when it does not exist."""
    apps = k8s.AppsV1Api(kube_of(endpoint.cluster))
    try:
        deployment = apps.read_namespaced_deployment(endpoint.name, endpoint.namespace)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return {"desired": deployment.spec.replicas or 0, "ready": deployment.status.ready_replicas or 0}


@cloud_read()
def managed_state(endpoint: Endpoint) -> dict:
    """The InferenceEndpointConfig's status (state, Ready condition message), {} when absent."""
    found = get(kube_of(endpoint.cluster), IEC_API, "InferenceEndpointConfig", endpoint.name, endpoint.namespace)
    status = (found or {}).get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    return {
        "state": status.get("state", ""),
        "ready": ready.get("status") == "True",
        "message": ready.get("message", ""),
    }


def live_status(endpoint: Endpoint, replicas: dict[str, int]) -> str:
    if endpoint.status in RECORDED:
        return endpoint.status
    return EndpointStatus.READY if replicas["ready"] >= replicas["desired"] else EndpointStatus.DEGRADED


@cloud_read()
def endpoint_view(endpoint: Endpoint, *, detail: bool = True) -> dict:
    """What GET answers: the record, with status, replicas, url (and on detail pods and events) read live."""
    replicas = {"desired": endpoint.replicas, "ready": 0}
    pods: list[dict] = []
    events: list[dict] = []
    router = None
    url = endpoint.url
    if endpoint.status != EndpointStatus.DELETED and endpoint.cluster.eks_cluster_name:
        api = kube_of(endpoint.cluster)
        core = k8s.CoreV1Api(api)
        replicas = actual_replicas(endpoint) or {"desired": endpoint.replicas, "ready": 0}
        url = external_address(core, endpoint) or url
        if detail and endpoint.router:
            router = router_metrics(endpoint, api)
        if detail:
            selected = core.list_namespaced_pod(endpoint.namespace, label_selector=f"app={endpoint.name}").items
            pods = [_pod(p) for p in sorted(selected, key=lambda p: p.metadata.name)]
            events = _events(core, endpoint)
    return {
        "id": endpoint.pk,
        "name": endpoint.name,
        "mode": endpoint.mode,
        "engine": endpoint.engine,
        "model": endpoint.model,
        "served_model": served_name(endpoint),
        "instance_group": endpoint.instance_group,
        "instance_type": endpoint.instance_type,
        "gpus": endpoint.gpus,
        "status": live_status(endpoint, replicas),
        "replicas": replicas,
        "url": url,
        "service": endpoint.service,
        "router": endpoint.router,
        "autoscaling": endpoint.autoscaling,
        "kv_cache": endpoint.kv_cache,
        "routing": endpoint.routing,
        "args": endpoint.args,
        "namespace": endpoint.namespace,
        "pods": pods,
        "events": events,
        "router_metrics": router,
        "manifest": endpoint.manifest,
        "created_at": endpoint.created_at,
    }


@cloud_read()
def pool_workers(endpoint: Endpoint) -> list[dict]:
    """The pool's pods with the model each is assigned to."""
    core = k8s.CoreV1Api(kube_of(endpoint.cluster))
    selected = core.list_namespaced_pod(endpoint.namespace, label_selector=f"app={endpoint.name}").items
    return [_pod(p) for p in sorted(selected, key=lambda p: p.metadata.name)]


@cloud_read()
def desired_replicas(endpoint: Endpoint) -> int | None:
    """The replica count the cluster is asked for now (the InferenceEndpointConfig's for a managed one)."""
    if endpoint.mode == Mode.MANAGED:
        found = get(kube_of(endpoint.cluster), IEC_API, "InferenceEndpointConfig", endpoint.name, endpoint.namespace)
        return ((found or {}).get("spec") or {}).get("replicas")
    actual = actual_replicas(endpoint)
    return actual["desired"] if actual else None


ROUTER_SERIES = {
    "sgl_router_requests_total": "requests_total",
    "sgl_router_running_requests": "requests_in_flight",
    "sgl_router_active_workers": "active_workers",
    "sgl_router_request_errors_total": "errors_total",
    "sgl_router_cache_hits_total": "cache_hits_total",
    "sgl_router_cache_misses_total": "cache_misses_total",
}
_SAMPLE = re.compile(r"^([a-z_:]+)(?:\{[^}]*\})? ([0-9.eE+-]+)$", re.M)


def router_metrics(endpoint: Endpoint, api) -> dict[str, float] | None:
    """The router's own counters (its Prometheus endpoint through the service proxy), summed per series."""
    path = (
        f"/api/v1/namespaces/{endpoint.namespace}/services/{router_name(endpoint)}:{ROUTER_METRICS_PORT}/proxy/metrics"
    )
    method, url, headers, _, _ = api.param_serialize("GET", path, auth_settings=["BearerToken"])
    try:
        text = api.call_api(method, url, header_params=headers).read().decode()
    except k8s.ApiException:
        return None
    found = dict.fromkeys(ROUTER_SERIES.values(), 0.0)
    for name, value in _SAMPLE.findall(text):
        if name in ROUTER_SERIES:
            found[ROUTER_SERIES[name]] += float(value)
    return found
