"""Nodes of a cluster as HyperPod and Kubernetes see them: the list, one node, what runs on a
group's nodes, a group's actual count and whether its nodes are back. Reads only."""

from __future__ import annotations

from kubernetes import client as k8s

from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from instantstart.errors import NotFound, StateConflict, cloud_read

from ..models import Cluster, InstanceGroup

HEALTH = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH = "sagemaker.amazonaws.com/deep-health-check-status"
FAULT_TYPES = "sagemaker.amazonaws.com/fault-types"
FAULT_REASONS = "sagemaker.amazonaws.com/fault-reasons"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
# The health labels HyperPod puts on nodes, and the two InstantStart reports itself.
HEALTH_VALUES = (
    "Schedulable",
    "Unschedulable",
    "UnschedulablePendingReplacement",
    "UnschedulablePendingReboot",
    "Unknown",  # a registered node HyperPod has not labelled yet
    "NotRegistered",  # an instance that has not joined Kubernetes
)
SYSTEM_NAMESPACES = {
    "kube-system",
    "aws-hyperpod",
    "kube-public",
    "kube-node-lease",
    "amazon-cloudwatch",
    "hyperpod-observability",
    "cert-manager",
}


def node_name(instance_id: str) -> str:
    return f"hyperpod-{instance_id}"


def _hyperpod_nodes(cluster: Cluster) -> list[dict]:
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    nodes, kwargs = [], {"ClusterName": cluster.hyperpod_cluster_name}
    while True:
        page = sagemaker.list_cluster_nodes(**kwargs)
        nodes.extend(page.get("ClusterNodeSummaries", []))
        if not page.get("NextToken"):
            return nodes
        kwargs["NextToken"] = page["NextToken"]


def _core(cluster: Cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client(team_cloud(cluster.team, cluster.region), cluster.eks_cluster_name))


def _pods_by_node(core: k8s.CoreV1Api) -> dict[str, list]:
    pods: dict[str, list] = {}
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.spec and pod.spec.node_name:
            pods.setdefault(pod.spec.node_name, []).append(pod)
    return pods


def _describe_pod(pod) -> dict:
    statuses = pod.status.container_statuses or [] if pod.status else []
    restarts = sum(s.restart_count or 0 for s in statuses)
    waiting = next((s.state.waiting.reason for s in statuses if s.state and s.state.waiting), None)
    return {
        "namespace": pod.metadata.namespace,
        "name": pod.metadata.name,
        "phase": pod.status.phase if pod.status else None,
        "restarts": restarts,
        "waiting_reason": waiting,
    }


@cloud_read()
def list_nodes(cluster: Cluster, health: str | None = None) -> list[dict]:
    """Every node with its group, instance id, type, zone, status, health labels and what runs on it.

    Empty while the cluster has no HyperPod cluster recorded (nothing has nodes yet).
    """
    if not cluster.hyperpod_cluster_name:
        return []
    core = _core(cluster)
    kube = {n.metadata.name: n for n in core.list_node().items}
    pods = _pods_by_node(core)
    results = []
    for summary in _hyperpod_nodes(cluster):
        name = node_name(summary["InstanceId"])
        node = kube.get(name)
        labels = (node.metadata.labels or {}) if node else {}
        conditions = {c.type: c.status for c in (node.status.conditions or [])} if node and node.status else {}
        entry = {
            "name": name,
            "instance_id": summary["InstanceId"],
            "instance_group": summary["InstanceGroupName"],
            "instance_type": summary["InstanceType"],
            "availability_zone": labels.get("topology.kubernetes.io/zone"),
            "status": summary["InstanceStatus"]["Status"],
            "status_message": summary["InstanceStatus"].get("Message", ""),
            "registered": node is not None,
            "ready": conditions.get("Ready") == "True",
            "schedulable": bool(node) and not (node.spec and node.spec.unschedulable),
            "health": labels.get(HEALTH, "Unknown" if node else "NotRegistered"),
            "deep_health_check": labels.get(DEEP_HEALTH),
            "fault_types": labels.get(FAULT_TYPES),
            "fault_reason": labels.get(FAULT_REASONS),
            "allocatable": dict(node.status.allocatable or {}) if node and node.status else {},
            "pods": [_describe_pod(p) for p in pods.get(name, [])],
        }
        if health and entry["health"] != health:
            continue
        results.append(entry)
    return sorted(results, key=lambda n: (n["instance_group"], n["instance_id"]))


