"""Portal pages of clusters: the list, the create form (catalog cascade, preflight), the cluster page,
zone change, delete and activate — over the serializers, services and readers REST uses."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.portal.panels import kind_or_none
from instantstart.portal.partials import wants_partial
from instantstart.tenancy.roles import Role

from ..models import CapacityType, Cluster, DeepHealthCheck, StorageChoice
from ..readers.preflight import preflight_new_cluster
from ..selectors import active_cluster, cluster_operations, get_cluster, last_operation, last_operations
from ..serializers import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSIONS,
    ClusterCreateSerializer,
    ClusterZoneChangeSerializer,
)
from ..serializers.queries import ClusterDeleteQuerySerializer
from ..services import change_zone, create_cluster, delete_cluster, set_active_cluster
from .common import catalog_context, form_values, query_of, region_choices
from .tabs import BUSY, TABS, cluster_page, detail_context, operation_context, status_context, tab_context

# The fields of the create form. One instance group is enough here; REST takes several.
CLUSTER_FIELDS = ("name", "region", "availability_zone", "kubernetes_version", "storage")
GROUP_FIELDS = ("group_name", "instance_type", "count", "capacity_type", "training_plan_arn")
DEFAULT_GROUP_NAME = "workers"
FORM_PARTS = {
    "regions": "clusters/_region_block.html",
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


# --- the list and the active cluster ------------------------------------------------------------


def _safe_next(request, url: str | None) -> str | None:
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        return url
    return None


@team_required
def cluster_list(request):
    access = request.access
    clusters = list(Cluster.objects.visible_to(access).prefetch_related("instance_groups"))
    latest = last_operations(access, clusters)
    for operation in latest.values():
        kind = kind_or_none(operation.kind)
        operation.kind_title = (kind.title if kind else "") or operation.kind
    active = active_cluster(access)
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
    cluster = set_active_cluster(access=request.access, cluster=get_cluster(request.access, cluster_id))
    messages.success(request, f"{cluster.name} is now your active cluster: jobs and endpoints default to it.")
    return redirect(_safe_next(request, request.POST.get("next")) or reverse("portal:cluster", args=[cluster.pk]))


# --- the create form ----------------------------------------------------------------------------


def _form_values(source, team) -> dict:
    """What the form holds: posted or queried values, with the defaults of an empty form."""
    values = form_values(source, (*CLUSTER_FIELDS, *GROUP_FIELDS))
    values["region"] = values["region"] or team.default_region
    values["kubernetes_version"] = values["kubernetes_version"] or DEFAULT_KUBERNETES_VERSION
    values["storage"] = values["storage"] or StorageChoice.S3
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


def _form_context(request, values: dict, errors: dict | None = None) -> dict:
    return {
        "section": "clusters",
        **catalog_context(request.access.team, values),
        "errors": errors or {},
        # The regions' offerings are read once per team and cached: the page does not wait for them,
        # a cold cache is filled by the region block's own request once the page has loaded.
        **region_choices(request.access.team, read=False),
        "kubernetes_versions": KUBERNETES_VERSIONS,
        "storages": StorageChoice.choices,
        "capacity_types": CapacityType.choices,
        "health_checks": DeepHealthCheck.choices,
    }


def _validate(request, values: dict) -> tuple[ClusterCreateSerializer | None, dict]:
    """The serializer of the form's request and its errors keyed by input; a cloud error is a form error."""
    serializer = ClusterCreateSerializer(data=_request_body(values), context={"access": request.access})
    valid = False
    with page_errors() as failed:  # the zone and type checks read the cloud
        valid = serializer.is_valid()
    if failed:
        return None, {"non_field_errors": [failed.text]}
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
    if part == "regions":
        context = {"values": values, "errors": {}, **region_choices(request.access.team)}
        return render(request, FORM_PARTS[part], context)
    context = catalog_context(
        request.access.team,
        values,
        zones=part == "zones",
        types=part in ("zones", "types"),
        plans=part in ("zones", "capacity"),
    )
    context.update(capacity_types=CapacityType.choices, errors={})
    return render(request, FORM_PARTS[part], context)


@team_required(role=Role.ADMIN)
@require_POST
def cluster_preflight(request):
    """Run the preflight checks on what the form holds; creates nothing."""
    values = _form_values(request.POST, request.access.team)
    serializer, errors = _validate(request, values)
    checks = None
    if serializer is not None:
        with page_errors() as failed:
            checks = preflight_new_cluster(request.access.team, serializer.validated_data)
        if failed:
            errors = {"non_field_errors": [failed.text]}
    context: dict = {"errors": [(FIELD_LABELS.get(key, key), texts) for key, texts in errors.items()]}
    if checks is not None:
        context.update(checks=checks, ok=all(check.ok for check in checks))
    return render(request, "clusters/_preflight.html", context)


