"""Portal pages: thin views over the same serializers and services as the REST API."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import Resolver404, resolve, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from clusters.readers import catalog
from clusters.selectors import fleet
from inference.models import Endpoint
from instantstart.operations.models import ACTIVE, AuditEvent, Operation, OperationStatus
from instantstart.operations.registry import all_kinds
from instantstart.operations.serializers import OperationFilterSerializer
from instantstart.operations.services import cancel_operation, retry_operation
from instantstart.pricing import PRICE_SOURCE
from instantstart.tenancy.models import ApiToken, Cloud, Membership, Team
from instantstart.tenancy.roles import Role
from instantstart.tenancy.serializers import (
    ApiTokenCreateSerializer,
    MemberInviteSerializer,
    MembershipSerializer,
    TeamSerializer,
    known_regions,
)
from instantstart.tenancy.services import (
    add_member,
    change_member_role,
    create_token,
    invite_member,
    must_change_password,
    password_changed,
    remove_member,
    revoke_token,
    update_team,
)
from instantstart.tenancy.teams import SESSION_TEAM_KEY
from training.models import Job

from .errors import page_errors
from .guards import team_required
from .panels import kind_or_none, may_act_on, panel_context
from .partials import render_page_or_partial

OPERATIONS_PER_PAGE = 25
INTERNAL_KIND_PREFIXES = ("engine.",)
AUDIT_PER_PAGE = 50
# The raw secret of a token just created waits here for the one page render that shows it.
NEW_TOKEN_SESSION_KEY = "instantstart.portal.new_token"
# Likewise the one-time password of a user just invited (created by "Add a member").
NEW_MEMBER_SESSION_KEY = "instantstart.portal.new_member"

# --- team switcher ------------------------------------------------------------------------------


def _safe_next(request, url: str | None) -> str | None:
    """``url`` when it is a local page that does not name an object of the previous team."""
    if not url or not url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        return None
    try:
        match = resolve(url)
    except Resolver404:
        return None
    return None if match.captured_kwargs else url


@login_required
@require_POST
def switch_team(request):
    """Make another of the user's teams the current one; a team they are not in is a 404."""
    try:
        team_id = uuid.UUID(request.POST.get("team", ""))
    except ValueError:
        raise Http404("No such team.") from None
    membership = get_object_or_404(Membership.objects.select_related("team"), user=request.user, team_id=team_id)
    request.session[SESSION_TEAM_KEY] = str(membership.team_id)
    messages.success(request, f"You are now working in {membership.team.name}.")
    return redirect(_safe_next(request, request.POST.get("next")) or "portal:dashboard")


# --- dashboard and the areas still to come ------------------------------------------------------


@team_required
def dashboard(request):
    access = request.access
    operations = Operation.objects.visible_to(access)
    counts = operations.aggregate(
        active=Count("pk", filter=Q(status__in=ACTIVE)),
        failed=Count("pk", filter=Q(status=OperationStatus.FAILED)),
        succeeded=Count("pk", filter=Q(status=OperationStatus.SUCCEEDED)),
    )
    rows = fleet(access)
    context = {
        "section": "dashboard",
        "counts": counts,
        "members": Membership.objects.visible_to(access).count(),
        "tokens": ApiToken.objects.visible_to(access).active().count(),
        "clusters": len(rows),
        "fleet": rows,
        "accelerators": _accelerators_in_use(access, rows),
        "health": _nodes_by_health(rows),
        "total_cost": sum((row["cost"] for row in rows if row["cost"] is not None), Decimal(0)),
        "price_source": PRICE_SOURCE,
        "running": operations.filter(status__in=ACTIVE).select_related("requested_by")[:10],
        "failures": operations.filter(status=OperationStatus.FAILED).select_related("requested_by")[:5],
        "endpoints": Endpoint.objects.visible_to(access).count(),
        "jobs": Job.objects.visible_to(access).count(),
        "recent": operations.select_related("requested_by")[:10],
    }
    return render(request, "portal/dashboard.html", context)


def _nodes_by_health(rows: list[dict]) -> list[tuple[str, int]]:
    totals: dict[str, int] = {}
    for row in rows:
        for health, count in row["by_health"].items():
            totals[health] = totals.get(health, 0) + count
    return sorted(totals.items(), key=lambda item: (item[0] != "Schedulable", item[0]))


