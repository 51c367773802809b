"""EKS add-on install and removal: submitted once (ids recorded before polling), polled to ACTIVE or
gone; a failed or degraded add-on is deleted and created again when the phase is retried."""

from __future__ import annotations

import json

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..catalog import Feature, feature_tags

POLL_SECONDS = 10
BROKEN = ("CREATE_FAILED", "DEGRADED", "UPDATE_FAILED")


def _describe(eks, cluster_name: str, addon: str) -> dict | None:
    try:
        return eks.describe_addon(clusterName=cluster_name, addonName=addon)["addon"]
    except eks.exceptions.ResourceNotFoundException:
        return None


def configuration(cluster, f: Feature, role_arn: str | None) -> str | None:
    """configurationValues of the add-ons that need them (the inference operator's role and TLS bucket)."""
    if f.name != "inference_operator":
        return None
    uri = (cluster.identity or {}).get("lifecycle_uri", "")
    bucket = uri.removeprefix("s3://").split("/", 1)[0]
    return json.dumps(
        {
            "executionRoleArn": role_arn,
            "tlsCertificateS3Bucket": bucket,
            "hyperpodClusterArn": cluster.hyperpod_cluster_arn,
            # KEDA is the keda feature's; the load balancer controller is not part of this feature
            "alb": {"enabled": False},
            "keda": {"enabled": False},
        }
    )


def install(ctx: StepContext, cluster, cloud, f: Feature, role_arn: str | None = None):
    eks = cloud.client("eks")
    name = cluster.eks_cluster_name
    if not ctx.state.get("addon_arn"):
        current = _describe(eks, name, f.addon)
        if current is not None and current["status"] in BROKEN + ("DELETING",):
            if current["status"] != "DELETING":  # a failed one from an earlier attempt: start over
                eks.delete_addon(clusterName=name, addonName=f.addon)
                ctx.record(replaced=current["addonArn"])
            return Wait(POLL_SECONDS, f"removing the failed add-on {f.addon} before creating it again")
        if current is not None:
            ctx.record(addon_arn=current["addonArn"])  # already there (installed out of band): adopt it
        else:
            kwargs = {"clusterName": name, "addonName": f.addon, "resolveConflicts": "OVERWRITE"}
            kwargs["tags"] = feature_tags(cluster, f.name)
            config = configuration(cluster, f, role_arn)
            if config:
                kwargs["configurationValues"] = config
            created = eks.create_addon(**kwargs)["addon"]
            ctx.record(addon_arn=created["addonArn"])
    current = _describe(eks, name, f.addon)
    if current is None:
        ctx.record(addon_arn="")
        return Wait(POLL_SECONDS, f"add-on {f.addon} disappeared; creating it again")
    if current["status"] == "ACTIVE":
        return Done(f"EKS add-on {f.addon} ACTIVE")
    if current["status"] in BROKEN:
        issues = (current.get("health") or {}).get("issues") or []
        detail = issues[0].get("message") if issues else current["status"]
        ctx.record(addon_arn="")  # a retry deletes it and creates it again
        return Fail(
            f"EKS add-on {f.addon} is {current['status']}: {detail}",
            hint="Retry the operation: the failed add-on is removed and created again.",
            code="AddonFailed",
        )
    return Wait(POLL_SECONDS, f"waiting for add-on {f.addon} ({current['status']})")


def uninstall(ctx: StepContext, cluster, cloud, f: Feature):
    """Delete the add-on and wait until it is gone; None when it is gone."""
    eks = cloud.client("eks")
    name = cluster.eks_cluster_name
    current = _describe(eks, name, f.addon)
    if current is None:
        return None
    if current["status"] != "DELETING" and ctx.state.get("delete_submitted") != current["addonArn"]:
        eks.delete_addon(clusterName=name, addonName=f.addon)
        ctx.record(delete_submitted=current["addonArn"])
    return Wait(POLL_SECONDS, f"waiting for add-on {f.addon} to be deleted")
