"""EKS records that more than one module writes: the cluster creator's bootstrap access entry (made
when a cluster becomes ACTIVE) and the names of access policies. Depends on nothing but the world."""

from __future__ import annotations

import uuid
from typing import Any


def policy_arn(name: str) -> str:
    return f"arn:aws:eks::aws:cluster-access-policy/{name}"


def ensure_creator_entry(
    ctx_world: Any, account: str, region: str, cluster: str, principal: str | None, now: float
) -> None:
    """EKS gives the cluster creator an access entry with AmazonEKSClusterAdminPolicy (bootstrap)."""
    if not principal:
        return
    tbl = ctx_world.table("eks_access_entries", account, region)
    key = f"{cluster}/{principal}"
    if key in tbl:
        return
    name = principal.rsplit("/", 1)[-1]
    tbl[key] = {
        "clusterName": cluster,
        "principalArn": principal,
        "kubernetesGroups": [],
        "accessEntryArn": f"arn:aws:eks:{region}:{account}:access-entry/{cluster}/role/{account}/{name}/"
        f"{uuid.uuid4().hex[:8]}",
        "createdAt": now,
        "modifiedAt": now,
        "tags": {},
        "username": f"arn:aws:sts::{account}:assumed-role/{name}/{{{{SessionName}}}}",
        "type": "STANDARD",
        "_policies": {
            policy_arn("AmazonEKSClusterAdminPolicy"): {
                "policyArn": policy_arn("AmazonEKSClusterAdminPolicy"),
                "accessScope": {"type": "cluster"},
                "associatedAt": now,
                "modifiedAt": now,
            }
        },
    }
