"""Portal: the approvals page — team admins approve or reject the costly changes agents asked for."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.tenancy.roles import Role

from .approvals import decide
from .models import Approval, ApprovalStatus

PER_PAGE = 25


@team_required
def approval_list(request):
    approvals = Approval.objects.visible_to(request.access).select_related(
        "requested_by", "decided_by", "token", "operation"
    )
    context = {
        "section": "approvals",
        "pending": approvals.filter(status=ApprovalStatus.PENDING),
        "page": Paginator(approvals.exclude(status=ApprovalStatus.PENDING), PER_PAGE).get_page(request.GET.get("page")),
        "threshold": request.access.team.agent_approval_above,
        "may_decide": request.access.can(Role.ADMIN),
    }
    return render(request, "approvals/list.html", context)


def _decide(request, approval_id, approve: bool):
    approval = get_object_or_404(Approval.objects.visible_to(request.access), pk=approval_id)
    with page_errors(request) as refused:
        decide(access=request.access, approval=approval, approve=approve, reason=request.POST.get("reason", "").strip())
    if not refused:
        if approve:
            messages.success(request, f"Approved {approval.tool}: it starts when the agent resumes waiting on it.")
        else:
            messages.success(request, f"Rejected {approval.tool}: nothing was created.")
    return redirect("portal:approvals")


@team_required(role=Role.ADMIN)
@require_POST
def approval_approve(request, approval_id):
    return _decide(request, approval_id, approve=True)


@team_required(role=Role.ADMIN)
@require_POST
def approval_reject(request, approval_id):
    return _decide(request, approval_id, approve=False)
