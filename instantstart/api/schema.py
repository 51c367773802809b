"""OpenAPI descriptions of our authentication schemes (drf-spectacular extensions)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "instantstart.tenancy.authentication.BearerTokenAuthentication"
    name = "teamToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A team API token (`ist_…`) from the portal, `POST /api/v1/tokens/` or "
            "`manage.py create_token`.",
        }


class TeamSessionScheme(OpenApiAuthenticationExtension):
    target_class = "instantstart.tenancy.authentication.TeamSessionAuthentication"
    name = "portalSession"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "A portal login; acts for the team chosen in the portal.",
        }
