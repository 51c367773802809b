"""Portal tabs of a cluster's instance groups and nodes: thin views over the serializers, services and
node reads that REST (group_api) uses. Diagnosis only reads; remediation asks for confirmation first."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.contenttypes.models import ContentType
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from instantstart.operations.models import ACTIVE, Operation
from instantstart.portal.guards import team_required
from instantstart.portal.partials import wants_partial
from instantstart.portal.views import _panel_context
from instantstart.tenancy.roles import Role

from .group_api import NodeQuerySerializer
from .group_serializers import InstanceGroupAddSerializer, InstanceGroupUpdateSerializer
from .models import CapacityType, Cluster, ClusterStatus, DeepHealthCheck, InstanceGroup
from .nodes import (
    SYSTEM_NAMESPACES,
    actual_count,
    diagnose_cluster,
    diagnose_node,
    find_node,
    list_nodes,
    workloads_on,
)
from .services import ClusterStateError, add_instance_group, delete_instance_group, node_action, scale_instance_group
from .views import _catalog_context, _cloud_error, _cluster_for, detail_context

NODE_ACTIONS = {
    "reboot": ("Reboot", "HyperPod reboots the instance; the operation ends when the node is back and schedulable."),
    "replace": ("Replace", "HyperPod swaps the instance for a new one; what runs on it is evicted."),
    "delete": ("Delete", "HyperPod removes the instance; the group's count goes down by one."),
}
GROUP_FORM_PARTS = {"types": "clusters/_type_block.html", "capacity": "clusters/_capacity_block.html"}
# Group states that settle on their own: the table polls itself while a group is in one.
SETTLING = {"Creating", "Updating", "Deleting", "SystemUpdating", "Scaling"}
HEALTH_FILTERS = list(NodeQuerySerializer().fields["health"].choices.items())


def _group_for(cluster: Cluster, name: str) -> InstanceGroup:
    return get_object_or_404(cluster.instance_groups.exclude(status="Deleted"), name=name)


def _not_ready(cluster: Cluster) -> str:
    """Why groups and nodes cannot change yet ("" once they can) — REST's require_hyperpod 409, as a sentence."""
    if cluster.status != ClusterStatus.ACTIVE or not cluster.hyperpod_cluster_name:
        return f"The cluster is {cluster.status}: instance groups and nodes change only once it is active."
    return ""


def _tab_url(cluster: Cluster, tab: str, operation: Operation | None = None) -> str:
    url = reverse("portal:cluster", args=[cluster.pk]) + f"?tab={tab}"
    return url + (f"&operation={operation.pk}" if operation is not None else "")


# --- reads shared with REST (candidates for clusters.selectors) ---------------------------------


# --- the instance groups tab --------------------------------------------------------------------


def _group_rows(cluster: Cluster) -> tuple[list[dict], bool]:
    """Each group with the operation running on it; True while any of them settles."""
    groups = list(cluster.instance_groups.exclude(status="Deleted"))
    running = Operation.objects.filter(
        team=cluster.team,
        target_type=ContentType.objects.get_for_model(InstanceGroup),
        target_id__in=[str(group.pk) for group in groups],
        status__in=ACTIVE,
    ).order_by("created_at")
    by_target = {operation.target_id: operation for operation in running}
    rows = [{"group": group, "operation": by_target.get(str(group.pk))} for group in groups]
    # A failed create leaves its groups "Creating": only a live cluster's groups are worth polling.
    live = cluster.status in (ClusterStatus.CREATING, ClusterStatus.ACTIVE)
    busy = bool(by_target) or (live and any(g.status in SETTLING for g in groups))
    return rows, busy


def _table_context(request, cluster: Cluster) -> dict:
    rows, busy = _group_rows(cluster)
    return {
        "cluster": cluster,
        "rows": rows,
        "groups_busy": busy,
        "can_mutate": request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE,
    }


