"""Operation and audit representations, shared by REST, MCP and the portal."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from .models import AuditEvent, Operation, OperationStatus, Phase
from .registry import get_kind

STATUS_TOOL = "get_operation"


class PhaseSerializer(serializers.ModelSerializer):
    title = serializers.SerializerMethodField()
    elapsed_seconds = serializers.FloatField(read_only=True, allow_null=True)  # null until it starts

    class Meta:
        model = Phase
        fields = [
            "index",
            "name",
            "title",
            "status",
            "attempts",
            "message",
            "state",
            "started_at",
            "finished_at",
            "elapsed_seconds",
        ]

    def get_title(self, phase: Phase) -> str:
        try:
            step = get_kind(phase.operation.kind).step(phase.name)
        except KeyError:
            return phase.name
        return step.title or phase.name


class OperationSerializer(serializers.ModelSerializer):
    phases = PhaseSerializer(many=True, read_only=True)
    target = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    url = serializers.SerializerMethodField()
    status_tool = serializers.SerializerMethodField()
    elapsed_seconds = serializers.FloatField(read_only=True, allow_null=True)  # null until it starts
    can_retry = serializers.BooleanField(read_only=True)
    can_cancel = serializers.BooleanField(read_only=True)

    class Meta:
        model = Operation
        fields = [
            "id",
            "kind",
            "status",
            "target",
            "requested_by",
            "via",
            "params",
            "phases",
            "error",
            "cancel_requested",
            "can_retry",
            "can_cancel",
            "created_at",
            "started_at",
            "finished_at",
            "elapsed_seconds",
            "url",
            "status_tool",
        ]

    def get_target(self, op: Operation) -> dict | None:
        if not op.target_id:
            return None
        return {"type": op.target_type.model if op.target_type else "", "id": op.target_id, "name": op.target_repr}

    def get_error(self, op: Operation) -> dict | None:
        if not op.error_code and op.status != OperationStatus.FAILED:
            return None
        return {"code": op.error_code, "message": op.error_message, "hint": op.error_hint}

    def get_url(self, op: Operation) -> str:
        path = reverse("api:operation-detail", args=[op.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def get_status_tool(self, op: Operation) -> str:
        return STATUS_TOOL


class OperationFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=OperationStatus.choices, required=False)
    kind = serializers.CharField(required=False, max_length=64)
    target = serializers.CharField(required=False, max_length=64, help_text="The target object's id.")


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)
    token = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor",
            "token",
            "via",
            "action",
            "target_type",
            "target_id",
            "target_repr",
            "summary",
            "operation",
        ]

    def get_token(self, event: AuditEvent) -> str | None:
        return f"{event.token.name} ({event.token.prefix}…)" if event.token_id else None
