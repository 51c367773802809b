"""Portal pages of clusters: thin views over the same serializers, services and catalog as REST."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.contenttypes.models import ContentType
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from instantstart.cloud.aws import team_cloud
from instantstart.cloud.errors import classify
from instantstart.operations.models import Operation
from instantstart.portal.guards import team_required
from instantstart.portal.partials import wants_partial
from instantstart.portal.views import _kind_or_none, _panel_context, region_choices
from instantstart.tenancy.roles import Role

from . import catalog
from .models import CapacityType, Cluster, ClusterStatus, DeepHealthCheck, InstanceGroup, StorageChoice
from .network import base_subnets
from .preflight import run_preflight
from .selectors import active_cluster, last_operation, operations_of
from .serializers import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSIONS,
    ClusterCreateSerializer,
    ClusterZoneChangeSerializer,
)
from .services import ClusterStateError, change_zone, create_cluster, delete_cluster, set_active_cluster
from .steps.eks import eks_name

TABS = (
    ("overview", "Overview"),
    ("groups", "Instance groups"),
    ("nodes", "Nodes"),
    ("network", "Network"),
    ("storage", "Storage"),
    ("operations", "Operations"),
)
# While the cluster is in one of these, its summary on the cluster page polls itself.
BUSY = (ClusterStatus.CREATING, ClusterStatus.DELETING)
# The fields of the create form. One instance group is enough here; REST takes several.
CLUSTER_FIELDS = ("name", "region", "availability_zone", "kubernetes_version", "storage")
GROUP_FIELDS = ("group_name", "instance_type", "count", "capacity_type", "training_plan_arn")
DEFAULT_GROUP_NAME = "workers"
FORM_PARTS = {
    "zones": "clusters/_zone_block.html",
    "types": "clusters/_type_block.html",
    "capacity": "clusters/_capacity_block.html",
}
FIELD_LABELS = {
    "name": "Name",
    "region": "Region",
    "availability_zone": "Availability zone",
    "kubernetes_version": "Kubernetes version",
    "storage": "Storage",
    "group_name": "Instance group name",
    "instance_type": "Instance type",
    "count": "Count",
    "capacity_type": "Capacity type",
    "training_plan_arn": "Training plan",
    "efa_only": "EFA-only",
    "deep_health_checks": "Deep health checks",
    "non_field_errors": "Request",
}


# --- reads of the team's clusters ---------------------------------------------------------------


def _cluster_for(request, cluster_id, *, include_deleted: bool = False) -> Cluster:
    """The cluster when it belongs to the current team; another team's is a 404."""
    queryset = Cluster.objects.filter(team=request.access.team)
    if not include_deleted:
        queryset = queryset.exclude(status=ClusterStatus.DELETED)
    return get_object_or_404(queryset, pk=cluster_id)


def _last_operations(team, clusters) -> dict[str, Operation]:
    """The latest operation of each cluster, in one query (the list shows one per row)."""
    ids = [str(cluster.pk) for cluster in clusters]
    latest: dict[str, Operation] = {}
    operations = Operation.objects.filter(
        team=team, target_type=ContentType.objects.get_for_model(Cluster), target_id__in=ids
    ).order_by("-created_at")
    for operation in operations.only("id", "kind", "status", "target_id", "created_at"):
        latest.setdefault(operation.target_id, operation)
    for operation in latest.values():
        kind = _kind_or_none(operation.kind)
        operation.kind_title = (kind.title if kind else "") or operation.kind
    return latest


def _safe_next(request, url: str | None) -> str | None:
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        return url
    return None


@team_required
def cluster_list(request):
    team = request.access.team
    clusters = list(Cluster.objects.visible_to(request.access).prefetch_related("instance_groups"))
    latest = _last_operations(team, clusters)
    active = active_cluster(request.user, team)
    active_id = active.pk if active is not None else None
    rows = [(cluster, latest.get(str(cluster.pk)), cluster.pk == active_id) for cluster in clusters]
    return render(request, "clusters/list.html", {"section": "clusters", "rows": rows})


@team_required
@require_POST
def cluster_activate(request):
    """Make one of the team's clusters the user's active one (the list, the page and the header post here)."""
    try:
        cluster_id = uuid.UUID(request.POST.get("cluster", ""))
    except ValueError:
        raise Http404("No such cluster.") from None
    cluster = _cluster_for(request, cluster_id)
    set_active_cluster(access=request.access, cluster=cluster)
    messages.success(request, f"{cluster.name} is now your active cluster: jobs and endpoints default to it.")
    return redirect(_safe_next(request, request.POST.get("next")) or reverse("portal:cluster", args=[cluster.pk]))


