"""Approvals as every face shows them."""

from __future__ import annotations

from rest_framework import serializers

from .models import Approval


class ApprovalOperationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField()
    status = serializers.CharField()


class ApprovalSerializer(serializers.ModelSerializer):
    """A held change: the tool and arguments, the estimate, who asked, who decided, what it started."""

    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    token = serializers.SerializerMethodField()
    operation = ApprovalOperationSerializer(read_only=True, allow_null=True)

    class Meta:
        model = Approval
        fields = [
            "id",
            "status",
            "tool",
            "arguments",
            "estimate",
            "requested_by",
            "token",
            "created_at",
            "decided_by",
            "decided_at",
            "reason",
            "executed_at",
            "result_status",
            "operation",
        ]
        read_only_fields = fields

    def get_token(self, approval: Approval) -> str | None:
        token = approval.token
        return f"{token.name} ({token.prefix}…)" if token is not None else None


class ApprovalDecisionSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="", help_text="Why, for the audit trail."
    )


class ApprovalFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["pending", "approved", "rejected"], required=False, help_text="Keep only approvals in this status."
    )
