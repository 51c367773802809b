"""What the clusters pages share: the catalog choices of a form, serializer errors by input, links."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from instantstart.operations.models import Operation
from instantstart.portal.errors import page_errors
from instantstart.tenancy.models import Team
from instantstart.tenancy.serializers import known_regions, region_problem

from ..models import CapacityType, Cluster
from ..readers import catalog


def catalog_context(team: Team, values: dict, *, zones: bool = True, types: bool = True, plans: bool = True) -> dict:
    """Only the choices the team's cloud offers: zones of the region, accelerator types of the zone,
    the region's training plans. Adjusts the chosen zone when the region no longer has it."""
    context = {"values": values, "catalog_error": "", "zones": [], "types": [], "plans": [], "selected_type": None}
    region = values["region"]
    if problem := region_problem(region):
        context["catalog_error"] = problem
        return context
    with page_errors() as failed:
        if zones:
            context["zones"] = catalog.availability_zones(team, region)
            names = [zone["name"] for zone in context["zones"]]
            if values["availability_zone"] not in names:
                values["availability_zone"] = names[0] if names else ""
        if types and values["availability_zone"]:
            context["types"] = catalog.instance_types(team, region, values["availability_zone"])
            context["selected_type"] = next(
                (info for info in context["types"] if info.instance_type == values["instance_type"]), None
            )
        if plans and values["capacity_type"] == CapacityType.TRAINING_PLAN:
            context["plans"] = catalog.training_plans(team, region)
    context["catalog_error"] = failed.text
    return context


def checked(source, name: str) -> bool:
    """Whether a form's checkbox is ticked, in the words DRF's BooleanField reads as true (as REST does)."""
    return source.get(name, "") in serializers.BooleanField.TRUE_VALUES


def form_values(source, keys: tuple[str, ...]) -> dict:
    """What a form with an instance group holds: the text inputs ``keys`` (stripped), the capacity type
    (on-demand when none), the EFA-only checkbox and the chosen deep health checks."""
    values = {key: source.get(key, "").strip() for key in keys}
    values["capacity_type"] = values.get("capacity_type") or CapacityType.ON_DEMAND
    values["efa_only"] = checked(source, "efa_only")
    values["deep_health_checks"] = source.getlist("deep_health_checks") if hasattr(source, "getlist") else []
    return values


def query_of(serializer_class: type[serializers.Serializer], data) -> tuple[dict, dict]:
    """The same query serializer REST uses, on a form: (validated data, errors by field)."""
    query = serializer_class(data=data)
    return (query.validated_data, {}) if query.is_valid() else ({}, dict(query.errors))


def flat_errors(errors: dict) -> dict[str, list[str]]:
    """Serializer errors as lists of sentences per input (a label's errors name the label)."""
    flat: dict[str, list[str]] = {}
    for key, value in errors.items():
        if isinstance(value, dict):
            flat[key] = [f"{inner}: {' '.join(map(str, msgs))}" for inner, msgs in value.items()]
        else:
            flat[key] = [str(message) for message in value]
    return flat


def tab_url(cluster: Cluster, tab: str, operation: Operation | None = None) -> str:
    url = reverse("portal:cluster", args=[cluster.pk]) + f"?tab={tab}"
    return url + (f"&operation={operation.pk}" if operation is not None else "")


def health_class(health: str | None) -> str:
    if health == "Schedulable":
        return "health-ok"
    if (health or "").startswith("Unschedulable"):
        return "health-bad"
    return "health-other"


def region_choices(team: Team, *, read: bool = True) -> dict:
    """The form's regions: those where the team's account is offered accelerator types first, then
    (listed last, labelled) those where it is offered none. A region that could not be read, or a
    cloud that cannot be reached at all, is not claimed to offer nothing. With read=False only the
    team's cached reads are used; ``regions_pending`` then says the marking is still to be read."""
    regions = known_regions()
    offered = None
    with page_errors():
        offered = catalog.accelerator_regions(team, regions, read=read)
    marks = offered or {}
    return {
        "regions": [region for region in regions if marks.get(region) is not False],
        "regions_without_accelerators": [region for region in regions if marks.get(region) is False],
        "regions_pending": offered is None and not read,
    }
