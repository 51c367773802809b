"""The progress panel of an operation, as every portal page that shows one renders it."""

from __future__ import annotations

from django.http import HttpRequest

from instantstart.operations.models import Operation
from instantstart.operations.registry import OperationKind, get_kind
from instantstart.tenancy.access import Access


def kind_or_none(name: str) -> OperationKind | None:
    """The registered kind of that name; None for a kind no longer registered (old history)."""
    try:
        return get_kind(name)
    except KeyError:
        return None


def may_act_on(access: Access, operation: Operation) -> bool:
    """The REST rule: retry and cancel need the role of the operation's kind."""
    kind = kind_or_none(operation.kind)
    return kind is not None and access.can(kind.role)


# Parameters that only route an operation (not what the user asked for).
_HIDDEN_PARAMS = {"cluster_id", "from_count"}


def parameter_rows(operation: Operation) -> list[tuple[str, str]]:
    """What the operation was asked to do, for people: ("count", "2 → 3"), ("instance_id", "i-…")."""
    params = operation.params or {}
    rows = []
    for key, value in params.items():
        if key in _HIDDEN_PARAMS:
            continue
        if key == "count" and "from_count" in params:
            value = f"{params['from_count']} → {value}"
        elif isinstance(value, (dict, list)):
            value = (
                ", ".join(f"{k}={v}" for k, v in value.items())
                if isinstance(value, dict)
                else ", ".join(map(str, value))
            )
        rows.append((key.replace("_", " "), str(value)))
    return rows


def target_link(operation: Operation) -> str:
    """The portal page of the operation's target ("" when it has none or no page)."""
    from django.urls import NoReverseMatch, reverse

    model = operation.target_type.model_class() if operation.target_type else None
    cluster_id = (operation.params or {}).get("cluster_id")
    try:
        if model is not None and model._meta.label == "clusters.Cluster":
            return reverse("portal:cluster", args=[operation.target_id])
        if cluster_id and model is not None:
            tab = {"clusters.InstanceGroup": "groups", "clusters.Storage": "storage"}.get(model._meta.label, "overview")
            return reverse("portal:cluster", args=[cluster_id]) + f"?tab={tab}"
        if model is not None and hasattr(model, "get_absolute_url"):
            target = model.objects.filter(pk=operation.target_id).first()
            return target.get_absolute_url() if target is not None else ""
    except (NoReverseMatch, ValueError):
        return ""
    return ""


def panel_context(request: HttpRequest, operation: Operation) -> dict:
    """What templates/operations/_panel.html needs: phases with titles, and which buttons to show."""
    kind = kind_or_none(operation.kind)
    steps = {step.name: step.title or step.name for step in kind.steps} if kind else {}
    may_act = may_act_on(request.access, operation)
    return {
        "section": "operations",
        "operation": operation,
        "kind_title": (kind.title if kind else "") or operation.kind,
        "phases": [(phase, steps.get(phase.name, phase.name)) for phase in operation.phases.order_by("index")],
        "show_retry": may_act and operation.can_retry,
        "show_cancel": may_act and operation.can_cancel and not operation.cancel_requested,
        "parameters": parameter_rows(operation),
        "target_url": target_link(operation),
    }