@cloud_read()
def find_node(cluster: Cluster, node: str) -> dict | None:
    """A node by instance id or Kubernetes node name (None when the cluster has no such node)."""
    for entry in list_nodes(cluster):
        if node in (entry["instance_id"], entry["name"]):
            return entry
    return None


def get_node(cluster: Cluster, node: str) -> dict:
    """The node, or NotFound: an unknown node is a 404 on every face (also before HyperPod exists)."""
    found = find_node(cluster, node)
    if found is None:
        raise NotFound(f"No node {node} in cluster {cluster.name}.")
    return found


def workload_names(node: dict) -> list[str]:
    """``namespace/name`` of the pods on the node outside the system namespaces."""
    return [f"{pod['namespace']}/{pod['name']}" for pod in node["pods"] if pod["namespace"] not in SYSTEM_NAMESPACES]


@cloud_read()
def actual_count(cluster: Cluster, group: InstanceGroup) -> int:
    """The group's instance count as HyperPod has it; StateConflict when HyperPod does not have it.

    The explicit diff of a scale compares the request with this, never with what InstantStart recorded.
    """
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    try:
        described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    except sagemaker.exceptions.ResourceNotFound:
        raise StateConflict(
            f"HyperPod has no cluster {cluster.hyperpod_cluster_name}: it changed outside InstantStart; "
            "look at the cluster's drift."
        ) from None
    actual = next((g for g in described.get("InstanceGroups", []) if g["InstanceGroupName"] == group.name), None)
    if actual is None:
        raise StateConflict(f"HyperPod has no group {group.name} (yet): wait for its operation, or reconcile.")
    return actual.get("TargetCount", actual.get("CurrentCount", 0))


@cloud_read()
def workloads_on(cluster: Cluster, group: InstanceGroup) -> list[str]:
    """Running or pending pods outside the system namespaces on the group's nodes (the delete guard)."""
    return [
        f"{pod['namespace']}/{pod['name']}"
        for node in list_nodes(cluster)
        if node["instance_group"] == group.name
        for pod in node["pods"]
        if pod["namespace"] not in SYSTEM_NAMESPACES and pod["phase"] in ("Running", "Pending")
    ]


@cloud_read()
def node_summary(cluster: Cluster) -> dict:
    """Nodes of the cluster by instance group and by health, read from Kubernetes."""
    api = api_client(team_cloud(cluster.team, cluster.region), cluster.eks_cluster_name)
    nodes = k8s.CoreV1Api(api).list_node(label_selector=GROUP_LABEL).items
    by_health: dict[str, int] = {}
    by_group: dict[str, int] = {}
    ready = 0
    for node in nodes:
        labels = node.metadata.labels or {}
        health = labels.get(HEALTH, "Unknown")
        by_health[health] = by_health.get(health, 0) + 1
        group = labels.get(GROUP_LABEL, "")
        by_group[group] = by_group.get(group, 0) + 1
        conditions = {c.type: c.status for c in (node.status.conditions or [])} if node.status else {}
        if conditions.get("Ready") == "True" and not (node.spec and node.spec.unschedulable):
            ready += 1
    return {"total": len(nodes), "ready": ready, "by_health": by_health, "by_group": by_group}


@cloud_read()
def group_settled(cluster: Cluster, group_name: str) -> tuple[bool, str]:
    """Whether a group's nodes are all back: as many Running, Ready and Schedulable nodes as it targets."""
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    group = next((g for g in described.get("InstanceGroups", []) if g["InstanceGroupName"] == group_name), None)
    if group is None:
        return True, f"group {group_name} no longer exists"
    target = group.get("TargetCount", 0)
    healthy = [
        n
        for n in list_nodes(cluster)
        if n["instance_group"] == group_name
        and n["status"] == "Running"
        and n["ready"]
        and n["health"] == "Schedulable"
    ]
    return len(healthy) >= target, f"{len(healthy)} of {target} nodes of {group_name} healthy"