def _accelerators_in_use(access, rows: list[dict]) -> dict:
    """GPUs (and Trainium/Inferentia devices) in use across the clusters, by accelerator model."""
    by_region: dict[str, dict[str, int]] = {}
    for row in rows:
        for instance_type, count in row["instances"].items():
            region = by_region.setdefault(row["cluster"].region, {})
            region[instance_type] = region.get(instance_type, 0) + count
    models: dict[str, dict] = {}
    with page_errors() as failed:
        for region, instances in by_region.items():
            facts = catalog.accelerators(access.team, region, list(instances))
            for instance_type, count in instances.items():
                model, per_instance = facts.get(instance_type, (None, 0))
                if not per_instance:
                    continue  # CPU instances have no accelerator to count
                entry = models.setdefault(
                    model or instance_type, {"model": model or instance_type, "count": 0, "types": {}}
                )
                entry["count"] += per_instance * count
                entry["types"][instance_type] = entry["types"].get(instance_type, 0) + count
    return {"models": sorted(models.values(), key=lambda m: -m["count"]), "error": failed.text}


# --- operations ---------------------------------------------------------------------------------


def _operation_for(request, op_id) -> Operation:
    """The operation when it belongs to the current team; another team's is a 404."""
    queryset = Operation.objects.visible_to(request.access).select_related("requested_by")
    return get_object_or_404(queryset, pk=op_id)


@team_required
def operation_list(request):
    filters_in = {key: request.GET[key] for key in ("status", "kind", "target") if request.GET.get(key)}
    filters = OperationFilterSerializer(data=filters_in)
    queryset = Operation.objects.visible_to(request.access).select_related("requested_by")
    if filters.is_valid():
        lookups = {"target": "target_id"}
        queryset = queryset.filter(**{lookups.get(key, key): value for key, value in filters.validated_data.items()})
    team_kinds = set(Operation.objects.visible_to(request.access).values_list("kind", flat=True).distinct())
    # The engine's own kinds (engine.selftest) are internal: not offered (a link may still filter by one).
    offered = team_kinds | {kind.name for kind in all_kinds()}
    kinds = sorted(
        name for name in offered if not name.startswith(INTERNAL_KIND_PREFIXES) or name == filters_in.get("kind")
    )
    context = {
        "section": "operations",
        "page": Paginator(queryset, OPERATIONS_PER_PAGE).get_page(request.GET.get("page")),
        "filters": filters_in,
        "filter_errors": filters.errors if filters_in and not filters.is_valid() else {},
        "statuses": OperationStatus.choices,
        "kinds": kinds,
    }
    return render(request, "operations/list.html", context)


@team_required
def operation_detail(request, op_id):
    """The operation page; its progress panel alone when htmx polls for it."""
    operation = _operation_for(request, op_id)
    return render_page_or_partial(
        request, "operations/detail.html", "operations/_panel.html", panel_context(request, operation)
    )


def _operation_action(request, op_id, service, done_message: str):
    operation = _operation_for(request, op_id)
    if not may_act_on(request.access, operation):
        needed = kind_or_none(operation.kind)
        raise PermissionDenied(
            f"This operation needs the {needed.role if needed else 'admin'} role; yours is {request.access.role}."
        )
    with page_errors(request) as refused:
        service(access=request.access, operation=operation)
    if not refused:
        messages.success(request, done_message)
    # A retry from the cluster page stays there (its panel follows the operation again).
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(f"{back}?operation={operation.pk}" if "?" not in back else back)
    return redirect("portal:operation", op_id=operation.pk)


@team_required
@require_POST
def operation_retry(request, op_id):
    return _operation_action(
        request, op_id, retry_operation, "Retrying: the operation resumes at the phase that stopped."
    )


@team_required
@require_POST
def operation_cancel(request, op_id):
    return _operation_action(
        request, op_id, cancel_operation, "Cancel requested: the operation stops after its current step."
    )


# --- audit --------------------------------------------------------------------------------------


@team_required(role=Role.ADMIN)
def audit_list(request):
    events = AuditEvent.objects.visible_to(request.access).select_related("actor", "token")
    page = Paginator(events, AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "audit/list.html", {"section": "audit", "page": page})


