"""Nodes of a cluster as HyperPod and Kubernetes see them, and read-only diagnosis.

Diagnosis never acts: it returns findings and suggested actions in escalation order
(investigate → reboot → replace), each naming the tool that would carry it out.
"""

from __future__ import annotations

from kubernetes import client as k8s

from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client

from . import catalog
from .models import Cluster, InstanceGroup

HEALTH = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH = "sagemaker.amazonaws.com/deep-health-check-status"
FAULT_TYPES = "sagemaker.amazonaws.com/fault-types"
FAULT_REASONS = "sagemaker.amazonaws.com/fault-reasons"
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


def list_nodes(cluster: Cluster, health: str | None = None) -> list[dict]:
    """Every node with its group, instance id, type, zone, status, health labels and what runs on it."""
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


def find_node(cluster: Cluster, node: str) -> dict | None:
    """A node by instance id or Kubernetes node name."""
    for entry in list_nodes(cluster):
        if node in (entry["instance_id"], entry["name"]):
            return entry
    return None


def _events(cluster: Cluster, instance_id: str | None = None, limit: int = 20) -> list[dict]:
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    kwargs = {"ClusterName": cluster.hyperpod_cluster_name, "MaxResults": limit, "SortOrder": "Descending"}
    if instance_id:
        kwargs["NodeId"] = instance_id
    return [
        {
            "time": e["EventTime"].isoformat() if hasattr(e["EventTime"], "isoformat") else str(e["EventTime"]),
            "level": e.get("EventLevel"),
            "description": e.get("Description"),
            "instance_id": e.get("InstanceId"),
            "instance_group": e.get("InstanceGroupName"),
        }
        for e in sagemaker.list_cluster_events(**kwargs).get("Events", [])
    ]


def _action(action: str, why: str, tool: str | None = None) -> dict:
    return {"action": action, "why": why, "tool": tool}


def diagnose_node(cluster: Cluster, node: dict) -> dict:
    """Findings about one node and what to do, in escalation order. Reads only."""
    findings: list[dict] = []
    severe = False
    if node["health"] not in ("Schedulable",):
        findings.append(
            {
                "severity": "error",
                "check": "health",
                "message": f"HyperPod marks the node {node['health']}."
                + (f" Fault: {node['fault_types']} ({node['fault_reason']})." if node["fault_types"] else ""),
            }
        )
        severe = True
    if node["deep_health_check"] == "Failed":
        findings.append(
            {
                "severity": "error",
                "check": "deep_health_check",
                "message": "The deep health check failed"
                + (f": {node['fault_reason']}." if node["fault_reason"] else "."),
            }
        )
        severe = True
    elif node["deep_health_check"] == "InProgress":
        findings.append(
            {
                "severity": "info",
                "check": "deep_health_check",
                "message": "Deep health checks are still running; the node is not schedulable until they pass.",
            }
        )
    if not node["registered"]:
        findings.append(
            {
                "severity": "error",
                "check": "registration",
                "message": "The instance has not joined the Kubernetes cluster.",
            }
        )
        severe = True
    elif not node["ready"]:
        findings.append({"severity": "error", "check": "ready", "message": "The Kubernetes node is not Ready."})
        severe = True
    if node["status"] != "Running":
        findings.append(
            {
                "severity": "warning",
                "check": "instance_status",
                "message": f"HyperPod reports the instance {node['status']}. {node['status_message']}".strip(),
            }
        )
    info = catalog.instance_type_info(team_cloud(cluster.team, cluster.region), cluster.region, node["instance_type"])
    if info is not None and node["registered"]:
        gpus = int(node["allocatable"].get("nvidia.com/gpu", 0) or 0)
        if info.gpu_model and info.gpu_count and gpus != info.gpu_count:
            findings.append(
                {
                    "severity": "error",
                    "check": "gpu_allocatable",
                    "message": f"{gpus} of {info.gpu_count} GPUs are allocatable.",
                }
            )
            severe = True
        efa = int(node["allocatable"].get("vpc.amazonaws.com/efa", 0) or 0)
        if info.max_efa_interfaces and efa != info.max_efa_interfaces:
            findings.append(
                {
                    "severity": "warning",
                    "check": "efa_allocatable",
                    "message": f"{efa} of {info.max_efa_interfaces} EFA interfaces are allocatable.",
                }
            )
    stuck = [
        p
        for p in node["pods"]
        if p["phase"] not in ("Running", "Succeeded") or p["waiting_reason"] or p["restarts"] > 3
    ]
    for pod in stuck:
        findings.append(
            {
                "severity": "warning",
                "check": "pods",
                "message": f"Pod {pod['namespace']}/{pod['name']} is {pod['phase']}"
                + (f" ({pod['waiting_reason']})" if pod["waiting_reason"] else "")
                + (f", restarted {pod['restarts']} times" if pod["restarts"] else "")
                + ".",
            }
        )
    events = _events(cluster, node["instance_id"], limit=10)
    actions: list[dict] = []
    if findings:
        actions.append(
            _action("investigate", "Read the node's recent events and the stuck pods' logs first.", "diagnose_node")
        )
    if severe:
        actions.append(_action("reboot", "A reboot clears most transient GPU, driver and agent faults.", "reboot_node"))
        actions.append(
            _action(
                "replace",
                "If the fault survives a reboot (or the deep health check failed), "
                "replace the instance with a healthy one.",
                "replace_node",
            )
        )
    workloads = [p for p in node["pods"] if p["namespace"] not in SYSTEM_NAMESPACES]
    return {
        "node": node["name"],
        "instance_id": node["instance_id"],
        "healthy": not severe,
        "findings": findings,
        "recent_events": events,
        "suggested_actions": actions,
        "workloads_on_node": [f"{p['namespace']}/{p['name']}" for p in workloads],
    }


