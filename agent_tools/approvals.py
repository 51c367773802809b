"""The human gate: a costly change asked for by an agent token waits for a team admin.

When a team sets ``agent_approval_above`` (USD per hour) and a token marked ``agent`` calls a
mutating tool over MCP, the call's estimated cost is read from its arguments — instance type ×
count (``instance_groups``, or ``instance_type`` with a count-like argument; for
``scale_instance_group`` the added instances of the group), priced by ``instantstart.pricing``
with the team's overrides. Above the threshold (or with a type the table does not price) the call
is not dispatched: an ``Approval`` is recorded and the tool answers
``{"approval": {"id", "status": "pending", "estimate", …}}``, with ``next: wait_for_operation``.

A team admin approves or rejects it in the portal or over REST (audited with the admin as actor).
The agent waits with ``wait_for_operation(approval id)``; once approved, that wait — running with
the agent's own token, so its role, team and idempotency apply as to any call — dispatches the held
call exactly once (idempotency key ``approval-<id>`` unless the agent gave one) and answers the
operation it started. A rejected approval starts nothing, ever.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.db import transaction
from django.utils import timezone

from instantstart.api.errors import error_body
from instantstart.errors import StateConflict
from instantstart.operations.audit import record_audit
from instantstart.pricing import PRICE_SOURCE, hourly_cost
from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.authentication import resolve_token
from instantstart.tenancy.models import ApiToken, hash_token

from . import dispatch
from .models import Approval, ApprovalStatus
from .registry import ESTIMATED_FROM_STATE, IDEMPOTENCY_ARGUMENT, Tool, registry
from .results import followup

# Arguments that say how many instances a tool asks for, besides ``count``.
COUNT_ARGUMENTS = ("count", "instance_count", "replicas", "node_count", "nodes", "num_nodes", "workers")


def overrides_of(team) -> dict[str, Decimal]:
    return {name: Decimal(str(price)) for name, price in (team.price_overrides or {}).items()}


def instances_asked(tool: Tool, arguments: dict[str, Any], access: Access) -> dict[str, int]:
    """{instance type: count} the call would add, read from its arguments."""
    special = _ESTIMATORS.get(tool.name)
    if special is not None:
        return special(arguments, access)
    found: Counter = Counter()
    for group in arguments.get("instance_groups") or []:
        if isinstance(group, dict) and isinstance(group.get("instance_type"), str):
            found[group["instance_type"]] += _count(group)
    if isinstance(arguments.get("instance_type"), str):
        found[arguments["instance_type"]] += _count(arguments)
    return dict(found)


def _count(arguments: dict) -> int:
    for name in COUNT_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return max(value, 0)
    return 1


def _scale_group(arguments: dict, access: Access) -> dict[str, int]:
    """Scaling a group adds (new count - current count) instances of its type; scaling down adds none."""
    group_model = apps.get_model("clusters", "InstanceGroup")
    group = (
        group_model.objects.visible_to(access)
        .filter(cluster_id=arguments.get("cluster_id"), name=arguments.get("name"))
        .first()
    )
    count = arguments.get("count")
    if group is None or not isinstance(count, int):
        return {}
    added = count - group.count
    return {group.instance_type: added} if added > 0 else {}


_ESTIMATORS = {"scale_instance_group": _scale_group}
assert _ESTIMATORS.keys() <= ESTIMATED_FROM_STATE  # the registry lists them, so their schemas say "approval"


def estimate(tool: Tool, arguments: dict[str, Any], access: Access) -> dict | None:
    """What the call would cost per hour (None: it adds no priced capacity)."""
    try:
        instances = instances_asked(tool, arguments, access)
    except (ValueError, TypeError, LookupError):
        return None
    instances = {name: count for name, count in instances.items() if count > 0}
    if not instances:
        return None
    team = access.team
    overrides = overrides_of(team)
    cost, unknown = hourly_cost(instances, overrides)
    return {
        "usd_per_hour": float(cost),
        "threshold": float(team.agent_approval_above),
        "instances": instances,
        "unknown_types": unknown,
        "source": "team price overrides, then the " + PRICE_SOURCE if overrides else PRICE_SOURCE,
    }


def gate(tool: Tool, arguments: dict[str, Any] | None, caller: dispatch.Caller) -> dispatch.Answer | None:
    """The held answer when an agent token's call costs more than the team allows; None: go ahead.

    Synchronous (reads the database): call it from a thread.
    """
    if not tool.gateable:
        return None
    access = _access_of(caller)
    if access is None or access.token is None or not access.token.agent:
        return None
    if access.team.agent_approval_above is None:
        return None
    arguments = dict(arguments or {})
    cost = estimate(tool, arguments, access)
    if cost is None:
        return None
    if cost["usd_per_hour"] <= cost["threshold"] and not cost["unknown_types"]:
        return None
    with transaction.atomic():
        # The same call again (an agent retrying) is the same approval, not a second one.
        approval = (
            Approval.objects.select_for_update()
            .filter(team=access.team, token=access.token, tool=tool.name, arguments=arguments)
            .exclude(status=ApprovalStatus.REJECTED)
            .filter(executed_at__isnull=True)
            .first()
        )
        if approval is None:
            approval = Approval.objects.create(
                team=access.team,
                requested_by=access.user,
                token=access.token,
                tool=tool.name,
                arguments=arguments,
                estimate=cost,
            )
            record_audit(
                access=access,
                action="approval.request",
                target=approval,
                summary={"tool": tool.name, "usd_per_hour": cost["usd_per_hour"], "threshold": cost["threshold"]},
            )
    from .serializers import ApprovalSerializer

    return dispatch.json_answer(202, {"approval": ApprovalSerializer(approval).data})


def decide(*, access: Access, approval: Approval, approve: bool, reason: str = "") -> Approval:
    """A team admin's yes or no on a pending approval (audited with the admin as actor)."""
    with transaction.atomic():
        locked = Approval.objects.select_for_update().get(pk=approval.pk)
        if locked.status != ApprovalStatus.PENDING:
            raise StateConflict(
                f"This approval is already {locked.status}.", hint="Only a pending approval can be decided."
            )
        locked.status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED
        locked.decided_by = access.user if getattr(access.user, "pk", None) else None
        locked.decided_at = timezone.now()
        locked.reason = reason[:500]
        locked.save(update_fields=["status", "decided_by", "decided_at", "reason"])
        record_audit(
            access=access,
            action="approval.approve" if approve else "approval.reject",
            target=locked,
            summary={"tool": locked.tool, "usd_per_hour": locked.estimate.get("usd_per_hour"), "reason": reason},
        )
    return locked