# --- team, members and tokens -------------------------------------------------------------------

SETTINGS_FIELDS = ("name", "cloud", "aws_role_arn", "aws_external_id", "default_region", "agent_approval_above")


def _settings_values(team) -> dict:
    return {field: getattr(team, field) for field in SETTINGS_FIELDS if field != "aws_external_id"}


# What each role may do, as the team page (and the README's "Roles") explain it. Each role can do
# everything the roles above it in this list can; REST, MCP and the portal check the same roles.
ROLE_RIGHTS = [
    (
        Role.VIEWER,
        "Reads everything of the team: clusters, instance groups, nodes and their diagnosis, storage, jobs, "
        "endpoints, operations and the audit log. Changes nothing.",
    ),
    (
        Role.MEMBER,
        "Also runs workloads: submits and stops jobs, creates, scales and deletes endpoints, and retries or "
        "cancels their operations. Uses clusters, does not change them.",
    ),
    (
        Role.ADMIN,
        "Also changes the infrastructure and the team: creates, imports, changes and deletes clusters, instance "
        "groups, nodes (reboot, replace, delete) and storage; edits the team's settings; adds and removes members, "
        "changes roles; creates and revokes API tokens.",
    ),
]


def _render_team(request, *, status: int = 200, settings_form=None, member_form=None, token_form=None):
    access = request.access
    team = access.team
    is_admin = access.can(Role.ADMIN)
    context = {
        "section": "team",
        "team": team,
        "external_id_set": bool(team.aws_external_id),
        "clouds": Cloud.choices,
        "regions": known_regions(),
        "roles": Role.choices,
        "role_rights": [(role.label, text) for role, text in ROLE_RIGHTS],
        "settings_form": settings_form or {"values": _settings_values(team), "errors": {}},
        "member_form": member_form or {"values": {"role": Role.MEMBER}, "errors": {}},
        "token_form": token_form or {"values": {"role": Role.MEMBER}, "errors": {}},
        "memberships": Membership.objects.visible_to(access).select_related("user").order_by("user__username"),
        "tokens": ApiToken.objects.visible_to(access).select_related("user") if is_admin else None,
        # Shown on this render only: popping it means a reload no longer has it.
        "new_token": request.session.pop(NEW_TOKEN_SESSION_KEY, None) if is_admin else None,
        "new_member": request.session.pop(NEW_MEMBER_SESSION_KEY, None) if is_admin else None,
    }
    return render(request, "team/page.html", context, status=status)


@team_required
def team_page(request):
    return _render_team(request)


@team_required(role=Role.ADMIN)
@require_POST
def team_settings(request):
    """Save the team's settings; only the fields whose value changed reach the service."""
    team = request.access.team
    data = {field: request.POST[field].strip() for field in SETTINGS_FIELDS if field in request.POST}
    if data.get("agent_approval_above") == "":
        data["agent_approval_above"] = None  # an empty box turns the approval gate off
    if not data.get("aws_external_id"):
        # Write-only: an empty box keeps the stored value unless the user asks to clear it.
        data.pop("aws_external_id", None)
        if request.POST.get("clear_external_id"):
            data["aws_external_id"] = ""
    serializer = TeamSerializer(team, data=data, partial=True)
    if not serializer.is_valid():
        values = {key: value for key, value in data.items() if key != "aws_external_id"}
        messages.error(request, "Team settings not saved: correct the fields marked below.")
        return _render_team(request, status=400, settings_form={"values": values, "errors": serializer.errors})
    changes = {key: value for key, value in serializer.validated_data.items() if getattr(team, key) != value}
    if changes:
        update_team(access=request.access, team=team, changes=changes)
        labels = ", ".join(str(Team._meta.get_field(key).verbose_name) for key in changes)
        messages.success(request, f"Team settings saved ({labels}).")
    else:
        messages.info(request, "Nothing changed: the settings already had these values.")
    return redirect("portal:team")


