"""Phase `dependencies`: EKS add-ons and the base manifests, applied server-side and verified ready."""

from __future__ import annotations

from instantstart.cloud.kube import api_client, apply
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..manifests import addons_for, base_manifests
from .base import cloud_of, cluster_of

POLL_SECONDS = 15


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    cloud = cloud_of(cluster)
    eks = cloud.client("eks")
    name = cluster.eks_cluster_name
    wanted = addons_for(cluster)

    if ctx.phase.state.get("addons") != wanted:  # submitted once; later polls only describe
        installed = set(eks.list_addons(clusterName=name).get("addons", []))
        for addon in wanted:
            if addon in installed:
                continue
            eks.create_addon(clusterName=name, addonName=addon, resolveConflicts="OVERWRITE", tags=cluster.tags())
        ctx.record(addons=wanted)

    if not ctx.phase.state.get("manifests_applied"):
        api = api_client(cloud, name)
        for manifest in base_manifests(cluster):
            apply(api, manifest)
        ctx.record(manifests_applied=[f"{m['kind']}/{m['metadata']['name']}" for m in base_manifests(cluster)])

    # Add-ons already ACTIVE are not described again.
    active = set(ctx.phase.state.get("active_addons", []))
    statuses = {
        addon: eks.describe_addon(clusterName=name, addonName=addon)["addon"] for addon in wanted if addon not in active
    }
    newly_active = sorted(a for a, s in statuses.items() if s["status"] == "ACTIVE")
    if newly_active:
        ctx.record(active_addons=sorted(active | set(newly_active)))
    broken = {a: s for a, s in statuses.items() if s["status"] in ("CREATE_FAILED", "DEGRADED")}
    if broken:
        addon, status = next(iter(broken.items()))
        issues = (status.get("health") or {}).get("issues") or []
        detail = issues[0].get("message") if issues else status["status"]
        return Fail(
            f"EKS add-on {addon} is {status['status']}: {detail}",
            hint="Retry the operation; if it fails again, check the add-on's issue in the EKS console.",
            code="AddonFailed",
        )
    pending = sorted(a for a, s in statuses.items() if s["status"] != "ACTIVE")
    if pending:
        return Wait(POLL_SECONDS, f"waiting for add-ons: {', '.join(pending)}")
    return Done(f"add-ons ACTIVE: {', '.join(wanted)}; base manifests applied")
