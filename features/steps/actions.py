"""One step per (action, feature): enable installs the identity chain first, then the feature;
disable removes the feature first, then its identity chain; update changes a setting."""

from __future__ import annotations

from clusters.steps.base import cloud_of, cluster_of
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done

from ..catalog import CATALOG, Feature
from . import addons, helm, hyperpod
from .groups import remove_node_pools
from .identity import ensure_identity, remove_identity

ACTIONS = ("enable", "disable", "update")


def step_name(action: str, name: str) -> str:
    return f"{action}_{name}"


def _settings(ctx: StepContext, f: Feature) -> dict:
    return {**{s.name: s.default for s in f.settings}, **(ctx.params.get("settings", {}).get(f.name) or {})}


def _tiered(ctx: StepContext, f: Feature, enabled: bool) -> dict:
    if not enabled:
        return {"Mode": "Disable"}
    return {"Mode": "Enable", "InstanceMemoryAllocationPercentage": int(_settings(ctx, f)["memory_percent"])}


def enable(name: str):
    f = CATALOG[name]

    def run(ctx: StepContext):
        cluster = cluster_of(ctx)
        cloud = cloud_of(cluster)
        role_arn = ensure_identity(ctx, cluster, cloud, f) if f.identity else None
        if f.addon:
            return addons.install(ctx, cluster, cloud, f, role_arn)
        if f.helm:
            return helm.install(ctx, cluster, cloud, f)
        if f.name == "tiered_checkpointing":
            waiting = hyperpod.tiered_storage(ctx, cluster, cloud, _tiered(ctx, f, True))
            if waiting is not None:
                return waiting
        if f.name == "autoscaling":
            waiting = hyperpod.autoscaling(ctx, cluster, cloud, role_arn, enable=True)
            if waiting is not None:
                return waiting
        return Done(f"{f.title} enabled")

    return run


def disable(name: str):
    f = CATALOG[name]

    def run(ctx: StepContext):
        cluster = cluster_of(ctx)
        cloud = cloud_of(cluster)
        if f.addon:
            waiting = addons.uninstall(ctx, cluster, cloud, f)
        elif f.helm:
            waiting = helm.uninstall(ctx, cluster, cloud, f)
        elif f.name == "tiered_checkpointing":
            waiting = hyperpod.tiered_storage(ctx, cluster, cloud, _tiered(ctx, f, False))
        elif f.name == "autoscaling":
            remove_node_pools(cluster, cloud)
            waiting = hyperpod.autoscaling(ctx, cluster, cloud, None, enable=False)
        else:
            waiting = None
        if waiting is not None:
            return waiting
        if f.identity:
            remove_identity(ctx, cluster, cloud, f)
        return Done(f"{f.title} removed, with everything it installed")

    return run


def update(name: str):
    f = CATALOG[name]

    def run(ctx: StepContext):
        cluster = cluster_of(ctx)
        cloud = cloud_of(cluster)
        if f.name == "tiered_checkpointing":
            waiting = hyperpod.tiered_storage(ctx, cluster, cloud, _tiered(ctx, f, True))
            if waiting is not None:
                return waiting
        return Done(f"{f.title} settings applied")

    return run
