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
    }
