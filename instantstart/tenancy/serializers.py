"""Validation of team settings, members and tokens — for REST, MCP and the portal alike."""

from __future__ import annotations

import functools
import re
from datetime import timedelta

import boto3
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import serializers

from .models import ApiToken, Cloud, Membership, Team
from .roles import Role, role_at_least

ROLE_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
EXTERNAL_ID = re.compile(r"^[\w+=,.@:/-]{2,1224}$")
INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")


@functools.cache
def known_regions() -> list[str]:
    """Regions where SageMaker (hence HyperPod) is offered, from botocore's endpoint data."""
    return sorted(boto3.session.Session().get_available_regions("sagemaker"))


def region_problem(value: str) -> str:
    """Why ``value`` is not a region to use ("" when SageMaker HyperPod is offered there)."""
    if value in known_regions():
        return ""
    return f"{value!r} is not an AWS region where SageMaker HyperPod is offered."


def check_region(value: str) -> str:
    """The region, when SageMaker HyperPod is offered there; else a validation error that says so."""
    if problem := region_problem(value):
        raise serializers.ValidationError(problem)
    return value


class RegionField(serializers.CharField):
    """A region where SageMaker HyperPod is offered: the one region check of every serializer."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", 32)
        kwargs.setdefault("validators", []).append(check_region)
        super().__init__(**kwargs)


class TeamSerializer(serializers.ModelSerializer):
    """Team and cloud settings. The external ID is write-only: only whether it is set shows."""

    aws_external_id = serializers.CharField(write_only=True, required=False, allow_blank=True)
    aws_external_id_set = serializers.SerializerMethodField()
    sandbox_account_id = serializers.CharField(read_only=True)
    default_region = RegionField(required=False)
    agent_approval_above = serializers.FloatField(
        min_value=0,
        max_value=10_000_000,
        required=False,
        allow_null=True,
        help_text="USD per hour: a change an agent token asks for through MCP whose estimated cost is above "
        "this waits for a team admin's approval. Null: no approval needed.",
    )
    price_overrides = serializers.DictField(
        child=serializers.FloatField(min_value=0, max_value=100_000),
        required=False,
        help_text="The team's prices, USD per instance-hour by instance type (ml.p5.48xlarge: 55.0), used for "
        "estimates instead of the shipped table.",
    )

    class Meta:
        model = Team
        fields = [
            "id",
            "slug",
            "name",
            "cloud",
            "aws_role_arn",
            "aws_external_id",
            "aws_external_id_set",
            "default_region",
            "sandbox_account_id",
            "agent_approval_above",
            "price_overrides",
            "created_at",
        ]
        read_only_fields = ["id", "slug", "created_at"]

    def validate_price_overrides(self, value: dict) -> dict:
        bad = [name for name in value if not INSTANCE_TYPE.match(name)]
        if bad:
            raise serializers.ValidationError(f"Not a SageMaker instance type: {', '.join(sorted(bad))}.")
        return value

    def get_aws_external_id_set(self, team: Team) -> bool:
        return bool(team.aws_external_id)

    def validate_aws_role_arn(self, value: str) -> str:
        if value and not ROLE_ARN.match(value):
            raise serializers.ValidationError(
                "Give an IAM role ARN like arn:aws:iam::123456789012:role/InstantStartControlPlane."
            )
        return value

    def validate_aws_external_id(self, value: str) -> str:
        if value and not EXTERNAL_ID.match(value):
            raise serializers.ValidationError("2 to 1224 characters: letters, digits and + = , . @ : / - _ only.")
        return value

    def validate(self, attrs: dict) -> dict:
        cloud = attrs.get("cloud", getattr(self.instance, "cloud", Cloud.SANDBOX))
        role_arn = attrs.get("aws_role_arn", getattr(self.instance, "aws_role_arn", ""))
        external_id = attrs.get("aws_external_id", getattr(self.instance, "aws_external_id", ""))
        if cloud == Cloud.AWS:
            errors = {}
            if not role_arn:
                errors["aws_role_arn"] = ["Required when the cloud is AWS: the role InstantStart assumes."]
            if not external_id:
                errors["aws_external_id"] = ["Required when the cloud is AWS: set it in the role's trust policy too."]
            if errors:
                raise serializers.ValidationError(errors)
        return attrs


class MemberInviteSerializer(serializers.Serializer):
    """A new user to create and add to the team (portal "Add a member", "create the user")."""

    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)

    def validate_username(self, value: str) -> str:
        field = get_user_model()._meta.get_field("username")
        for validator in field.validators:
            try:
                validator(value)
            except DjangoValidationError as exc:
                raise serializers.ValidationError(list(exc.messages)) from exc
        if get_user_model().objects.filter(username__iexact=value).exists():
            raise serializers.ValidationError(
                f"A user named {value!r} exists already: add them by username (leave the box unticked)."
            )
        return value


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Membership
        fields = ["id", "username", "role", "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate_username(self, value: str):
        if self.instance is not None and value != self.instance.user.username:
            raise serializers.ValidationError("A membership's user cannot change; remove it and add another.")
        return value

    def validate(self, attrs: dict) -> dict:
        if self.instance is None:
            username = attrs["user"]["username"]
            user = get_user_model().objects.filter(username=username, is_active=True).first()
            if user is None:
                raise serializers.ValidationError({"username": [f"No active user named {username!r}."]})
            team = self.context["team"]
            if Membership.objects.filter(team=team, user=user).exists():
                raise serializers.ValidationError({"username": [f"{username} is already a member of this team."]})
            attrs["user"] = user
        else:
            attrs.pop("user", None)
        return attrs


class ApiTokenSerializer(serializers.ModelSerializer):
    """A token as listed: never its secret."""

    username = serializers.CharField(source="user.username", read_only=True)
    is_active = serializers.BooleanField(read_only=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "role",
            "prefix",
            "username",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
            "is_active",
            "agent",
        ]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)
    expires_in_days = serializers.IntegerField(
        min_value=1,
        max_value=3650,
        required=False,
        allow_null=True,
        help_text="Days until the token expires; omit for a token that does not expire.",
    )
    agent = serializers.BooleanField(
        default=False,
        help_text="A token for an AI agent: its costly changes through MCP wait for a team admin's approval.",
    )

    def validate_role(self, value: str) -> str:
        membership_role = self.context["membership_role"]
        if not role_at_least(membership_role, value):
            raise serializers.ValidationError(
                f"A token cannot have more rights than its user: your role is {membership_role}."
            )
        return value

    def validate(self, attrs: dict) -> dict:
        days = attrs.pop("expires_in_days", None)
        attrs["expires_at"] = timezone.now() + timedelta(days=days) if days else None
        return attrs


class WhoAmISerializer(serializers.Serializer):
    username = serializers.CharField()
    team = serializers.CharField()
    team_name = serializers.CharField()
    role = serializers.CharField()
    via = serializers.CharField()
    token = serializers.CharField(allow_null=True)
