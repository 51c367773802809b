"""REST: approvals of agents' costly changes. Everyone in the team reads them; team admins decide."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response

from instantstart.api.viewsets import TeamReadOnlyViewSet
from instantstart.tenancy.roles import Role

from .approvals import decide
from .models import Approval
from .serializers import ApprovalDecisionSerializer, ApprovalFilterSerializer, ApprovalSerializer


class ApprovalViewSet(TeamReadOnlyViewSet):
    """Changes an agent token asked for whose estimated cost is above the team's agent_approval_above."""

    queryset = Approval.objects.select_related("requested_by", "decided_by", "token", "operation")
    serializer_class = ApprovalSerializer
    action_roles = {"approve": Role.ADMIN, "reject": Role.ADMIN}

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "list":
            filters = ApprovalFilterSerializer(data=self.request.query_params)
            filters.is_valid(raise_exception=True)
            if "status" in filters.validated_data:
                queryset = queryset.filter(status=filters.validated_data["status"])
        return queryset

    @extend_schema(parameters=[ApprovalFilterSerializer])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def _decide(self, request, approve: bool) -> Response:
        decision = ApprovalDecisionSerializer(data=request.data)
        decision.is_valid(raise_exception=True)
        approval = decide(
            access=self.access, approval=self.get_object(), approve=approve, reason=decision.validated_data["reason"]
        )
        return Response(self.get_serializer(approval).data)

    @extend_schema(request=ApprovalDecisionSerializer, responses=ApprovalSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        """Let the held change run: it starts when the agent next waits on this approval."""
        return self._decide(request, approve=True)

    @extend_schema(request=ApprovalDecisionSerializer, responses=ApprovalSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        """Refuse the held change: nothing is created."""
        return self._decide(request, approve=False)
