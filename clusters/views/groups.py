"""The instance groups tab's actions: add, scale with the explicit diff, delete — over the serializers
and services REST uses (InstanceGroupAddSerializer, scale_instance_group, delete_instance_group…)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from instantstart.operations.models import Operation
from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.portal.panels import panel_context
from instantstart.portal.partials import wants_partial
from instantstart.tenancy.roles import Role

from ..models import CapacityType, Cluster, InstanceGroup
from ..readers.nodes import workloads_on
from ..selectors import get_cluster, get_group
from ..serializers import InstanceGroupAddSerializer, InstanceGroupUpdateSerializer
from ..serializers.queries import GroupDeleteQuerySerializer
from ..services import add_instance_group, delete_instance_group, require_hyperpod, scale_instance_group
from .common import catalog_context, flat_errors, query_of, tab_url
from .tabs import cluster_page, group_form_urls, group_form_values, groups_table_context

GROUP_FORM_PARTS = {"types": "clusters/_type_block.html", "capacity": "clusters/_capacity_block.html"}


@team_required
@require_GET
def group_table(request, cluster_id):
    """The groups table alone: it polls itself while an operation on a group runs."""
    cluster = get_cluster(request.access, cluster_id)
    return render(request, "clusters/_groups_table.html", groups_table_context(request, cluster))


@team_required(role=Role.ADMIN)
@require_GET
def group_form_part(request, cluster_id, part: str):
    """A piece of the add form re-rendered for a new zone, instance type or capacity type."""
    cluster = get_cluster(request.access, cluster_id)
    if part not in GROUP_FORM_PARTS:
        raise Http404("No such part of the form.")
    values = group_form_values(request.GET, cluster)
    context = catalog_context(cluster.team, values, zones=False, types=part == "types", plans=part == "capacity")
    context.update(group_form_urls(cluster), capacity_types=CapacityType.choices, errors={})
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


@team_required(role=Role.ADMIN)
@require_POST
def group_add(request, cluster_id):
    """Add an instance group (InstanceGroupAddSerializer, add_instance_group); errors sit at their fields."""
    cluster = get_cluster(request.access, cluster_id)
    values = group_form_values(request.POST, cluster)
    body, errors = _add_body(values)
    serializer = InstanceGroupAddSerializer(data=body, context={"cluster": cluster})
    valid = False
    with page_errors() as failed:  # the checks read the cloud
        valid = serializer.is_valid()
    if failed:
        errors["non_field_errors"] = [failed.text]
    elif not valid:
        for key, found in flat_errors(serializer.errors).items():
            errors[key] = found + errors.get(key, [])
    if errors:
        messages.error(request, "Instance group not added: correct the fields marked below.")
        status = failed.status if failed else 400
        return cluster_page(request, cluster, "groups", status=status, add_values=values, add_errors=errors)
    data = dict(serializer.validated_data)
    notes = data.pop("notes", [])
    with page_errors(request) as refused:
        group, operation = add_instance_group(access=request.access, cluster=cluster, data=data)
    if refused:
        return cluster_page(request, cluster, "groups", status=refused.status)
    messages.success(request, f"Adding instance group {group.name}: its subnet and capacity are settled below.")
    for note in notes:
        messages.info(request, note)
    return redirect(tab_url(cluster, "groups", operation))


def _scale_response(
    request,
    cluster: Cluster,
    *,
    level: str,
    text: str,
    status: int = 200,
    operation: Operation | None = None,
    errors: dict | None = None,
    group: InstanceGroup | None = None,
) -> HttpResponse:
    """Htmx: the table again, the message out of band, and the started operation's panel in the page's slot."""
    if not wants_partial(request):
        getattr(messages, level)(request, text)
        return redirect(tab_url(cluster, "groups", operation))
    context = {
        **groups_table_context(request, cluster),
        "flash": {"level": level, "text": text},
        "scale_errors": {"group": group.name, "errors": errors} if errors and group else None,
        "started": operation,
    }
    if operation is not None:
        context.update(panel_context(request, operation))
    return render(request, "clusters/_scale_result.html", context, status=status)


@team_required(role=Role.ADMIN)
@require_POST
def group_scale(request, cluster_id, name: str):
    """Scale with the explicit diff: HyperPod's actual count decides whether anything starts."""
    cluster = get_cluster(request.access, cluster_id)
    group = get_group(request.access, cluster_id, name)
    serializer = InstanceGroupUpdateSerializer(data={"count": request.POST.get("count", "")}, context={"group": group})
    valid = False
    with page_errors() as failed:  # the quota check reads the cloud
        valid = serializer.is_valid()
    if failed:
        return _scale_response(request, cluster, level="error", text=failed.text, status=failed.status)
    if not valid:
        errors = flat_errors(serializer.errors)
        text = f"{group.name} not scaled: " + " ".join(m for msgs in errors.values() for m in msgs)
        return _scale_response(request, cluster, level="error", text=text, status=400, errors=errors, group=group)
    with page_errors() as refused:
        operation, actual = scale_instance_group(access=request.access, group=group, changes=serializer.validated_data)
    if refused:
        return _scale_response(request, cluster, level="error", text=refused.text, status=refused.status)
    if operation is None:
        return _scale_response(request, cluster, level="info", text=f"Already at {actual} — nothing to change.")
    wanted = serializer.validated_data["count"]
    text = f"Scaling {group.name} from {actual} to {wanted}: its progress shows above."
    return _scale_response(request, cluster, level="success", text=text, operation=operation)


@team_required(role=Role.ADMIN)
def group_delete(request, cluster_id, name: str):
    """Delete a group after confirmation; while workloads run on its nodes it needs `force`."""
    cluster = get_cluster(request.access, cluster_id)
    group = get_group(request.access, cluster_id, name)
    with page_errors(request) as refused:
        require_hyperpod(cluster)
    if refused:
        return cluster_page(request, cluster, "groups", status=refused.status)
    query, errors = query_of(GroupDeleteQuerySerializer, request.POST)
    status = 400 if errors else 200
    if request.method == "POST" and not errors:
        with page_errors(request) as refused:
            operation = delete_instance_group(access=request.access, group=group, force=query["force"])
        if not refused:
            messages.success(request, f"Deleting instance group {group.name}: its subnet stays for later groups.")
            return redirect(tab_url(cluster, "groups", operation))
        status = refused.status
    busy: list[str] = []
    with page_errors() as failed:
        busy = workloads_on(cluster, group)
    context = {
        "section": "clusters",
        "cluster": cluster,
        "group": group,
        "workloads": busy,
        "error": failed.text,
        "errors": errors,
    }
    return render(request, "clusters/group_delete.html", context, status=status)