def _add_values(source, cluster: Cluster) -> dict:
    """What the add form holds (posted or queried), with the defaults of an empty form."""
    keys = (
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
    values = {key: source.get(key, "").strip() for key in keys}
    values["region"] = cluster.region  # fixed: the catalog is read in the cluster's region
    values["availability_zone"] = values["availability_zone"] or cluster.availability_zone
    values["capacity_type"] = values["capacity_type"] or CapacityType.ON_DEMAND
    values["efa_only"] = source.get("efa_only", "") in ("on", "true", "1")
    values["deep_health_checks"] = source.getlist("deep_health_checks") if hasattr(source, "getlist") else []
    return values


def _form_urls(cluster: Cluster) -> dict:
    return {
        "types_url": reverse("portal:cluster_group_form_part", args=[cluster.pk, "types"]),
        "capacity_url": reverse("portal:cluster_group_form_part", args=[cluster.pk, "capacity"]),
    }


def _add_form_context(request, cluster: Cluster, values: dict, errors: dict | None = None) -> dict:
    return {
        **_catalog_context(request, values),
        **_form_urls(cluster),
        "errors": errors or {},
        "capacity_types": CapacityType.choices,
        "health_checks": DeepHealthCheck.choices,
    }


def groups_tab_context(request, cluster: Cluster, add_values: dict | None = None, add_errors: dict | None = None):
    """The groups tab: the table, and for admins of an active cluster the add form (catalog choices only)."""
    context = _table_context(request, cluster)
    context["add_form"] = context["can_mutate"]
    if context["can_mutate"]:
        values = add_values or {**_add_values({}, cluster), "count": "1", "min_count": "0", "ebs_volume_gb": "500"}
        context.update(_add_form_context(request, cluster, values, add_errors))
    return context


@team_required
@require_GET
def group_table(request, cluster_id):
    """The groups table alone: it polls itself while an operation on a group runs."""
    cluster = _cluster_for(request, cluster_id)
    return render(request, "clusters/_groups_table.html", _table_context(request, cluster))


@team_required(role=Role.ADMIN)
@require_GET
def group_form_part(request, cluster_id, part: str):
    """A piece of the add form re-rendered for a new zone, instance type or capacity type."""
    cluster = _cluster_for(request, cluster_id)
    if part not in GROUP_FORM_PARTS:
        raise Http404("No such part of the form.")
    values = _add_values(request.GET, cluster)
    context = _catalog_context(request, values, zones=False, types=part == "types", plans=part == "capacity")
    context.update(_form_urls(cluster), capacity_types=CapacityType.choices, errors={})
    return render(request, GROUP_FORM_PARTS[part], context)


def _parse_labels(text: str) -> tuple[dict, list[str]]:
    """key=value lines as a dict; the lines that are not key=value as errors."""
    labels, errors = {}, []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            errors.append(f"Line {number}: write key=value.")
            continue
        labels[key.strip()] = value.strip()
    return labels, errors


def _add_body(values: dict) -> tuple[dict, dict]:
    """The REST body of an add request built from the form, and the errors of fields the form parses."""
    labels, label_errors = _parse_labels(values["labels"])
    body = {
        "name": values["name"],
        "instance_type": values["instance_type"],
        "count": values["count"],
        "capacity_type": values["capacity_type"],
        "efa_only": values["efa_only"],
        "deep_health_checks": values["deep_health_checks"],
        "availability_zone": values["availability_zone"],
        "labels": labels,
    }
    for key in ("min_count", "ebs_volume_gb"):
        if values[key]:
            body[key] = values[key]
    if values["capacity_type"] == CapacityType.TRAINING_PLAN:
        body["training_plan_arn"] = values["training_plan_arn"]
    return body, ({"labels": label_errors} if label_errors else {})


def _flat_errors(errors: dict) -> dict:
    """Serializer errors as lists of sentences per input (a label's errors name the label)."""
    flat: dict[str, list[str]] = {}
    for key, value in errors.items():
        if isinstance(value, dict):
            flat[key] = [f"{inner}: {' '.join(map(str, msgs))}" for inner, msgs in value.items()]
        else:
            flat[key] = [str(message) for message in value]
    return flat


@team_required(role=Role.ADMIN)
@require_POST
def group_add(request, cluster_id):
    """Add an instance group (InstanceGroupAddSerializer, add_instance_group); errors sit at their fields."""
    cluster = _cluster_for(request, cluster_id)
    values = _add_values(request.POST, cluster)
    body, errors = _add_body(values)
    serializer = InstanceGroupAddSerializer(data=body, context={"cluster": cluster})
    valid = False
    try:
        valid = serializer.is_valid()
    except Exception as exc:  # noqa: BLE001 - the checks read the cloud; _cloud_error re-raises the rest
        errors["non_field_errors"] = [_cloud_error(exc)]
    else:
        for key, found in (_flat_errors(serializer.errors) if not valid else {}).items():
            errors[key] = found + errors.get(key, [])
    if errors:
        messages.error(request, "Instance group not added: correct the fields marked below.")
        context = detail_context(request, cluster, "groups", add_values=values, add_errors=errors)
        return render(request, "clusters/detail.html", context, status=400)
    data = dict(serializer.validated_data)
    notes = data.pop("notes", [])
    try:
        group, operation = add_instance_group(access=request.access, cluster=cluster, data=data)
    except ClusterStateError as exc:
        messages.error(request, str(exc))
        return redirect(_tab_url(cluster, "groups"))
    messages.success(request, f"Adding instance group {group.name}: its subnet and capacity are settled below.")
    for note in notes:
        messages.info(request, note)
    return redirect(_tab_url(cluster, "groups", operation))


def _scale_response(
    request,
    cluster: Cluster,
    *,
    level: str,
    text: str,
    operation: Operation | None = None,
    errors: dict | None = None,
    group: InstanceGroup | None = None,
) -> HttpResponse:
    """Htmx: the table again, the message out of band, and the started operation's panel in the page's slot."""
    if not wants_partial(request):
        getattr(messages, level)(request, text)
        return redirect(_tab_url(cluster, "groups", operation))
    context = {
        **_table_context(request, cluster),
        "flash": {"level": level, "text": text},
        "scale_errors": {"group": group.name, "errors": errors} if errors and group else None,
        "started": operation,
    }
    if operation is not None:
        context.update(_panel_context(request, operation))
    return render(request, "clusters/_scale_result.html", context)


@team_required(role=Role.ADMIN)
@require_POST
def group_scale(request, cluster_id, name: str):
    """Scale with the explicit diff: HyperPod's actual count decides whether anything starts."""
    cluster = _cluster_for(request, cluster_id)
    group = _group_for(cluster, name)
    if _not_ready(cluster):
        return _scale_response(request, cluster, level="error", text=_not_ready(cluster))
    serializer = InstanceGroupUpdateSerializer(data={"count": request.POST.get("count", "")}, context={"group": group})
    try:
        valid = serializer.is_valid()
    except Exception as exc:  # noqa: BLE001 - the quota check reads the cloud
        return _scale_response(request, cluster, level="error", text=_cloud_error(exc))
    if not valid:
        errors = _flat_errors(serializer.errors)
        text = f"{group.name} not scaled: " + " ".join(m for msgs in errors.values() for m in msgs)
        return _scale_response(request, cluster, level="error", text=text, errors=errors, group=group)
    try:
        actual = actual_count(cluster, group)
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        return _scale_response(request, cluster, level="error", text=_cloud_error(exc))
    if actual is None:
        text = f"HyperPod has no group {group.name} (yet): wait for its operation, or reconcile."
        return _scale_response(request, cluster, level="error", text=text)
    try:
        operation = scale_instance_group(
            access=request.access, group=group, actual_count=actual, changes=serializer.validated_data
        )
    except ClusterStateError as exc:
        return _scale_response(request, cluster, level="error", text=str(exc))
    if operation is None:
        return _scale_response(request, cluster, level="info", text=f"Already at {actual} — nothing to change.")
    wanted = serializer.validated_data["count"]
    text = f"Scaling {group.name} from {actual} to {wanted}: its progress shows above."
    return _scale_response(request, cluster, level="success", text=text, operation=operation)


@team_required(role=Role.ADMIN)
def group_delete(request, cluster_id, name: str):
    """Delete a group after confirmation; while workloads run on its nodes it needs `force`."""
    cluster = _cluster_for(request, cluster_id)
    group = _group_for(cluster, name)
    if _not_ready(cluster):
        messages.error(request, _not_ready(cluster))
        return redirect(_tab_url(cluster, "groups"))
    try:
        busy = workloads_on(cluster, group)
        error = ""
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        busy, error = [], _cloud_error(exc)
    context = {
        "section": "clusters",
        "cluster": cluster,
        "group": group,
        "workloads": busy,
        "error": error,
        "errors": {},
        "force": False,
    }
    if request.method != "POST":
        return render(request, "clusters/group_delete.html", context)
    force = request.POST.get("force", "") in ("on", "true", "1")
    if busy and not force:
        context["errors"] = {"force": [f"Workloads run on {group.name}: stop them first, or check force."]}
        return render(request, "clusters/group_delete.html", context, status=400)
    try:
        operation = delete_instance_group(access=request.access, group=group)
    except ClusterStateError as exc:
        messages.error(request, str(exc))
        return redirect(_tab_url(cluster, "groups"))
    messages.success(request, f"Deleting instance group {group.name}: its subnet stays for later groups.")
    return redirect(_tab_url(cluster, "groups", operation))


# --- the nodes tab ------------------------------------------------------------------------------


def health_class(health: str | None) -> str:
    if health == "Schedulable":
        return "health-ok"
    if (health or "").startswith("Unschedulable"):
        return "health-bad"
    return "health-other"


def nodes_tab_context(request, cluster: Cluster) -> dict:
    """The nodes as HyperPod and Kubernetes see them, filtered by health with the REST filter."""
    query = NodeQuerySerializer(data={"health": request.GET["health"]} if request.GET.get("health") else {})
    context: dict = {"nodes": [], "nodes_error": "", "health_filters": HEALTH_FILTERS, "health": ""}
    context["can_act"] = request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE
    if not query.is_valid():
        context["nodes_error"] = " ".join(str(m) for msgs in query.errors.values() for m in msgs)
        return context
    context["health"] = query.validated_data.get("health", "")
    if not cluster.hyperpod_cluster_name:
        return context
    try:
        nodes = list_nodes(cluster, context["health"] or None)
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        context["nodes_error"] = _cloud_error(exc)
        return context
    for node in nodes:
        node["health_class"] = health_class(node["health"])
        node["workloads"] = sum(1 for pod in node["pods"] if pod["namespace"] not in SYSTEM_NAMESPACES)
    context["nodes"] = nodes
    return context


def _node_for(cluster: Cluster, node: str) -> dict:
    if not cluster.hyperpod_cluster_name:
        raise Http404("The cluster has no HyperPod cluster yet.")
    found = find_node(cluster, node)
    if found is None:
        raise Http404(f"No node {node} in cluster {cluster.name}.")
    return found


@team_required(role=Role.ADMIN)
def node_act(request, cluster_id, node: str, action: str):
    """Reboot, replace or delete a node: a confirmation page, then `node_action` and its operation."""
    cluster = _cluster_for(request, cluster_id)
    if action not in NODE_ACTIONS:
        raise Http404("No such node action.")
    if _not_ready(cluster):
        messages.error(request, _not_ready(cluster))
        return redirect(_tab_url(cluster, "nodes"))
    found = _node_for(cluster, node)
    label, effect = NODE_ACTIONS[action]
    workloads = [f"{p['namespace']}/{p['name']}" for p in found["pods"] if p["namespace"] not in SYSTEM_NAMESPACES]
    if request.method != "POST":
        context = {
            "section": "clusters",
            "cluster": cluster,
            "node": found,
            "action": action,
            "label": label,
            "effect": effect,
            "workloads": workloads,
            "health_class": health_class(found["health"]),
        }
        return render(request, "clusters/node_action.html", context)
    operation = node_action(access=request.access, cluster=cluster, node=found, action=action)
    messages.success(request, f"{label} of node {found['instance_id']} requested: follow the operation below.")
    return redirect(_tab_url(cluster, "nodes", operation))


@team_required
@require_GET
def node_diagnosis(request, cluster_id, node: str):
    """Read-only: findings, recent events and suggested actions (investigate → reboot → replace)."""
    cluster = _cluster_for(request, cluster_id)
    found = _node_for(cluster, node)
    try:
        report, error = diagnose_node(cluster, found), ""
    except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
        report, error = None, _cloud_error(exc)
    return _diagnosis_response(request, cluster, report, error, subject=f"node {found['instance_id']}")


@team_required
@require_GET
def cluster_diagnosis(request, cluster_id):
    """Read-only investigation of the whole cluster: unhealthy nodes, short groups, failure causes."""
    cluster = _cluster_for(request, cluster_id)
    if not cluster.hyperpod_cluster_name:
        report, error = None, "The cluster has no HyperPod cluster yet."
    else:
        try:
            report, error = diagnose_cluster(cluster), ""
        except Exception as exc:  # noqa: BLE001 - a cloud error is shown; _cloud_error re-raises the rest
            report, error = None, _cloud_error(exc)
    return _diagnosis_response(request, cluster, report, error, subject=f"cluster {cluster.name}")


def _diagnosis_response(request, cluster: Cluster, report: dict | None, error: str, *, subject: str):
    context = {
        "cluster": cluster,
        "report": report,
        "error": error,
        "subject": subject,
        "can_act": request.access.can(Role.ADMIN) and cluster.status == ClusterStatus.ACTIVE,
    }
    if wants_partial(request):
        return render(request, "clusters/_diagnosis.html", context)
    return render(request, "clusters/diagnosis.html", {**context, "section": "clusters"})
