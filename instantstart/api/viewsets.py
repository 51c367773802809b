"""Base viewsets: team scoping (another team's object is a 404), roles, idempotency."""

from __future__ import annotations

from rest_framework import viewsets

from instantstart.operations.models import Operation
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.access import Access

from . import idempotency


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

    def resolve_parents(self) -> None:
        """Look up the objects of the URL this viewset is nested under (raising NotFound), before
        anything reads the body. Nested viewsets override it (clusters: ClusterChildMixin)."""

    def operation_data(self, operation: Operation) -> dict:
        """An operation as every 202 answers it (with its absolute ``url`` and ``status_tool``)."""
        return OperationSerializer(operation, context=self.get_serializer_context()).data

    def initial(self, request, *args, **kwargs):
        self._idempotency_record = None
        super().initial(request, *args, **kwargs)
        # Another team's parent is a 404 before the body is read (a bad body is a 400 only where the
        # caller may see the object at all).
        self.resolve_parents()
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
