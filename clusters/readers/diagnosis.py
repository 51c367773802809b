"""Read-only diagnosis of a node or a whole cluster.

Diagnosis never acts: it returns findings and suggested actions in escalation order
(investigate → reboot → replace), each naming the tool that would carry it out.
"""

from __future__ import annotations

from instantstart.cloud.aws import team_cloud
from instantstart.errors import StateConflict, cloud_read

from ..models import Cluster
from . import catalog
from .nodes import list_nodes, workload_names


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


@cloud_read()
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
    info = catalog.instance_type_info(cluster.team, cluster.region, node["instance_type"])
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
    return {
        "node": node["name"],
        "instance_id": node["instance_id"],
        "healthy": not severe,
        "findings": findings,
        "recent_events": events,
        "suggested_actions": actions,
        "workloads_on_node": workload_names(node),
    }


@cloud_read()
def diagnose_cluster(cluster: Cluster) -> dict:
    """Findings over the whole cluster: unhealthy nodes, short groups, a failed creation's cause. Reads only."""
    if not cluster.hyperpod_cluster_name:
        raise StateConflict("The cluster has no HyperPod cluster yet.")
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
