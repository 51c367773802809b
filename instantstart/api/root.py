"""GET /api/v1/: the API root — where the docs and the schema are, how to authenticate, and every
top-level resource (read from the URL configuration, so a new app's routes appear by themselves)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView


def _top_level(patterns, prefix: str = "") -> list[str]:
    """Routes without path parameters: the collections and the singletons."""
    found: list[str] = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
        if "<" in route or "(?P" in route or "\\" in route:
            continue
        if isinstance(pattern, URLResolver):
            found.extend(_top_level(pattern.url_patterns, route))
        elif isinstance(pattern, URLPattern) and route:
            found.append(route)
    return found


class ApiRootView(APIView):
    """Links to the API's docs, schema and top-level resources (no token needed to read it)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(exclude=True)
    def get(self, request):
        base = reverse("api:root")
        _, api = get_resolver().namespace_dict["api"]
        skip = {"", "schema/", "docs/"}
        resources = sorted({route for route in _top_level(api.url_patterns) if route not in skip})
        return Response(
            {
                "name": "InstantStart REST API v1",
                "docs": request.build_absolute_uri(reverse("api:docs")),
                "schema": request.build_absolute_uri(reverse("api:schema")),
                "authentication": "Authorization: Bearer <team token> (portal: Team & tokens; shell: "
                "manage.py create_token)",
                "resources": {
                    route.rstrip("/").replace("/", "_").replace("-", "_"): request.build_absolute_uri(base + route)
                    for route in resources
                },
            }
        )
