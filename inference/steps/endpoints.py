"""Phases of endpoint.deploy, endpoint.scale and endpoint.delete: the only code that writes an endpoint's
objects to Kubernetes.

Names are deterministic (the endpoint's name and fixed suffixes) and every write is a server-side
apply, so a retried phase re-applies the same objects instead of making second ones. What was applied
is recorded on the endpoint before any wait, so delete removes exactly that, and nothing else.
"""

from __future__ import annotations

import re

from kubernetes import client as k8s

from clusters.models import StorageKind
from instantstart.cloud.kube import apply, delete, get
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..manifests import IEC_API, endpoint_objects
from ..models import Endpoint, Mode, ServiceShape
from ..readers.cluster_api import kube_of
from ..readers.endpoints import external_address

POLL_SECONDS = 5
CRASH_RESTARTS = 3  # a worker that crashed this often will not come up by waiting


def endpoint_of(ctx: StepContext) -> Endpoint:
    return Endpoint.objects.select_related("cluster__team").get(pk=ctx.operation.target_id)


def objects_for(endpoint: Endpoint) -> list[dict]:
    cluster = endpoint.cluster
    fsx = cluster.storages.filter(kind=StorageKind.FSX).first()
    return endpoint_objects(endpoint, bucket_region=cluster.region, fsx_id=fsx.file_system_id if fsx else "")


def apply_objects(ctx: StepContext):
    """Apply the endpoint's objects (record them first: delete must know them even if an apply fails)."""
    endpoint = endpoint_of(ctx)
    objects = objects_for(endpoint)
    Endpoint.objects.filter(pk=endpoint.pk).update(manifest=objects)
    api = kube_of(endpoint.cluster)
    for manifest in objects:
        apply(api, manifest)
    ctx.record(applied=[f"{m['kind']}/{m['metadata']['name']}" for m in objects])
    return Done(f"applied {len(objects)} objects in {endpoint.namespace}")


def crash_reason(log: str) -> str:
    """The engine's own error line (the exception of its traceback), else its last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line)]
    return (errors or lines or ["(no log)"])[-1][:500]


def _crash(core: k8s.CoreV1Api, endpoint: Endpoint) -> str | None:
    for pod in core.list_namespaced_pod(endpoint.namespace, label_selector=f"app={endpoint.name}").items:
        for status in pod.status.container_statuses or []:
            waiting = status.state.waiting if status.state else None
            if waiting and waiting.reason == "CrashLoopBackOff" and (status.restart_count or 0) >= CRASH_RESTARTS:
                log = core.read_namespaced_pod_log(
                    pod.metadata.name, endpoint.namespace, container=status.name, tail_lines=40
                )
                return f"pod {pod.metadata.name} keeps crashing: {crash_reason(log)}"
    return None


def wait_ready(ctx: StepContext):
    """Wait (polling, never sleeping) until the desired replicas are ready and an external address exists."""
    endpoint = endpoint_of(ctx)
    api = kube_of(endpoint.cluster)
    core = k8s.CoreV1Api(api)
    if endpoint.mode == Mode.MANAGED:
        found = get(api, IEC_API, "InferenceEndpointConfig", endpoint.name, endpoint.namespace) or {}
        status = found.get("status") or {}
        state = status.get("state", "")
        if state == "DeploymentFailed":
            ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
            return Fail(f"The inference operator failed the deployment: {ready.get('message', state)}")
        if state != "DeploymentComplete":
            return Wait(POLL_SECONDS, f"operator: {state or 'pending'}")
    crash = _crash(core, endpoint)
    if crash:
        return Fail(crash, hint="Check the model source and arguments, then deploy again.", code="worker_crashing")
    try:
        deployment = k8s.AppsV1Api(api).read_namespaced_deployment(endpoint.name, endpoint.namespace)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return Wait(POLL_SECONDS, "waiting for the Deployment")
        raise
    desired, ready = deployment.spec.replicas or 0, deployment.status.ready_replicas or 0
    if ready < desired:
        return Wait(POLL_SECONDS, f"{ready}/{desired} replicas ready")
    if endpoint.service == ServiceShape.EXTERNAL:
        url = external_address(core, endpoint)
        if not url:
            return Wait(POLL_SECONDS, f"{ready}/{desired} ready; waiting for the load balancer's address")
        Endpoint.objects.filter(pk=endpoint.pk).update(url=url)
    return Done(f"{ready}/{desired} replicas ready")


def scale(ctx: StepContext):
    """Set the replica count (the Deployment's, or the InferenceEndpointConfig's for the operator to apply)."""
    endpoint = endpoint_of(ctx)
    replicas = int(ctx.params["replicas"])
    Endpoint.objects.filter(pk=endpoint.pk).update(replicas=replicas)
    endpoint.replicas = replicas
    objects = objects_for(endpoint)
    Endpoint.objects.filter(pk=endpoint.pk).update(manifest=objects)
    apply(kube_of(endpoint.cluster), objects[0])
    return Done(f"replicas set to {replicas}")


def remove_objects(ctx: StepContext):
    """Delete what the deploy applied, in reverse order; objects already gone are fine."""
    endpoint = endpoint_of(ctx)
    api = kube_of(endpoint.cluster)
    for manifest in reversed(endpoint.manifest or []):
        namespace = manifest["metadata"].get("namespace")
        delete(api, manifest["apiVersion"], manifest["kind"], manifest["metadata"]["name"], namespace)
    return Done(f"deleted {len(endpoint.manifest or [])} objects")


def wait_gone(ctx: StepContext):
    """Wait until the pods are gone (and the operator has removed its router, for a managed endpoint)."""
    endpoint = endpoint_of(ctx)
    api = kube_of(endpoint.cluster)
    if endpoint.mode == Mode.MANAGED and get(
        api, IEC_API, "InferenceEndpointConfig", endpoint.name, endpoint.namespace
    ):
        return Wait(POLL_SECONDS, "the operator is removing the endpoint")
    core = k8s.CoreV1Api(api)
    pods = core.list_namespaced_pod(endpoint.namespace, label_selector=f"app={endpoint.name}").items
    if pods:
        return Wait(POLL_SECONDS, f"{len(pods)} pods still terminating")
    return Done("everything the endpoint created is gone")
