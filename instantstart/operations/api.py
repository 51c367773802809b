"""REST: operations (list, detail, retry, cancel) and the audit trail."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from instantstart.api.viewsets import TeamReadOnlyViewSet
from instantstart.tenancy.roles import Role

from .models import AuditEvent, Operation
from .registry import get_kind
from .serializers import AuditEventSerializer, OperationFilterSerializer, OperationSerializer
from .services import cancel_operation, retry_operation


class OperationViewSet(TeamReadOnlyViewSet):
    """Long-running work of the team. Poll an operation until its status is terminal."""

    queryset = Operation.objects.select_related("requested_by", "target_type").prefetch_related("phases")
    serializer_class = OperationSerializer
    action_roles = {"retry": Role.MEMBER, "cancel": Role.MEMBER}

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action != "list":
            return queryset
        filters = OperationFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        if "status" in filters.validated_data:
            queryset = queryset.filter(status=filters.validated_data["status"])
        if "kind" in filters.validated_data:
            queryset = queryset.filter(kind=filters.validated_data["kind"])
        if "target" in filters.validated_data:
            queryset = queryset.filter(target_id=filters.validated_data["target"])
        return queryset

    @extend_schema(parameters=[OperationFilterSerializer])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def _check_kind_role(self, operation: Operation) -> None:
        needed = get_kind(operation.kind).role
        if not self.access.can(needed):
            self.permission_denied(self.request, message=f"This operation needs the {needed} role.")

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        """Resume a failed or cancelled operation at the phase that stopped."""
        operation = self.get_object()
        self._check_kind_role(operation)
        operation = retry_operation(access=self.access, operation=operation)
        return Response(self.get_serializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop an active operation after its current step. Repeatable."""
        operation = self.get_object()
        self._check_kind_role(operation)
        operation = cancel_operation(access=self.access, operation=operation)
        return Response(self.get_serializer(operation).data, status=status.HTTP_202_ACCEPTED)


class AuditEventViewSet(TeamReadOnlyViewSet):
    """Every mutation of the team, on every face. Team admins only."""

    queryset = AuditEvent.objects.select_related("actor", "token")
    serializer_class = AuditEventSerializer
    action_roles = {"list": Role.ADMIN, "retrieve": Role.ADMIN}