# --- the cluster page ---------------------------------------------------------------------------


@team_required
def cluster_detail(request, cluster_id):
    """The cluster page: live summary, the latest operation's panel, and tabs. Htmx asks for pieces."""
    cluster = get_cluster(request.access, cluster_id, with_history=True)
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
        return render(request, "clusters/_tab.html", tab_context(request, cluster, tab))
    if wants_partial(request) and part == "operation":
        return _operation_part(request, cluster)
    return render(request, "clusters/detail.html", detail_context(request, cluster, tab))


def _operation_part(request, cluster: Cluster) -> HttpResponse:
    """The operation slot, polled while its operation runs. The last poll (the operation ended) also
    swaps the parts that depend on the cluster's status (header actions, summary, stale messages) and
    tells the open tab to reload: nothing on the page still says "creating" after Active."""
    operation = _focused_or_latest(request, cluster)
    context = {
        "cluster": cluster,
        **operation_context(request, cluster, operation, latest=request.GET.get("latest") == "1"),
        **status_context(request, cluster),
    }
    context["settled"] = operation is None or operation.is_terminal
    response = render(request, "clusters/_operation_part.html", context)
    if context["settled"]:
        response["HX-Trigger"] = "cluster-settled"
    return response


def _focused_or_latest(request, cluster: Cluster):
    try:
        focused = cluster_operations(cluster).filter(pk=uuid.UUID(request.GET.get("operation", ""))).first()
    except ValueError:
        focused = None
    return focused or last_operation(cluster)


@team_required(role=Role.ADMIN)
@require_POST
def cluster_change_zone(request, cluster_id):
    """Move a failed cluster's instance groups to another zone; the user then retries the operation."""
    cluster = get_cluster(request.access, cluster_id)
    serializer = ClusterZoneChangeSerializer(
        data={"availability_zone": request.POST.get("availability_zone", "")}, context={"cluster": cluster}
    )
    valid = False
    with page_errors() as failed:  # the zone check reads the cloud
        valid = serializer.is_valid()
    errors = {"availability_zone": [failed.text]} if failed else ({} if valid else dict(serializer.errors))
    if errors:
        messages.error(request, "Zone not changed: " + " ".join(str(e) for v in errors.values() for e in v))
        return cluster_page(request, cluster, "overview", status=failed.status if failed else 400)
    zone = serializer.validated_data["availability_zone"]
    with page_errors(request) as refused:
        changed = change_zone(access=request.access, cluster=cluster, zone=zone)
    if refused:
        return cluster_page(request, cluster, "overview", status=refused.status)
    if not changed:
        messages.info(request, f"The cluster already is in {zone}: nothing changed.")
    else:
        messages.success(
            request, f"Instance groups moved to {zone}. Retry the operation: it resumes at the failed phase."
        )
    return redirect("portal:cluster", cluster_id=cluster.pk)


@team_required(role=Role.ADMIN)
def cluster_delete(request, cluster_id):
    """Delete with the cluster's name typed as confirmation; a wrong name changes nothing."""
    cluster = get_cluster(request.access, cluster_id)
    context = {"section": "clusters", "cluster": cluster, "errors": {}, "values": {"force": False}}
    if request.method != "POST":
        return render(request, "clusters/delete.html", context)
    typed = request.POST.get("confirm_name", "").strip()
    query, query_errors = query_of(ClusterDeleteQuerySerializer, request.POST)
    context["values"] = {"confirm_name": typed, "force": query.get("force", False)}
    if typed != cluster.name:
        query_errors["confirm_name"] = [f"Type the cluster's name, {cluster.name}, exactly to confirm."]
    if query_errors:
        context["errors"] = query_errors
        return render(request, "clusters/delete.html", context, status=400)
    with page_errors(request) as refused:
        operation = delete_cluster(access=request.access, cluster=cluster, force=query["force"])
    if refused:
        return render(request, "clusters/delete.html", context, status=refused.status)
    if operation is None:
        messages.success(request, f"InstantStart no longer manages {cluster.name}; nothing in its account changed.")
        return redirect("portal:clusters")
    messages.success(request, f"Deleting cluster {cluster.name}: everything it owns is removed in reverse order.")
    return redirect("portal:cluster", cluster_id=cluster.pk)
