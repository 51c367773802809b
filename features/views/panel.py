"""The "Advanced features" tab: one row per feature (actual state, dependency chips, toggle, settings),
a plan preview before confirm, and the live phase panel after. Thin adapters over the REST path's
serializer and service: the form sends only the fields the user changed (``<feature>`` = on|off,
``<feature>.<setting>`` = value), which become the same PATCH body REST takes."""

from __future__ import annotations

import uuid

from django.shortcuts import render
from django.views.decorators.http import require_POST

from clusters.models import ClusterStatus
from clusters.selectors import get_cluster
from instantstart.operations.models import Operation
from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.portal.panels import panel_context
from instantstart.tenancy.roles import Role

from ..planning import describe
from ..readers.state import read_state
from ..selectors import KIND, features_now, records_of
from ..serializers import FeaturesUpdateSerializer
from ..services import require_ready, update_features


def form_request(post) -> dict:
    """The changed fields of the form as a PATCH body.

    ``kuberay=on`` and ``tiered_checkpointing.memory_percent=30`` become
    ``{"kuberay": {"enabled": true}, "tiered_checkpointing": {"memory_percent": 30}}``.
    """
    body: dict[str, dict] = {}
    for key, value in post.items():
        if key == "csrfmiddlewaretoken":
            continue
        if "." in key:
            name, setting = key.split(".", 1)
            try:
                parsed: object = int(value)
            except ValueError:
                parsed = value
            body.setdefault(name, {})[setting] = parsed
        else:
            body.setdefault(key, {})["enabled"] = value == "on"
    return body


def _why_locked(row: dict, rows: dict, can_change: bool, running) -> str:
    """Why a toggle cannot be used now ("" when it can)."""
    if not can_change:
        return "Only team admins can change features."
    if running is not None:
        return "Features are changing: wait for the operation below."
    if not row["available"]:
        return f"{row['title']} {row['detail']}."
    users = [rows[u]["title"] for u in row["required_by"] if rows[u]["enabled"]]
    if row["enabled"] and users:
        return f"Required by {', '.join(users)}: disable that first (or together)."
    return ""


def panel_context_for(request, cluster) -> dict:
    context: dict = {"cluster": cluster, "rows": [], "error": ""}
    can_change = request.access.can(Role.ADMIN) and cluster.status in (ClusterStatus.ACTIVE, ClusterStatus.IMPORTED)
    with page_errors() as failed:
        require_ready(cluster)
        rows, running = features_now(cluster)
    if failed:
        context["error"] = failed.text
        return context
    by_name = {r["name"]: r for r in rows}
    for row in rows:
        row["locked"] = _why_locked(row, by_name, can_change, running)
        row["requires_titles"] = [by_name[n]["title"] for n in row["requires"]]
    context.update(
        rows=rows,
        features=[r for r in rows if r["kind"] == "feature"],
        dependencies=[r for r in rows if r["kind"] == "dependency"],
        can_change=can_change,
    )
    if running is not None:
        context.update(panel_context(request, running))
        context["operation"] = running
    return context


def _shown_operation(request, cluster):
    """The features.update named by ?operation= when it is this cluster's (the panel keeps showing it)."""
    try:
        op_id = uuid.UUID(request.GET.get("operation", ""))
    except ValueError:
        return None
    return Operation.objects.visible_to(request.access).filter(pk=op_id, kind=KIND, target_id=str(cluster.pk)).first()


@team_required
def features_tab(request, cluster_id):
    """The tab's content (loaded by the cluster page's Advanced features tab; polled while features change)."""
    cluster = get_cluster(request.access, cluster_id)
    context = panel_context_for(request, cluster)
    shown = _shown_operation(request, cluster)
    if shown is not None and "operation" not in context:
        context.update(panel_context(request, shown))
        context["operation"] = shown
    return render(request, "features/_panel.html", context)


def _validated(request, cluster):
    """(serializer, body, error text): the same validation REST runs, against the actual state."""
    body = form_request(request.POST)
    serializer = None
    with page_errors() as failed:
        require_ready(cluster)
        serializer = FeaturesUpdateSerializer(
            data=body, context={"cluster": cluster, "state": read_state(cluster), "records": records_of(cluster)}
        )
        serializer.is_valid()
    if failed:
        return None, body, failed.text
    if serializer.errors:
        text = " ".join(str(m) for messages in serializer.errors.values() for m in messages)
        return None, body, text
    return serializer, body, ""


@team_required(role=Role.ADMIN)
@require_POST
def features_plan(request, cluster_id):
    """The plan preview: what confirming would do, in order (nothing starts yet)."""
    cluster = get_cluster(request.access, cluster_id)
    serializer, body, error = _validated(request, cluster)
    context = {"cluster": cluster, "error": error, "fields": list(request.POST.items())}
    if serializer is not None:
        plan = serializer.validated_data["plan"]
        context.update(plan=plan.actions, summary=describe(plan), changed=plan.changed)
    return render(request, "features/_preview.html", context, status=400 if error else 200)


@team_required(role=Role.ADMIN)
@require_POST
def features_apply(request, cluster_id):
    """Confirm: start features.update with the plan (the diff is taken again, against the state now)."""
    cluster = get_cluster(request.access, cluster_id)
    serializer, body, error = _validated(request, cluster)
    if serializer is None:
        return render(request, "features/_preview.html", {"cluster": cluster, "error": error}, status=400)
    operation = None
    with page_errors() as failed:
        operation = update_features(
            access=request.access,
            cluster=cluster,
            request=serializer.validated_data["request"],
            plan=serializer.validated_data["plan"],
        )
    if failed:
        return render(request, "features/_preview.html", {"cluster": cluster, "error": failed.text}, status=409)
    context = panel_context_for(request, cluster)
    if operation is not None:
        context.update(panel_context(request, operation))
        context["operation"] = operation
    else:
        context["notice"] = "Nothing to change: the cluster already matches."
    return render(request, "features/_panel.html", context)
