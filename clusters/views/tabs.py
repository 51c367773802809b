"""The cluster page and what each of its tabs shows (overview, groups, nodes, network, storage, operations)."""

from __future__ import annotations

import uuid

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from instantstart.operations.models import Operation, OperationStatus
from instantstart.portal.errors import page_errors
from instantstart.portal.panels import panel_context
from instantstart.tenancy.roles import Role

from ..addressing import base_subnets
from ..models import (
    CapacityType,
    Cluster,
    ClusterStatus,
    ComputeSubnet,
    DeepHealthCheck,
    InstanceGroupStatus,
    Storage,
)
from ..readers import catalog
from ..readers.nodes import list_nodes, workload_names
from ..selectors import (
    active_cluster,
    cluster_operations,
    last_operation,
    running_group_operations,
)
from ..serializers.queries import NodeQuerySerializer
from .common import catalog_context, form_values, health_class, query_of

TABS = (
    ("overview", "Overview"),
    ("groups", "Instance groups"),
    ("nodes", "Nodes"),
    ("network", "Network"),
    ("storage", "Storage"),
    ("features", "Advanced features"),  # its content comes from the features app (loaded by the tab)
    ("operations", "Operations"),
)
# While the cluster is in one of these, its summary on the cluster page polls itself.
BUSY = (ClusterStatus.CREATING, ClusterStatus.DELETING)
HEALTH_FILTERS = list(NodeQuerySerializer().fields["health"].choices.items())
GROUP_FORM_KEYS = (
    "name",
    "availability_zone",
    "instance_type",
    "count",
    "min_count",
    "capacity_type",
    "training_plan_arn",
    "labels",
    "ebs_volume_gb",
)


# --- the page ------------------------------------------------------------------------------------


def cluster_page(request, cluster: Cluster, tab: str, *, status: int = 200, **group_form) -> HttpResponse:
    """The whole cluster page on ``tab`` (after a refused action, with the refusal's status)."""
    return render(request, "clusters/detail.html", detail_context(request, cluster, tab, **group_form), status=status)


def detail_context(request, cluster: Cluster, tab: str, **group_form) -> dict:
    """Everything the cluster page shows; the focused operation (?operation=) replaces the latest one."""
    focused = _focused_operation(request, cluster)
    operation = focused or last_operation(cluster)
    return {
        **tab_context(request, cluster, tab, **group_form),
        **operation_context(request, cluster, operation, latest=focused is None),
        **status_context(request, cluster),
        "section": "clusters",
    }


def status_context(request, cluster: Cluster) -> dict:
    """What the parts of the page that depend on the cluster's status need (header actions, summary)."""
    active = active_cluster(request.access)
    return {
        "busy": cluster.status in BUSY,
        "is_active": active is not None and active.pk == cluster.pk,
        "can_manage": request.access.can(Role.ADMIN) and cluster.status != ClusterStatus.DELETED,
    }


def operation_context(request, cluster: Cluster, operation: Operation | None, *, latest: bool = True) -> dict:
    """The cluster page's operation slot: the panel (polled through the cluster page, so that its last
    poll also refreshes the status-dependent parts) and what the user can do about a failure."""
    if operation is None:
        return {"operation": None}
    return {
        **panel_context(request, operation),
        "section": "clusters",
        "operation": operation,
        "latest": latest,
        "next_url": reverse("portal:cluster", args=[cluster.pk]),
        "expected": expected_duration(cluster, operation),
        "recovery": recovery_context(request, cluster, operation),
    }


# How long these take on AWS (what users plan by); the sandbox divides it by SANDBOX_SPEEDUP.
TYPICAL_MINUTES = {
    "cluster.create": (25, 40, "the EKS control plane takes ~10 minutes, HyperPod's instances 10–25 more"),
    "cluster.delete": (15, 25, "HyperPod, then EKS, then the network"),
    "instance_group.add": (10, 25, "instances launch and run their lifecycle scripts"),
    "instance_group.scale": (10, 25, "new instances launch and join"),
}


def expected_duration(cluster: Cluster, operation: Operation) -> str:
    """ "Usually 25–40 minutes on AWS" for a long operation still running (and what that is in the sandbox)."""
    from django.conf import settings

    typical = TYPICAL_MINUTES.get(operation.kind)
    if typical is None or operation.is_terminal:
        return ""
    low, high, why = typical
    text = f"Usually {low}–{high} minutes on AWS ({why})."
    if cluster.team.cloud == "sandbox":
        speedup = settings.SANDBOX_SPEEDUP
        text += (
            f" The sandbox runs real durations {speedup:g}× faster (SANDBOX_SPEEDUP), so here about "
            f"{max(low * 60 / speedup, 1):.0f}–{max(high * 60 / speedup, 1):.0f} seconds."
        )
    return text


