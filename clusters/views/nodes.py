"""The nodes tab's actions: reboot, replace or delete a node after confirmation (node_action, as REST),
and read-only diagnosis of a node or the whole cluster (the readers REST answers with)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.portal.partials import wants_partial
from instantstart.tenancy.roles import Role

from ..models import Cluster, ClusterStatus
from ..readers.diagnosis import diagnose_cluster, diagnose_node
from ..readers.nodes import get_node, workload_names
from ..selectors import get_cluster
from ..services import node_action, require_hyperpod
from .common import health_class, tab_url
from .tabs import cluster_page

NODE_ACTIONS = {
    "reboot": ("Reboot", "HyperPod reboots the instance; the operation ends when the node is back and schedulable."),
    "replace": ("Replace", "HyperPod swaps the instance for a new one; what runs on it is evicted."),
    "delete": ("Delete", "HyperPod removes the instance; the group's count goes down by one."),
}


@team_required(role=Role.ADMIN)
def node_act(request, cluster_id, node: str, action: str):
    """Reboot, replace or delete a node: a confirmation page, then `node_action` and its operation."""
    cluster = get_cluster(request.access, cluster_id)
    if action not in NODE_ACTIONS:
        raise Http404("No such node action.")
    label, effect = NODE_ACTIONS[action]
    if request.method == "POST":
        with page_errors(request) as refused:
            operation = node_action(access=request.access, cluster=cluster, node=node, action=action)
        if refused:
            return cluster_page(request, cluster, "nodes", status=refused.status)
        messages.success(
            request, f"{label} of node {operation.params['instance_id']} requested: follow the operation below."
        )
        return redirect(tab_url(cluster, "nodes", operation))
    with page_errors(request) as refused:
        require_hyperpod(cluster)
    if refused:
        return cluster_page(request, cluster, "nodes", status=refused.status)
    found = get_node(cluster, node)
    context = {
        "section": "clusters",
        "cluster": cluster,
        "node": found,
        "action": action,
        "label": label,
        "effect": effect,
        "workloads": workload_names(found),
        "health_class": health_class(found["health"]),
    }
    return render(request, "clusters/node_action.html", context)


@team_required
@require_GET
def node_diagnosis(request, cluster_id, node: str):
    """Read-only: findings, recent events and suggested actions (investigate → reboot → replace)."""
    cluster = get_cluster(request.access, cluster_id)
    report = None
    with page_errors() as failed:
        found = get_node(cluster, node)  # an unknown node is a 404, as over REST
        report = diagnose_node(cluster, found)
    subject = f"node {report['instance_id'] if report else node}"
    return _diagnosis_response(request, cluster, report, failed, subject=subject)


@team_required
@require_GET
def cluster_diagnosis(request, cluster_id):
    """Read-only investigation of the whole cluster: unhealthy nodes, short groups, failure causes."""
    cluster = get_cluster(request.access, cluster_id)
    report = None
    with page_errors() as failed:
        report = diagnose_cluster(cluster)
    return _diagnosis_response(request, cluster, report, failed, subject=f"cluster {cluster.name}")


def _diagnosis_response(request, cluster: Cluster, report: dict | None, failed, *, subject: str):
    context = {
        "cluster": cluster,
        "report": report,
        "error": failed.text,
        "subject": subject,
        "can_act": request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE,
    }
    if wants_partial(request):
        return render(request, "clusters/_diagnosis.html", context, status=failed.status)
    return render(request, "clusters/diagnosis.html", {**context, "section": "clusters"}, status=failed.status)
