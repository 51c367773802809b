"""The cluster page and what each of its tabs shows (overview, groups, nodes, network, storage, operations)."""

from __future__ import annotations

import uuid

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from instantstart.operations.models import Operation
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
    group_operation_of,
    last_operation,
    operations_of,
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
    operation = _focused_operation(request, cluster) or last_operation(cluster)
    access = request.access
    is_admin = access.can(Role.ADMIN)
    active = active_cluster(access)
    context = {
        **tab_context(request, cluster, tab, **group_form),
        **(panel_context(request, operation) if operation else {}),
        "section": "clusters",
        "operation": operation,
        "busy": cluster.status in BUSY,
        "is_active": active is not None and active.pk == cluster.pk,
        "can_manage": is_admin and cluster.status != ClusterStatus.DELETED,
        "zone_form": None,
    }
    if is_admin and cluster.status == ClusterStatus.FAILED:
        context["zone_form"] = _zone_form_context(cluster)
    return context


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
    elif tab == "network":
        context["subnet_rows"] = _network_rows(cluster)
        context["compute_subnets"] = (
            ComputeSubnet.objects.visible_to(request.access).filter(cluster=cluster).order_by("availability_zone")
        )
    elif tab == "storage":
        context["storages"] = Storage.objects.visible_to(request.access).filter(cluster=cluster)
    elif tab == "operations":
        context["operations"] = operations_of(cluster).select_related("requested_by").order_by("-created_at")
    return context


def _focused_operation(request, cluster: Cluster) -> Operation | None:
    """The operation named by ?operation= when it is this cluster's or one of its groups' (else None)."""
    try:
        op_id = uuid.UUID(request.GET.get("operation", ""))
    except ValueError:
        return None
    operation = Operation.objects.visible_to(request.access).filter(pk=op_id).first()
    if operation is None:
        return None
    if operation.target_id == str(cluster.pk) or group_operation_of(cluster, operation):
        return operation
    return None


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