def diagnose_cluster(cluster: Cluster) -> dict:
    """Findings over the whole cluster: unhealthy nodes, short groups, a failed creation's cause. Reads only."""
    findings: list[dict] = []
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    if described.get("FailureMessage"):
        findings.append(
            {"severity": "error", "check": "cluster", "message": f"HyperPod: {described['FailureMessage']}"}
        )
    for group in described.get("InstanceGroups", []):
        if group.get("CurrentCount", 0) < group.get("TargetCount", 0):
            findings.append(
                {
                    "severity": "warning",
                    "check": "capacity",
                    "message": f"Group {group['InstanceGroupName']} has {group.get('CurrentCount', 0)} of "
                    f"{group.get('TargetCount', 0)} instances ({group.get('Status')}).",
                }
            )
    nodes = list_nodes(cluster)
    unhealthy = [diagnose_node(cluster, n) for n in nodes if n["health"] != "Schedulable" or not n["ready"]]
    for report in unhealthy:
        findings.append(
            {
                "severity": "error",
                "check": "node",
                "message": f"Node {report['node']}: " + "; ".join(f["message"] for f in report["findings"]),
            }
        )
    return {
        "cluster": cluster.name,
        "status": described["ClusterStatus"],
        "healthy": not findings,
        "nodes": {"total": len(nodes), "unhealthy": len(unhealthy)},
        "findings": findings,
        "unhealthy_nodes": unhealthy,
        "recent_events": _events(cluster, limit=20),
    }


def actual_count(cluster: Cluster, group: InstanceGroup) -> int | None:
    """The group's instance count as HyperPod has it (None when HyperPod has no such group yet).

    The explicit diff of a scale compares the request with this, never with what InstantStart recorded.
    """
    if not cluster.hyperpod_cluster_name:
        return None
    sagemaker = team_cloud(cluster.team, cluster.region).client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=cluster.hyperpod_cluster_name)
    actual = next((g for g in described.get("InstanceGroups", []) if g["InstanceGroupName"] == group.name), None)
    return None if actual is None else actual.get("TargetCount", actual.get("CurrentCount", 0))


def workloads_on(cluster: Cluster, group: InstanceGroup) -> list[str]:
    """Running or pending pods outside the system namespaces on the group's nodes (the delete guard)."""
    if not cluster.hyperpod_cluster_name:
        return []
    return [
        f"{pod['namespace']}/{pod['name']}"
        for node in list_nodes(cluster)
        if node["instance_group"] == group.name
        for pod in node["pods"]
        if pod["namespace"] not in SYSTEM_NAMESPACES and pod["phase"] in ("Running", "Pending")
    ]
