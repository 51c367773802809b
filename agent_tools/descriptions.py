"""Descriptions of tool arguments whose serializer field carries no ``help_text``.

A field's own ``help_text`` always wins (it is also the OpenAPI description). Arguments that
recur across endpoints (region, availability_zone, instance_type, count…) are described once
here, so every tool taking them — in any app — tells the agent what to pass, without each app
repeating the sentence. Only top-level arguments are filled in: the items of a list
argument are described by the list's own description.
"""

from __future__ import annotations

from typing import Any

ARGUMENTS: dict[str, str] = {
    "region": "AWS region where SageMaker HyperPod is offered, such as us-west-2 (ask the user; default: the "
    "team's default region).",
    "availability_zone": "Availability zone of the region, such as us-west-2a (list_availability_zones lists them).",
    "name": "The name to give it: lowercase letters, digits and dashes, unique where it lives.",
    "kubernetes_version": "EKS Kubernetes version (leave out for the default).",
    "storage": "Shared storage to create with the cluster: s3 (an S3 bucket mounted through the CSI driver) or "
    "fsx (FSx for Lustre).",
    "instance_groups": "The HyperPod instance groups to create: one per instance type and capacity; each "
    "{name, instance_type, count, capacity_type, training_plan_arn, efa_only, deep_health_checks}.",
    "instance_type": "SageMaker instance type such as ml.p5.48xlarge (list_instance_types lists those offered).",
    "count": "How many instances.",
    "capacity_type": "How the instances are bought: on_demand, spot or training_plan (reserved capacity from "
    "list_training_plans).",
    "training_plan_arn": "ARN of a training plan from list_training_plans; only with capacity_type training_plan.",
    "efa_only": "Use EFA-only network interfaces (instance types with several EFA cards, such as p5); default false.",
    "deep_health_checks": "HyperPod deep health checks to run on new nodes (InstanceStress, InstanceConnectivity); "
    "default none.",
    "labels": "Kubernetes labels put on the group's nodes: {key: value}.",
    "taints": "Kubernetes taints put on the group's nodes: [{key, value, effect}].",
    "ebs_volume_gb": "Size of each node's extra EBS volume in GiB.",
    "eks_cluster_name": "Name of the EKS cluster in the team's account (from list_importable_clusters).",
    "force": "Go ahead even though something else is running; leave false unless the user asked to force.",
    "status": "Keep only items with this status.",
    "kind": "Keep only operations of this kind, such as cluster.create.",
    "target": "Keep only operations on this target id.",
    "health": "Keep only nodes with this health.",
}


def describe_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Fill in a description for each argument of ``schema`` that has none (nested fields keep theirs)."""
    for name, prop in schema.get("properties", {}).items():
        if "description" not in prop and name in ARGUMENTS:
            prop["description"] = ARGUMENTS[name]
    return schema
