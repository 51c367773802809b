"""Helm-equivalent installs (KubeRay, KEDA): server-side apply of the chart's objects, then wait for the
operator's ready replica; removal deletes the same objects (operator, RBAC, CRDs, namespace)."""

from __future__ import annotations

from kubernetes import client as k8s

from instantstart.cloud.kube import api_client, apply, delete, dynamic_client, get
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Wait

from ..catalog import Feature
from ..charts import HELM_RELEASES, crd_objects, namespace_object, operator_objects

POLL_SECONDS = 5


def install(ctx: StepContext, cluster, cloud, f: Feature):
    release = HELM_RELEASES[f.helm]
    api = api_client(cloud, cluster.eks_cluster_name, cluster.region)
    if not ctx.state.get("applied"):
        apply(api, namespace_object(release))
        for crd in crd_objects(release):
            apply(api, crd)
        dynamic_client(api).resources.invalidate_cache()  # the new kinds are discovered from now on
        for obj in operator_objects(release):
            apply(api, obj)
        ctx.record(applied=[release.namespace, *release.crd_names])
    deployment = get(api, "apps/v1", "Deployment", release.deployment, release.namespace)
    ready = ((deployment or {}).get("status") or {}).get("readyReplicas") or 0
    if ready > 0:
        return Done(f"{release.namespace}/{release.deployment} ready; {', '.join(release.crd_names)} served")
    return Wait(POLL_SECONDS, f"waiting for {release.deployment} to have a ready replica")


def uninstall(ctx: StepContext, cluster, cloud, f: Feature):
    """Delete the release's objects; None once the namespace is gone."""
    release = HELM_RELEASES[f.helm]
    api = api_client(cloud, cluster.eks_cluster_name, cluster.region)
    if not ctx.state.get("deleted"):
        for obj in reversed(operator_objects(release)):
            meta = obj["metadata"]
            delete(api, obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        ext = k8s.ApiextensionsV1Api(api)
        for name in release.crd_names:
            try:
                ext.delete_custom_resource_definition(name)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
        delete(api, "v1", "Namespace", release.namespace)
        ctx.record(deleted=True)
    if get(api, "v1", "Namespace", release.namespace) is not None:
        return Wait(POLL_SECONDS, f"waiting for namespace {release.namespace} to go")
    return None
