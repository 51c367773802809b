"""Teams (the tenants), their members and their API tokens."""

from __future__ import annotations

import hashlib
import secrets
import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from .roles import Role, lower_role
from .visibility import TeamOwnedQuerySet

TOKEN_PREFIX = "ist_"


class Cloud(models.TextChoices):
    SANDBOX = "sandbox", "Sandbox (emulated AWS)"
    AWS = "aws", "AWS"


class Team(models.Model):
    """A tenant: owns clusters and everything on them; its cloud settings say where they live."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(
        max_length=50,
        unique=True,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9-]*$", "Use lowercase letters, digits and dashes.")],
    )
    name = models.CharField(max_length=100)
    cloud = models.CharField(max_length=10, choices=Cloud.choices, default=Cloud.SANDBOX)
    aws_role_arn = models.CharField("AWS role ARN", max_length=2048, blank=True)
    # The external ID guards the assumed role against the confused-deputy problem; it is
    # write-only on every face.
    aws_external_id = models.CharField("AWS external ID", max_length=1224, blank=True)
    default_region = models.CharField(max_length=32, default="us-west-2")
    # The human gate (agent_tools.approvals): a change an agent token asks for through MCP whose
    # estimated cost is above this (USD per hour) waits for a team admin. Null: off.
    agent_approval_above = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    # The team's own prices (instance type -> USD per instance-hour), over instantstart.pricing's table.
    price_overrides = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def sandbox_account_id(self) -> str:
        """The emulated AWS account of this team in the sandbox: 12 digits derived from its id."""
        return str(100000000000 + self.id.int % 900000000000)


class MembershipQuerySet(TeamOwnedQuerySet):
    pass


class Membership(models.Model):
    """A user's role in a team."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "team"],
                name="one_membership_per_user_and_team",
                violation_error_message="This user is already a member of the team.",
            )
        ]
        ordering = ["team__slug", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class ApiTokenQuerySet(TeamOwnedQuerySet):
    def active(self) -> ApiTokenQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


def hash_token(raw: str) -> str:
    # Tokens are 256-bit random strings, so a fast hash is safe (no dictionary to attack).
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A team-scoped bearer token. Only its hash and a visible prefix are stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    prefix = models.CharField(max_length=16, db_index=True, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Held by an AI agent: its costly changes through MCP wait for a team admin (agent_approval_above).
    agent = models.BooleanField(default=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def generate() -> tuple[str, str, str]:
        """A new raw token with its visible prefix and hash."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        return raw, raw[:12], hash_token(raw)

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    def effective_role(self, membership_role: str | None) -> str | None:
        """The token's role capped by its user's current membership (None when no longer a member)."""
        if membership_role is None:
            return None
        return lower_role(self.role, membership_role)


class OneTimePassword(models.Model):
    """A user a team admin invited with a password shown once: they must choose their own at first
    login (the portal sends them to the password change page until they do). Only the flag is kept;
    the password itself lives hashed on the user like any other."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="one_time_password"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", help_text="The team that invited.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user} must change the one-time password"