def recovery_context(request, cluster: Cluster, operation: Operation) -> dict:
    """The ways out of a failed operation, in the portal's words and as forms or links: the zone form
    of a failed create, deleting a group that did not come up, where to change storage. Retry is the
    panel's own button."""
    if operation.status != OperationStatus.FAILED or not request.access.can(Role.ADMIN):
        return {}
    message = (operation.error_message or "").lower()
    capacity = "capacity" in message
    items: list[dict] = []
    why = operation.error_hint if "PATCH" not in operation.error_hint else ""
    if capacity:
        why = (
            "Not enough capacity for this instance type in the zone right now. Move the instance groups to another "
            "zone or use a training plan, then retry; finished phases are not redone."
        )
    if "quota" in message:
        items.append(
            {
                "kind": "quota",
                "label": "Request a quota increase",
                "text": "in the AWS console's Service Quotas (SageMaker, '… for cluster usage'), or free instances "
                "in another cluster; then retry.",
            }
        )
    if operation.kind == "cluster.create" and cluster.status == ClusterStatus.FAILED:
        items.insert(0, {"kind": "zone", "form": _zone_form_context(cluster)})
        items.append(
            {
                "kind": "delete",
                "label": "Delete the cluster",
                "text": "removes what the create made so far.",
                "url": reverse("portal:cluster_delete", args=[cluster.pk]),
                "danger": True,
            }
        )
    elif operation.kind in ("instance_group.add", "instance_group.scale"):
        group = cluster.instance_groups.filter(pk=operation.target_id).first()
        if group is not None:
            if operation.kind == "instance_group.add":
                items.append(
                    {
                        "kind": "group-delete",
                        "label": f"Delete the group {group.name}",
                        "text": "then add it again in another zone or with a training plan.",
                        "url": reverse("portal:cluster_group_delete", args=[cluster.pk, group.name]),
                        "danger": True,
                    }
                )
            else:
                items.append(
                    {
                        "kind": "groups",
                        "label": "Scale to another count",
                        "text": f"the groups tab shows what {group.name} runs now.",
                        "url": reverse("portal:cluster", args=[cluster.pk]) + "?tab=groups",
                    }
                )
    elif operation.kind.startswith("storage."):
        items.append(
            {
                "kind": "storage",
                "label": "Open the storage tab",
                "text": "detach what did not mount, or attach it again.",
                "url": reverse("portal:cluster", args=[cluster.pk]) + "?tab=storage",
            }
        )
    return {"items": items, "why": why} if items or why else {}


def tab_context(request, cluster: Cluster, tab: str, **group_form) -> dict:
    """What one tab shows; ``group_form`` (add_values, add_errors) refills the groups tab's add form."""
    context: dict = {"cluster": cluster, "tab": tab, "tabs": TABS}
    if tab == "groups":
        context.update(groups_tab_context(request, cluster, **group_form))
    elif tab == "nodes":
        context.update(nodes_tab_context(request, cluster))
    elif tab == "overview":
        by_group = (cluster.node_summary or {}).get("by_group") or {}
        context["groups"] = [(group, by_group.get(group.name)) for group in cluster.instance_groups.all()]
        context["connect"] = connect_context(cluster)
    elif tab == "network":
        context["subnet_rows"] = _network_rows(cluster)
        context["compute_subnets"] = (
            ComputeSubnet.objects.visible_to(request.access).filter(cluster=cluster).order_by("availability_zone")
        )
    elif tab == "storage":
        context["storages"] = Storage.objects.visible_to(request.access).filter(cluster=cluster)
        context["can_mutate"] = request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE
        context["storage_values"] = group_form.get("storage_values") or {"kind": "s3"}
        context["errors"] = group_form.get("storage_errors") or {}
    elif tab == "operations":
        context["operations"] = cluster_operations(cluster).select_related("requested_by").order_by("-created_at")
    return context


def _focused_operation(request, cluster: Cluster) -> Operation | None:
    """The operation named by ?operation= when it is this cluster's or one of its groups' (else None)."""
    try:
        op_id = uuid.UUID(request.GET.get("operation", ""))
    except ValueError:
        return None
    return cluster_operations(cluster).filter(pk=op_id).first()


def _zone_form_context(cluster: Cluster) -> dict:
    """The zones a failed cluster may move to (those of its region)."""
    zones: list[dict] = []
    with page_errors() as failed:
        zones = catalog.availability_zones(cluster.team, cluster.region)
    return {"zones": zones, "value": cluster.availability_zone, "error": failed.text}


def _network_rows(cluster: Cluster) -> list[tuple[str, str, str]]:
    """(role, subnet id, CIDR) of the control-plane subnets; the CIDRs come from the one allocator."""
    subnets = (cluster.network or {}).get("subnets") or {}
    cidrs = base_subnets(cluster.network.get("vpc_cidr") or cluster.vpc_cidr) if subnets else {}
    return [(role, subnet_id, cidrs.get(role, "")) for role, subnet_id in sorted(subnets.items())]


