"""`job.cancel`: delete the job's object (its pods go with it); the stored logs stay."""

from __future__ import annotations

from kubernetes import client as k8s

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Wait

from ..manifests import GROUP_VERSION, PLURAL, config_map_name
from ..readers.cluster import kube
from .submit import job_of


def delete(ctx: StepContext):
    job = job_of(ctx)
    api = kube(job.cluster)
    group, version = GROUP_VERSION[job.kind]
    custom = k8s.CustomObjectsApi(api)
    try:
        custom.get_namespaced_custom_object(group, version, job.namespace, PLURAL[job.kind], job.k8s_name)
    except k8s.ApiException as exc:
        if exc.status == 404:
            _delete_config(api, job)
            return Done(f"{job.kind} {job.k8s_name} deleted")
        raise
    if not ctx.state.get("requested"):
        custom.delete_namespaced_custom_object(
            group, version, job.namespace, PLURAL[job.kind], job.k8s_name, propagation_policy="Foreground"
        )
        ctx.record(requested=True)
    return Wait(5, "Waiting for the job's object to go")


def _delete_config(api, job) -> None:
    try:
        k8s.CoreV1Api(api).delete_namespaced_config_map(config_map_name(job), job.namespace)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise
