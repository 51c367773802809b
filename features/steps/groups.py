"""Phases of `instance_group.autoscaling`: the group's MinInstanceCount in HyperPod, then its
HyperpodNodeClass + NodePool (max nodes); and the removal of every NodePool when autoscaling goes."""

from __future__ import annotations

from clusters.models import InstanceGroup
from clusters.steps.base import cloud_of
from clusters.steps.hyperpod import instance_group_request
from instantstart.cloud.kube import api_client, apply, delete, dynamic_client, get
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Wait

from ..catalog import FEATURE_LABEL
from ..karpenter import NODECLASS_API, NODEPOOL_API, names, node_class, node_pool

POLL_SECONDS = 5


def _group(ctx: StepContext) -> InstanceGroup:
    return InstanceGroup.objects.select_related("cluster__team").get(pk=ctx.operation.target_id)


def minimum(ctx: StepContext):
    """UpdateCluster with the group's MinInstanceCount (its count stays what HyperPod has now)."""
    group = _group(ctx)
    cluster = group.cluster
    wanted = ctx.params.get("autoscaling")
    sagemaker = cloud_of(cluster).client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    actual = next(g for g in described["InstanceGroups"] if g["InstanceGroupName"] == group.name)
    target = 0 if wanted is None else int(wanted["min"])
    if int(actual.get("MinCount", 0)) == target and described["ClusterStatus"] == "InService":
        return Done(f"{group.name}: MinInstanceCount {target}")
    if not ctx.state.get("submitted"):
        if described["ClusterStatus"] != "InService":
            return Wait(POLL_SECONDS, f"waiting for the HyperPod cluster ({described['ClusterStatus']})")
        request = instance_group_request(cluster, group)
        request["InstanceCount"] = max(int(actual.get("TargetCount", 0)), target)
        request["MinInstanceCount"] = target
        sagemaker.update_cluster(ClusterName=cluster.hyperpod_cluster_name, InstanceGroups=[request])
        ctx.record(submitted=True)
    return Wait(POLL_SECONDS, f"waiting for HyperPod to apply MinInstanceCount {target} to {group.name}")


def pool(ctx: StepContext):
    """Apply (or, for autoscaling null, delete) the group's node class and pool; wait until the pool is Ready."""
    group = _group(ctx)
    cluster = group.cluster
    wanted = ctx.params.get("autoscaling")
    api = api_client(cloud_of(cluster), cluster.eks_cluster_name, cluster.region)
    nodeclass, nodepool = names(group.name)
    if wanted is None:
        delete(api, NODEPOOL_API, "NodePool", nodepool)
        delete(api, NODECLASS_API, "HyperpodNodeClass", nodeclass)
        return Done(f"{group.name} no longer autoscales")
    if ctx.state.get("applied") != wanted:
        apply(api, node_class(group.name))
        apply(api, node_pool(group.name, int(wanted["max"])))
        ctx.record(applied=wanted)
    found = get(api, NODEPOOL_API, "NodePool", nodepool) or {}
    conditions = (found.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") == "True":
        return Done(f"NodePool {nodepool} Ready: {group.name} scales between {wanted['min']} and {wanted['max']}")
    return Wait(POLL_SECONDS, f"waiting for NodePool {nodepool} ({(ready or {}).get('message', 'not ready')})")


def remove_node_pools(cluster, cloud) -> None:
    """Every NodePool and HyperpodNodeClass InstantStart made (before autoscaling is turned off)."""
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    from ..models import GroupAutoscaling

    api = api_client(cloud, cluster.eks_cluster_name, cluster.region)
    dyn = dynamic_client(api)
    for api_version, kind in ((NODEPOOL_API, "NodePool"), (NODECLASS_API, "HyperpodNodeClass")):
        try:
            resource = dyn.resources.get(api_version=api_version, kind=kind)
            items = dyn.get(resource, label_selector=f"{FEATURE_LABEL}=autoscaling").items
        except (ResourceNotFoundError, NotFoundError):  # the kinds go with autoscaling: nothing left
            continue
        for item in items:
            try:
                dyn.delete(resource, name=item.metadata.name)
            except NotFoundError:  # a NodePool's delete takes its node class with it
                pass
    GroupAutoscaling.objects.filter(group__cluster=cluster).delete()