@team_required(role=Role.ADMIN)
@require_POST
def member_add(request):
    data = {"username": request.POST.get("username", "").strip(), "role": request.POST.get("role", "")}
    if request.POST.get("create") == "on":
        return _member_invite(request, data)
    serializer = MembershipSerializer(data=data, context={"team": request.access.team})
    if not serializer.is_valid():
        messages.error(request, "Member not added: correct the fields marked below.")
        return _render_team(request, status=400, member_form={"values": data, "errors": serializer.errors})
    user = serializer.validated_data["user"]
    add_member(access=request.access, user=user, role=serializer.validated_data.get("role", Role.MEMBER))
    messages.success(request, f"{user.username} joined {request.access.team.name}.")
    return redirect("portal:team")


def _member_invite(request, data: dict):
    """Create the user with a one-time password, shown once on the team page (like a token's secret)."""
    serializer = MemberInviteSerializer(data={key: value for key, value in data.items() if value})
    if not serializer.is_valid():
        messages.error(request, "Member not added: correct the fields marked below.")
        values = {**data, "create": True}
        return _render_team(request, status=400, member_form={"values": values, "errors": serializer.errors})
    membership, password = invite_member(access=request.access, **serializer.validated_data)
    username = membership.user.username
    request.session[NEW_MEMBER_SESSION_KEY] = {"username": username, "password": password}
    messages.success(
        request, f"{username} was created and joined {request.access.team.name}. Pass on the one-time password now."
    )
    return redirect("portal:team")


class PasswordChange(auth_views.PasswordChangeView):
    """Django's password change; it also ends the one-time password of an invited user."""

    template_name = "portal/password_change.html"
    success_url = reverse_lazy("portal:dashboard")

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "must_change": must_change_password(self.request.user)}

    def form_valid(self, form):
        response = super().form_valid(form)
        password_changed(self.request.user)
        messages.success(self.request, "Your password is changed.")
        return response


def _membership_for(request, membership_id: int) -> Membership:
    return get_object_or_404(Membership.objects.visible_to(request.access).select_related("user"), pk=membership_id)


@team_required(role=Role.ADMIN)
@require_POST
def member_role(request, membership_id: int):
    membership = _membership_for(request, membership_id)
    serializer = MembershipSerializer(membership, data={"role": request.POST.get("role", "")}, partial=True)
    if not serializer.is_valid():
        messages.error(request, "; ".join(str(err) for errs in serializer.errors.values() for err in errs))
        return redirect("portal:team")
    role = serializer.validated_data.get("role", membership.role)
    if role == membership.role:
        messages.info(request, f"{membership.user.username} already is {Role(role).label.lower()}: nothing changed.")
        return redirect("portal:team")
    with page_errors(request) as refused:
        change_member_role(access=request.access, membership=membership, role=role)
    if not refused:
        messages.success(request, f"{membership.user.username} is now {Role(role).label.lower()}.")
    return redirect("portal:team")


@team_required(role=Role.ADMIN)
@require_POST
def member_remove(request, membership_id: int):
    membership = _membership_for(request, membership_id)
    username = membership.user.username
    with page_errors(request) as refused:
        remove_member(access=request.access, membership=membership)
    if not refused:
        messages.success(request, f"{username} was removed from {request.access.team.name}.")
    return redirect("portal:team")


@team_required(role=Role.ADMIN)
@require_POST
def token_create(request):
    data = {key: request.POST.get(key, "").strip() for key in ("name", "role", "expires_in_days")}
    payload = {key: value for key, value in data.items() if value}
    data["agent"] = payload["agent"] = request.POST.get("agent") == "on"
    serializer = ApiTokenCreateSerializer(data=payload, context={"membership_role": request.access.role})
    if not serializer.is_valid():
        messages.error(request, "Token not created: correct the fields marked below.")
        return _render_team(request, status=400, token_form={"values": data, "errors": serializer.errors})
    token, raw = create_token(access=request.access, user=request.user, **serializer.validated_data)
    request.session[NEW_TOKEN_SESSION_KEY] = {"id": str(token.pk), "name": token.name, "secret": raw}
    messages.success(request, f"Token {token.name} created. Copy it now: it is shown only once.")
    return redirect("portal:team")


@team_required(role=Role.ADMIN)
@require_POST
def token_revoke(request, token_id):
    token = get_object_or_404(ApiToken.objects.visible_to(request.access), pk=token_id)
    revoke_token(access=request.access, token=token)
    messages.success(request, f"Token {token.name} ({token.prefix}…) is revoked.")
    return redirect("portal:team")