# --- the create form ----------------------------------------------------------------------------


def _form_values(source, team) -> dict:
    """What the form holds: posted or queried values, with the defaults of an empty form."""
    values = {key: source.get(key, "").strip() for key in (*CLUSTER_FIELDS, *GROUP_FIELDS)}
    values["region"] = values["region"] or team.default_region
    values["kubernetes_version"] = values["kubernetes_version"] or DEFAULT_KUBERNETES_VERSION
    values["storage"] = values["storage"] or StorageChoice.S3
    values["capacity_type"] = values["capacity_type"] or CapacityType.ON_DEMAND
    values["efa_only"] = source.get("efa_only", "") in ("on", "true", "1")
    values["deep_health_checks"] = source.getlist("deep_health_checks") if hasattr(source, "getlist") else []
    return values


def _request_body(values: dict) -> dict:
    """The REST body of a create request, built from the form's fields (one instance group)."""
    group = {
        "name": values["group_name"],
        "instance_type": values["instance_type"],
        "count": values["count"],
        "capacity_type": values["capacity_type"],
        "efa_only": values["efa_only"],
        "deep_health_checks": values["deep_health_checks"],
    }
    # The plan select belongs to training-plan capacity; a stale choice does not travel with another type.
    if values["capacity_type"] == CapacityType.TRAINING_PLAN:
        group["training_plan_arn"] = values["training_plan_arn"]
    body = {key: values[key] for key in CLUSTER_FIELDS}
    body["instance_groups"] = [group]
    return body


def _form_errors(errors: dict) -> dict:
    """Serializer errors keyed by the form's input names (the group's nested errors flattened)."""
    flat = {key: list(value) for key, value in errors.items() if key != "instance_groups"}
    groups = errors.get("instance_groups")
    first: dict = {}
    if isinstance(groups, dict):
        first = groups.get("0") or groups.get(0) or {}
        flat.setdefault("non_field_errors", []).extend(groups.get("non_field_errors", []))
    elif isinstance(groups, list):
        if groups and isinstance(groups[0], dict):
            first = groups[0]
        else:
            flat.setdefault("non_field_errors", []).extend(groups)
    for key, value in first.items():
        target = {"name": "group_name", "non_field_errors": "non_field_errors"}.get(key, key)
        flat.setdefault(target, []).extend(value if isinstance(value, list) else [value])
    return {key: value for key, value in flat.items() if value}


def _cloud_error(exc: Exception) -> str:
    """A cloud error as a sentence for the page; anything else is a bug and propagates."""
    classified = classify(exc)
    if classified is None:
        raise exc
    return f"Could not read the team's cloud ({classified.code}): {classified.message}"


def _catalog_context(request, values: dict, *, zones: bool = True, types: bool = True, plans: bool = True) -> dict:
    """Only the choices the team's cloud offers: zones of the region, accelerator types of the zone,
    the region's training plans. Adjusts the chosen zone when the region no longer has it."""
    context = {"values": values, "catalog_error": "", "zones": [], "types": [], "plans": [], "selected_type": None}
    region = values["region"]
    if region not in region_choices():
        context["catalog_error"] = f"{region!r} is not a region where SageMaker HyperPod is offered."
        return context
    try:
        cloud = team_cloud(request.access.team, region)
        if zones:
            context["zones"] = catalog.availability_zones(cloud, region)
            names = [zone["name"] for zone in context["zones"]]
            if values["availability_zone"] not in names:
                values["availability_zone"] = names[0] if names else ""
        if types and values["availability_zone"]:
            context["types"] = catalog.instance_types(cloud, region, values["availability_zone"])
            context["selected_type"] = next(
                (info for info in context["types"] if info.instance_type == values["instance_type"]), None
            )
        if plans and values["capacity_type"] == CapacityType.TRAINING_PLAN:
            context["plans"] = catalog.training_plans(cloud, region)
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        context["catalog_error"] = _cloud_error(exc)
    return context


def _form_context(request, values: dict, errors: dict | None = None) -> dict:
    return {
        "section": "clusters",
        **_catalog_context(request, values),
        "errors": errors or {},
        "regions": region_choices(),
        "kubernetes_versions": KUBERNETES_VERSIONS,
        "storages": StorageChoice.choices,
        "capacity_types": CapacityType.choices,
        "health_checks": DeepHealthCheck.choices,
    }


