"""Who is acting, for which team, with which role, through which face."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .roles import role_at_least

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from .models import ApiToken, Team


class Via:
    UI = "ui"
    API = "api"
    MCP = "mcp"
    ADMIN = "admin"
    SYSTEM = "system"
    CHOICES = [(UI, "Portal"), (API, "REST API"), (MCP, "MCP"), (ADMIN, "Admin"), (SYSTEM, "System")]


# A WSGI/ASGI environ key (never a header, so a client cannot set it) by which the MCP server
# marks the requests it dispatches into the viewsets.
VIA_ENVIRON_KEY = "instantstart.via"


@dataclass(frozen=True)
class Access:
    """The caller of one request: resolved once by authentication, used by every check."""

    user: AbstractBaseUser | None
    team: Team
    role: str
    via: str
    token: ApiToken | None = None

    def can(self, needed_role: str) -> bool:
        return role_at_least(self.role, needed_role)
