"""Phase `features` of `cluster.delete`: the IAM roles of the cluster's features (their add-ons, pod
identity associations and Kubernetes objects went with the EKS cluster in the phase before)."""

from __future__ import annotations

from clusters.steps.base import cloud_of, cluster_of
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done

from ..catalog import CATALOG, role_name
from .identity import remove_role


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    iam = cloud_of(cluster).client("iam")
    removed = []
    for f in CATALOG.values():
        if f.identity is None:
            continue
        name = role_name(cluster, f)
        if remove_role(iam, name):
            removed.append(name)
    return Done(f"feature roles deleted: {', '.join(removed)}" if removed else "no feature roles")
