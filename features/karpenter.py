"""The Kubernetes objects of managed Karpenter for one opted-in instance group: a HyperpodNodeClass
naming the group and a NodePool that uses it, capped at the group's ``max`` nodes."""

from __future__ import annotations

from .catalog import FEATURE_LABEL

NODECLASS_API = "karpenter.sagemaker.amazonaws.com/v1"
NODEPOOL_API = "karpenter.sh/v1"
GROUP_LABEL = "instantstart.io/instance-group"


def names(group_name: str) -> tuple[str, str]:
    """(node class, node pool) names of a group."""
    return f"{group_name}-nodeclass"[:63], f"{group_name}-nodepool"[:63]


def _labels(group_name: str) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "instantstart", FEATURE_LABEL: "autoscaling", GROUP_LABEL: group_name}


def node_class(group_name: str) -> dict:
    nodeclass, _ = names(group_name)
    return {
        "apiVersion": NODECLASS_API,
        "kind": "HyperpodNodeClass",
        "metadata": {"name": nodeclass, "labels": _labels(group_name)},
        "spec": {"instanceGroups": [group_name]},
    }


def node_pool(group_name: str, maximum: int) -> dict:
    nodeclass, nodepool = names(group_name)
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": nodepool, "labels": _labels(group_name)},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.sagemaker.amazonaws.com",
                        "kind": "HyperpodNodeClass",
                        "name": nodeclass,
                    },
                    "expireAfter": "Never",
                    "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Exists"}],
                }
            },
            "limits": {"nodes": str(maximum)},
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "30s",
                "budgets": [{"nodes": "90%"}],
            },
        },
    }