# --- the overview's Connect box ----------------------------------------------------------------


def connect_context(cluster: Cluster) -> dict | None:
    """How to use the cluster: kubectl, the kubeconfig, the shared claim in a pod (once it has an endpoint)."""
    if not cluster.eks_endpoint or cluster.status == ClusterStatus.DELETED:
        return None
    claim = next((s for s in cluster.storages.all() if s.name == "shared" and s.claim_name), None)
    return {
        "kubectl": f"kubectl --server {cluster.eks_endpoint} get nodes -o wide",
        "kubeconfig_url": reverse("portal:cluster_kubeconfig", args=[cluster.pk]),
        "kubeconfig_name": f"{cluster.name}.kubeconfig",
        "update_kubeconfig": f"aws eks update-kubeconfig --region {cluster.region} --name {cluster.eks_cluster_name}",
        "claim": claim,
        "pod_yaml": shared_claim_pod(claim) if claim else "",
    }


def shared_claim_pod(claim: Storage) -> str:
    """A pod that mounts the cluster's shared claim at /shared (what a job's pod spec needs)."""
    return (
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        f"  name: shared-check\n  namespace: {claim.namespace}\n"
        "spec:\n"
        "  containers:\n"
        "    - name: main\n"
        "      image: public.ecr.aws/docker/library/busybox:stable\n"
        '      command: ["sh", "-c", "ls /shared && sleep 3600"]\n'
        "      volumeMounts:\n"
        "        - name: shared\n"
        "          mountPath: /shared\n"
        "  volumes:\n"
        "    - name: shared\n"
        "      persistentVolumeClaim:\n"
        f"        claimName: {claim.claim_name}\n"
    )


# --- the instance groups tab --------------------------------------------------------------------


def groups_table_context(request, cluster: Cluster) -> dict:
    """The groups table: each group with the operation running on it; it polls while any settles."""
    groups = list(cluster.instance_groups.all())
    by_target = running_group_operations(cluster, groups)
    # A failed create leaves its groups "Creating": only a live cluster's groups are worth polling.
    live = cluster.status in (ClusterStatus.CREATING, ClusterStatus.ACTIVE)
    settling = InstanceGroupStatus.settling()
    return {
        "cluster": cluster,
        "rows": [{"group": group, "operation": by_target.get(str(group.pk))} for group in groups],
        "groups_busy": bool(by_target) or (live and any(group.status in settling for group in groups)),
        "can_mutate": request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE,
    }


def group_form_values(source, cluster: Cluster) -> dict:
    """What the add form holds (posted or queried), with the defaults of an empty form."""
    values = form_values(source, GROUP_FORM_KEYS)
    values["region"] = cluster.region  # fixed: the catalog is read in the cluster's region
    values["availability_zone"] = values["availability_zone"] or cluster.availability_zone
    return values


def group_form_urls(cluster: Cluster) -> dict:
    return {
        "types_url": reverse("portal:cluster_group_form_part", args=[cluster.pk, "types"]),
        "capacity_url": reverse("portal:cluster_group_form_part", args=[cluster.pk, "capacity"]),
    }


def groups_tab_context(request, cluster: Cluster, add_values: dict | None = None, add_errors: dict | None = None):
    """The groups tab: the table, and for admins of an active cluster the add form (catalog choices only)."""
    context = groups_table_context(request, cluster)
    context["add_form"] = context["can_mutate"]
    if context["can_mutate"]:
        values = add_values or {
            **group_form_values({}, cluster),
            "count": "1",
            "min_count": "0",
            "ebs_volume_gb": "500",
        }
        context.update(
            {
                **catalog_context(cluster.team, values),
                **group_form_urls(cluster),
                "errors": add_errors or {},
                "capacity_types": CapacityType.choices,
                "health_checks": DeepHealthCheck.choices,
            }
        )
    return context


# --- the nodes tab ------------------------------------------------------------------------------


def nodes_tab_context(request, cluster: Cluster) -> dict:
    """The nodes as HyperPod and Kubernetes see them, filtered by health with the REST filter."""
    query, errors = query_of(
        NodeQuerySerializer, {"health": request.GET["health"]} if request.GET.get("health") else {}
    )
    context: dict = {"nodes": [], "nodes_error": "", "health_filters": HEALTH_FILTERS, "health": ""}
    context["can_act"] = request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE
    if errors:
        context["nodes_error"] = " ".join(str(m) for msgs in errors.values() for m in msgs)
        return context
    context["health"] = query.get("health", "")
    with page_errors() as failed:
        nodes = list_nodes(cluster, context["health"] or None)
    if failed:
        context["nodes_error"] = failed.text
        return context
    for node in nodes:
        node["health_class"] = health_class(node["health"])
        node["workloads"] = len(workload_names(node))
    context["nodes"] = nodes
    return context