def _validate(request, values: dict) -> tuple[ClusterCreateSerializer | None, dict]:
    """The serializer of the form's request and its errors keyed by input; a cloud error is a form error."""
    serializer = ClusterCreateSerializer(data=_request_body(values), context={"access": request.access})
    try:
        valid = serializer.is_valid()
    except Exception as exc:  # noqa: BLE001 - the zone and type checks read the cloud
        return None, {"non_field_errors": [_cloud_error(exc)]}
    return (serializer, {}) if valid else (None, _form_errors(serializer.errors))


@team_required(role=Role.ADMIN)
def cluster_new(request):
    """The create form (admins). A valid post starts `cluster.create` and opens the cluster's page."""
    team = request.access.team
    if request.method != "POST":
        values = _form_values(request.GET, team)
        values["group_name"] = values["group_name"] or DEFAULT_GROUP_NAME
        values["count"] = values["count"] or "1"
        return render(request, "clusters/new.html", _form_context(request, values))
    values = _form_values(request.POST, team)
    serializer, errors = _validate(request, values)
    if serializer is None:
        messages.error(request, "Cluster not created: correct the fields marked below.")
        return render(request, "clusters/new.html", _form_context(request, values, errors), status=400)
    cluster, _, _ = create_cluster(access=request.access, data=serializer.validated_data)
    messages.success(request, f"Creating cluster {cluster.name}: the phases below run one after another.")
    return redirect("portal:cluster", cluster_id=cluster.pk)


@team_required(role=Role.ADMIN)
def cluster_form_part(request, part: str):
    """A piece of the create form re-rendered for a new region, zone, instance type or capacity type."""
    if part not in FORM_PARTS:
        raise Http404("No such part of the form.")
    values = _form_values(request.GET, request.access.team)
    context = _catalog_context(
        request, values, zones=part == "zones", types=part in ("zones", "types"), plans=part in ("zones", "capacity")
    )
    context.update(capacity_types=CapacityType.choices, errors={})
    return render(request, FORM_PARTS[part], context)


@team_required(role=Role.ADMIN)
@require_POST
def cluster_preflight(request):
    """Run the preflight checks on what the form holds; creates nothing."""
    values = _form_values(request.POST, request.access.team)
    serializer, errors = _validate(request, values)
    context: dict = {"errors": [(FIELD_LABELS.get(key, key), messages_) for key, messages_ in errors.items()]}
    if serializer is not None:
        probe = Cluster(team=request.access.team, name=serializer.validated_data["name"])
        checks = run_preflight(request.access.team, serializer.validated_data, eks_name=eks_name(probe))
        context.update(checks=checks, ok=all(check.ok for check in checks))
    return render(request, "clusters/_preflight.html", context)


# --- the cluster page ---------------------------------------------------------------------------


def _network_rows(cluster: Cluster) -> list[tuple[str, str, str]]:
    """(role, subnet id, CIDR) of the control-plane subnets; the CIDRs come from the one allocator."""
    subnets = (cluster.network or {}).get("subnets") or {}
    cidrs = base_subnets(cluster.network.get("vpc_cidr") or cluster.vpc_cidr) if subnets else {}
    return [(role, subnet_id, cidrs.get(role, "")) for role, subnet_id in sorted(subnets.items())]


def _tab_context(request, cluster: Cluster, tab: str, **group_form) -> dict:
    """What one tab shows; ``group_form`` (values, errors) refills the groups tab's add form after a bad post."""
    context: dict = {"cluster": cluster, "tab": tab, "tabs": TABS}
    if tab in ("groups", "nodes"):
        # group_views builds on this module's helpers; importing it here keeps the import one-way.
        from .group_views import groups_tab_context, nodes_tab_context

        if tab == "groups":
            context.update(groups_tab_context(request, cluster, **group_form))
        else:
            context.update(nodes_tab_context(request, cluster))
    elif tab == "overview":
        groups = list(cluster.instance_groups.all())
        by_group = (cluster.node_summary or {}).get("by_group") or {}
        context["groups"] = [(group, by_group.get(group.name)) for group in groups]
    elif tab == "network":
        context["subnet_rows"] = _network_rows(cluster)
        context["compute_subnets"] = cluster.compute_subnets.order_by("availability_zone")
    elif tab == "storage":
        context["storages"] = cluster.storages.all()
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
    if operation.target_id == str(cluster.pk):
        return operation
    if operation.target_type == ContentType.objects.get_for_model(InstanceGroup):
        return operation if cluster.instance_groups.filter(pk=operation.target_id).exists() else None
    return None


