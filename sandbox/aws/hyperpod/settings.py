"""Cluster-level HyperPod settings behind the managed features: TieredStorageConfig, AutoScaling,
ClusterRole and NodeProvisioningMode (with NodeRecovery, which autoscaling needs).

CreateCluster / UpdateCluster validate them as SageMaker does (enums and ranges botocore leaves to
the service; autoscaling needs Continuous provisioning, Automatic node recovery and a ClusterRole
that exists and trusts hyperpod.sagemaker.amazonaws.com; the ClusterRole cannot change while
autoscaling is on). The record keeps them; `settle` finishes them when the cluster operation
completes (AutoScaling Creating -> InService, or Failed with a FailureMessage when the role may not
add or delete nodes; a Disable removes AutoScaling, a tiered storage Disable removes the config);
`view` is their DescribeCluster form.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.aws.handlers import Ctx
from sandbox.aws.iam_checks import find_role, missing_actions, trusts
from sandbox.aws.protocol import AwsError
from sandbox.aws.world import World

HYPERPOD_PRINCIPAL = "hyperpod.sagemaker.amazonaws.com"
AUTOSCALING_ACTIONS = ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"]
_ENUMS = {
    ("TieredStorageConfig", "Mode"): ("tieredStorageConfig.mode", ["Enable", "Disable"]),
    ("AutoScaling", "Mode"): ("autoScaling.mode", ["Enable", "Disable"]),
    ("AutoScaling", "AutoScalerType"): ("autoScaling.autoScalerType", ["Karpenter"]),
    ("NodeRecovery", None): ("nodeRecovery", ["Automatic", "None"]),
    ("NodeProvisioningMode", None): ("nodeProvisioningMode", ["Continuous"]),
}


def _invalid(message: str) -> AwsError:
    return AwsError("ValidationException", message, 400)


def _check_shapes(p: dict[str, Any]) -> None:
    """What the service's model validation answers (botocore checks neither enums nor maxima)."""
    for (field, member), (path, values) in _ENUMS.items():
        value = p.get(field) if member is None else (p.get(field) or {}).get(member)
        if value is not None and value not in values:
            raise _invalid(
                f"1 validation error detected: Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must satisfy enum value set: [{', '.join(values)}]"
            )
    pct = (p.get("TieredStorageConfig") or {}).get("InstanceMemoryAllocationPercentage")
    if pct is not None and not 0 <= int(pct) <= 100:
        bound = "less than or equal to 100" if int(pct) > 100 else "greater than or equal to 0"
        raise _invalid(
            f"1 validation error detected: Value '{pct}' at 'tieredStorageConfig.instanceMemoryAllocationPercentage' "
            f"failed to satisfy constraint: Member must have value {bound}"
        )


def autoscaling_on(c: dict[str, Any]) -> bool:
    return (c.get("AutoScaling") or {}).get("Mode") == "Enable" and c.get("_autoscaling", {}).get("Status") in (
        "Creating",
        "InService",
    )


