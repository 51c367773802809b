"""Base viewsets: team scoping (another team's object is a 404), roles, idempotency."""

from __future__ import annotations

from rest_framework import viewsets

from instantstart.operations.models import Operation
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.access import Access

from . import idempotency

BODY_METHODS = {"POST", "PUT", "PATCH"}


class TeamScopedMixin:
    """Scopes `queryset` to what the caller sees and handles Idempotency-Key on writes.

    Subclasses set `queryset` (of a model whose queryset has `visible_to`, the one gate),
    `serializer_class` and, where a write needs more than the member role,
    `action_roles = {"create": Role.ADMIN}`. Fields named in `idempotency_redact` are left out of
    the stored answer (e.g. a token shown once). Domain errors raised by services propagate: the
    exception handler (instantstart.api.errors) answers them.
    """

    idempotency_redact: tuple[str, ...] = ()

    @property
    def access(self) -> Access:
        return self.request.auth

    @property
    def idempotency_key(self) -> str:
        record = getattr(self, "_idempotency_record", None)
        return record.key if record is not None else ""

    def get_queryset(self):
        return super().get_queryset().visible_to(self.access)

    def operation_data(self, operation: Operation) -> dict:
        """An operation as every 202 answers it (with its absolute ``url`` and ``status_tool``)."""
        return OperationSerializer(operation, context=self.get_serializer_context()).data

    def initial(self, request, *args, **kwargs):
        self._idempotency_record = None
        super().initial(request, *args, **kwargs)
        if request.method in BODY_METHODS and getattr(self, request.method.lower(), None) is not None:
            request.data  # noqa: B018 - parse now: a bad body (unknown fields, not an object) is a 400 even where the view reads none
        self._idempotency_record = idempotency.reserve(request, request.auth.team)

    def handle_exception(self, exc):
        if isinstance(exc, idempotency.Replay):
            return idempotency.replay_response(exc.record)
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        record = getattr(self, "_idempotency_record", None)
        if record is not None:
            idempotency.complete(record, response, self.idempotency_redact)
            self._idempotency_record = None
        return response


class TeamViewSet(TeamScopedMixin, viewsets.GenericViewSet):
    pass


class TeamModelViewSet(TeamScopedMixin, viewsets.ModelViewSet):
    pass


class TeamReadOnlyViewSet(TeamScopedMixin, viewsets.ReadOnlyModelViewSet):
    pass