def run_if_approved(approval_id: str, caller: dispatch.Caller) -> None:
    """Dispatch an approved, not yet run call once — only for the token that asked for it.

    Synchronous: call it from a thread.
    """
    token_id = _token_id(caller)
    if token_id is None:
        return
    claimed = Approval.objects.filter(
        pk=approval_id, status=ApprovalStatus.APPROVED, executed_at__isnull=True, token_id=token_id
    ).update(executed_at=timezone.now())
    if not claimed:
        return
    approval = Approval.objects.get(pk=approval_id)
    tool = registry.get(approval.tool)
    if tool is None:
        answer = dispatch.json_answer(404, error_body("not_found", f"No tool {approval.tool} any more."))
    else:
        arguments = dict(approval.arguments)
        arguments.setdefault(IDEMPOTENCY_ARGUMENT, f"approval-{approval.pk}")
        answer = dispatch.call(tool, arguments, caller)
    follow = followup(answer.data) if answer.ok else None
    operation_model = apps.get_model("operations", "Operation")
    operation = operation_model.objects.filter(pk=follow["operation_id"]).first() if follow else None
    Approval.objects.filter(pk=approval.pk).update(result_status=answer.status, result=answer.data, operation=operation)


def _access_of(caller: dispatch.Caller) -> Access | None:
    parts = caller.authorization.split()
    return resolve_token(parts[1], Via.MCP) if len(parts) == 2 else None


def _token_id(caller: dispatch.Caller):
    parts = caller.authorization.split()
    if len(parts) != 2:
        return None
    return ApiToken.objects.filter(token_hash=hash_token(parts[1])).values_list("pk", flat=True).first()