def validate(ctx: Ctx, p: dict[str, Any], c: dict[str, Any] | None = None) -> None:
    """Refuse what SageMaker refuses; `c` is the cluster for an UpdateCluster."""
    _check_shapes(p)
    current = c or {}
    if c is not None and current.get("NodeProvisioningMode") and "NodeProvisioningMode" in p:
        if p["NodeProvisioningMode"] != current["NodeProvisioningMode"]:
            raise _invalid("NodeProvisioningMode cannot be changed once it is set.")
    recovery = p.get("NodeRecovery", current.get("NodeRecovery", "Automatic"))
    provisioning = p.get("NodeProvisioningMode", current.get("NodeProvisioningMode"))
    role_arn = p.get("ClusterRole", current.get("ClusterRole"))
    mode = (p.get("AutoScaling") or {}).get("Mode")
    on_now = c is not None and autoscaling_on(c)
    if on_now and mode != "Disable":
        if "ClusterRole" in p and p["ClusterRole"] != current.get("ClusterRole"):
            raise _invalid("ClusterRole cannot be updated while autoscaling is enabled. Disable autoscaling first.")
        if recovery != "Automatic":
            raise _invalid("NodeRecovery must be Automatic while autoscaling is enabled.")
    if mode != "Enable":
        return
    if provisioning != "Continuous":
        raise _invalid("Autoscaling requires NodeProvisioningMode to be Continuous.")
    if recovery != "Automatic":
        raise _invalid("Autoscaling requires NodeRecovery to be Automatic.")
    if not role_arn:
        raise _invalid("ClusterRole is required when AutoScaling Mode is Enable.")
    role = find_role(ctx.account, role_arn)
    if role is None:
        raise _invalid(f"ClusterRole {role_arn} does not exist.")
    if not trusts(role, HYPERPOD_PRINCIPAL):
        raise _invalid(
            f"ClusterRole {role_arn} cannot be assumed by {HYPERPOD_PRINCIPAL}. Add a trust policy statement "
            f"that allows {HYPERPOD_PRINCIPAL} to perform sts:AssumeRole."
        )


def apply(world: World, c: dict[str, Any], p: dict[str, Any]) -> None:
    """Keep the settings of a validated CreateCluster / UpdateCluster (the operation then runs)."""
    for k in ("NodeRecovery", "NodeProvisioningMode", "ClusterRole"):
        if k in p:
            c[k] = p[k]
    if "TieredStorageConfig" in p:
        c["TieredStorageConfig"] = copy.deepcopy(p["TieredStorageConfig"])
    asg = p.get("AutoScaling")
    if not asg:
        return
    if asg["Mode"] == "Enable":
        if not autoscaling_on(c):
            c["AutoScaling"] = {"Mode": "Enable", "AutoScalerType": asg.get("AutoScalerType", "Karpenter")}
            c["_autoscaling"] = {"Status": "Creating"}
    elif c.get("AutoScaling"):
        c["AutoScaling"] = {**c["AutoScaling"], "Mode": "Disable"}
        c["_autoscaling"] = {"Status": "Deleting"}


def settle(world: World, c: dict[str, Any], failed: str | None = None) -> None:
    """The cluster operation completed (`failed`: its failure message, if it failed)."""
    account = c["ClusterArn"].split(":")[4]
    if (c.get("TieredStorageConfig") or {}).get("Mode") == "Disable":
        c.pop("TieredStorageConfig")  # the memory management daemon is gone: nothing left to show
    status = c.get("_autoscaling", {}).get("Status")
    if status == "Deleting":
        c.pop("AutoScaling", None)
        c.pop("_autoscaling", None)
    elif status == "Creating":
        c["_autoscaling"] = {"Status": "InService"}
        problem = failed and f"Autoscaling could not be enabled because the cluster operation failed: {failed}"
        problem = problem or _autoscaling_problem(world, account, c)
        if problem:
            c["_autoscaling"] = {"Status": "Failed", "FailureMessage": problem}


def _autoscaling_problem(world: World, account: str, c: dict[str, Any]) -> str | None:
    fault = world.faults.take("autoscaling_fails", cluster=c["ClusterName"], account=account)
    if fault:
        return fault.get("message") or "An internal error occurred while enabling autoscaling. Try again."
    role_arn = c.get("ClusterRole") or ""
    role = find_role(account, role_arn)
    if role is None:
        return f"ClusterRole {role_arn} does not exist."
    missing = missing_actions(account, role, AUTOSCALING_ACTIONS)
    if missing:
        return (
            f"ClusterRole {role_arn} is not authorized to perform {', '.join(missing)} on the cluster. "
            "Add these permissions to the role and enable autoscaling again."
        )
    return None


def view(c: dict[str, Any], out: dict[str, Any]) -> None:
    """The DescribeCluster form: AutoScaling carries its Status (and FailureMessage)."""
    if c.get("AutoScaling"):
        out["AutoScaling"] = {**c["AutoScaling"], **c.get("_autoscaling", {"Status": "InService"})}
