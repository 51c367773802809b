"""The one role gate for REST and MCP: a viewset names the role each action needs."""

from __future__ import annotations

from rest_framework import permissions

from .access import Access
from .roles import Role


def required_role(view) -> str:
    """`view.action_roles` maps action names to roles; reads need viewer, writes member."""
    action = getattr(view, "action", None)
    roles = getattr(view, "action_roles", {})
    if action in roles:
        return roles[action]
    if view.request.method in permissions.SAFE_METHODS:
        return Role.VIEWER
    return getattr(view, "default_write_role", Role.MEMBER)


class TeamRolePermission(permissions.BasePermission):
    message = "Your role in this team does not allow this action."

    def has_permission(self, request, view) -> bool:
        access = request.auth
        if not isinstance(access, Access):
            return False
        needed = required_role(view)
        if not access.can(needed):
            self.message = f"This action needs the {needed} role; you have {access.role}."
            return False
        return True
