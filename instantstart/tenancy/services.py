"""Writes to teams, members and tokens. Every one leaves an audit event."""

from __future__ import annotations

import secrets
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from instantstart.cloud.aws import deploy_sandbox_role
from instantstart.errors import StateConflict
from instantstart.operations.audit import record_audit

from .access import Access, Via
from .models import ApiToken, Membership, OneTimePassword, Team
from .roles import Role


class LastAdminError(StateConflict):
    """The change would leave the team without an admin (409 on every face)."""


def update_team(*, access: Access, team: Team, changes: dict) -> Team:
    """Change team and cloud settings. A sandbox team's new external ID goes into its role's trust
    policy too (what the platform engineer does in AWS)."""
    with transaction.atomic():
        for field, value in changes.items():
            setattr(team, field, value)
        team.save()
        record_audit(access=access, action="team.update", target=team, summary=changes)
        if {"aws_external_id", "cloud"} & set(changes):
            transaction.on_commit(lambda: deploy_sandbox_role(team))
    return team


def create_token(
    *, access: Access, user, name: str, role: str, expires_at: datetime | None = None, agent: bool = False
) -> tuple[ApiToken, str]:
    """Create a token for ``user`` in the caller's team; returns it with the raw secret (shown once)."""
    raw, prefix, digest = ApiToken.generate()
    with transaction.atomic():
        token = ApiToken.objects.create(
            team=access.team,
            user=user,
            name=name,
            role=role,
            prefix=prefix,
            token_hash=digest,
            expires_at=expires_at,
            agent=agent,
        )
        record_audit(
            access=access, action="token.create", target=token, summary={"name": name, "role": role, "agent": agent}
        )
    return token, raw


def revoke_token(*, access: Access, token: ApiToken) -> ApiToken:
    """Revoke a token at once. Revoking twice changes nothing."""
    if token.revoked_at is None:
        with transaction.atomic():
            ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
            token.refresh_from_db()
            record_audit(access=access, action="token.revoke", target=token, summary={"name": token.name})
    return token


def _guard_last_admin(team: Team, membership: Membership, new_role: str | None) -> None:
    if membership.role != Role.ADMIN or new_role == Role.ADMIN:
        return
    if not Membership.objects.filter(team=team, role=Role.ADMIN).exclude(pk=membership.pk).exists():
        raise LastAdminError("A team needs at least one admin: make someone else admin first.")


def add_member(*, access: Access, user, role: str) -> Membership:
    with transaction.atomic():
        membership = Membership.objects.create(team=access.team, user=user, role=role)
        record_audit(
            access=access, action="member.add", target=membership, summary={"user": user.username, "role": role}
        )
    return membership


def invite_member(*, access: Access, username: str, role: str) -> tuple[Membership, str]:
    """Create a new user with a one-time password and add them to the team. Returns the membership
    and the password (shown to the admin once; the user must change it at first login)."""
    password = secrets.token_urlsafe(12)
    with transaction.atomic():
        user = get_user_model().objects.create_user(username=username, password=password)
        OneTimePassword.objects.create(user=user, team=access.team)
        membership = Membership.objects.create(team=access.team, user=user, role=role)
        record_audit(access=access, action="member.invite", target=membership, summary={"user": username, "role": role})
    return membership, password


def must_change_password(user) -> bool:
    """Whether the user still has the one-time password an admin's invite gave them."""
    return OneTimePassword.objects.filter(user=user).exists()


def password_changed(user) -> None:
    """The user chose their own password: the one-time one is gone, and with it the obligation."""
    OneTimePassword.objects.filter(user=user).delete()


def change_member_role(*, access: Access, membership: Membership, role: str) -> Membership:
    with transaction.atomic():
        _guard_last_admin(access.team, membership, role)
        membership.role = role
        membership.save(update_fields=["role"])
        record_audit(access=access, action="member.role", target=membership, summary={"role": role})
    return membership


def remove_member(*, access: Access, membership: Membership) -> None:
    with transaction.atomic():
        _guard_last_admin(access.team, membership, None)
        record_audit(
            access=access,
            action="member.remove",
            target=membership,
            summary={"user": membership.user.username},
        )
        membership.delete()


def ensure_team_member(*, team_slug: str, username: str, role: str, team_name: str | None = None):
    """Create the team, the user and the membership when missing (for the command line).

    An existing membership keeps its role unless the requested role is higher.
    """
    with transaction.atomic():
        team, _ = Team.objects.get_or_create(slug=team_slug, defaults={"name": team_name or team_slug})
        user, _ = get_user_model().objects.get_or_create(username=username)
        membership, created = Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
        if not created and membership.role != role:
            from .roles import role_at_least

            if not role_at_least(membership.role, role):
                membership.role = role
                membership.save(update_fields=["role"])
    return team, user, membership


def system_access(team: Team, user=None) -> Access:
    """Access for work the system does itself (commands, scheduled jobs)."""
    return Access(user=user, team=team, role=Role.ADMIN, via=Via.SYSTEM)