def detail_context(request, cluster: Cluster, tab: str, **group_form) -> dict:
    """Everything the cluster page shows; the focused operation (?operation=) replaces the latest one."""
    operation = _focused_operation(request, cluster) or last_operation(cluster)
    access = request.access
    is_admin = access.can(Role.ADMIN)
    active = active_cluster(request.user, access.team)
    context = {
        **_tab_context(request, cluster, tab, **group_form),
        **(_panel_context(request, operation) if operation else {}),
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


@team_required
def cluster_detail(request, cluster_id):
    """The cluster page: live summary, the latest operation's panel, and tabs. Htmx asks for pieces."""
    cluster = _cluster_for(request, cluster_id, include_deleted=True)
    tab = request.GET.get("tab", "overview")
    tab = tab if tab in dict(TABS) else "overview"
    part = request.GET.get("part")
    if wants_partial(request) and part == "summary":
        response = render(request, "clusters/_summary.html", {"cluster": cluster, "busy": cluster.status in BUSY})
        if cluster.status not in BUSY:
            # The last poll: the open tab reloads once to show what the operation recorded.
            response["HX-Trigger"] = "cluster-settled"
        return response
    if wants_partial(request) and part == "tab":
        return render(request, "clusters/_tab.html", _tab_context(request, cluster, tab))
    return render(request, "clusters/detail.html", detail_context(request, cluster, tab))


def _zone_form_context(cluster: Cluster) -> dict:
    """The zones a failed cluster may move to (those of its region)."""
    zones, error = [], ""
    try:
        zones = catalog.availability_zones(team_cloud(cluster.team, cluster.region), cluster.region)
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        error = _cloud_error(exc)
    return {"zones": zones, "value": cluster.availability_zone, "error": error}


@team_required(role=Role.ADMIN)
@require_POST
def cluster_change_zone(request, cluster_id):
    """Move a failed cluster's instance groups to another zone; the user then retries the operation."""
    cluster = _cluster_for(request, cluster_id)
    serializer = ClusterZoneChangeSerializer(
        data={"availability_zone": request.POST.get("availability_zone", "")}, context={"cluster": cluster}
    )
    try:
        errors = {} if serializer.is_valid() else dict(serializer.errors)
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        errors = {"availability_zone": [_cloud_error(exc)]}
    zone = serializer.validated_data.get("availability_zone", "") if not errors else ""
    if errors:
        messages.error(request, "Zone not changed: " + " ".join(str(e) for v in errors.values() for e in v))
        return redirect("portal:cluster", cluster_id=cluster.pk)
    if zone == cluster.availability_zone:
        messages.info(request, f"The cluster already is in {zone}: nothing changed.")
        return redirect("portal:cluster", cluster_id=cluster.pk)
    try:
        change_zone(access=request.access, cluster=cluster, zone=zone)
    except ClusterStateError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Instance groups moved to {zone}. Retry the operation: it resumes at the failed phase."
        )
    return redirect("portal:cluster", cluster_id=cluster.pk)


@team_required(role=Role.ADMIN)
def cluster_delete(request, cluster_id):
    """Delete with the cluster's name typed as confirmation; a wrong name changes nothing."""
    cluster = _cluster_for(request, cluster_id)
    context = {"section": "clusters", "cluster": cluster, "errors": {}, "values": {"force": False}}
    if request.method != "POST":
        return render(request, "clusters/delete.html", context)
    typed = request.POST.get("confirm_name", "").strip()
    force = request.POST.get("force", "") in ("on", "true", "1")
    context["values"] = {"confirm_name": typed, "force": force}
    if typed != cluster.name:
        context["errors"] = {"confirm_name": [f"Type the cluster's name, {cluster.name}, exactly to confirm."]}
        return render(request, "clusters/delete.html", context, status=400)
    try:
        delete_cluster(access=request.access, cluster=cluster, force=force)
    except ClusterStateError as exc:
        messages.error(request, str(exc))
        return redirect("portal:cluster", cluster_id=cluster.pk)
    messages.success(request, f"Deleting cluster {cluster.name}: everything it owns is removed in reverse order.")
    return redirect("portal:cluster", cluster_id=cluster.pk)
