"""Every public REST action is a tool, or is listed here with the reason it is not one.

``uncovered()`` walks the URLconf (the same walk that binds tools to their routes) and names each
routed DRF action that no registered tool dispatches into and that ``NOT_FOR_AGENTS`` does not
exempt; the completeness test fails on any. An app adding an endpoint therefore adds its tool (in
its ``tools.py``) or a line here saying why an agent must not have it.
"""

from __future__ import annotations

from django.apps import apps
from django.urls import get_resolver

from .registry import Registry, registry
from .routes import _routes

# "module.View.action" (action "-" for a plain APIView's method) → why it is not an agent tool.
NOT_FOR_AGENTS: dict[str, str] = {
    "instantstart.api.root.ApiRootView.get": "Links to the API's docs, schema and resources for people browsing "
    "the API; an agent gets every capability from tools/list.",
    "drf_spectacular.views.SpectacularAPIView.get": "The OpenAPI document describes the REST API for people "
    "and code generators; tools/list already gives an agent every tool's schema.",
    "drf_spectacular.views.SpectacularSwaggerSplitView.get": "An HTML page for people (Swagger UI), not data.",
    "instantstart.tenancy.api.ApiTokenViewSet.create": "It answers a new credential's secret, which would land in "
    "the agent's transcript; a person creates tokens (portal, REST or manage.py create_token). An agent can "
    "list and revoke them.",
    "agent_tools.api.ApprovalViewSet.approve": "The human gate: an agent must not approve its own costly change; "
    "a team admin approves in the portal or over REST.",
    "agent_tools.api.ApprovalViewSet.reject": "The human gate's decision belongs to a team admin (portal or REST); "
    "an agent that no longer wants the change simply does not wait on it.",
    "training.api.files.FileViewSet.create": "A multipart file upload: a tool's arguments are JSON an agent writes, "
    "and a file's bytes do not belong in its context. Upload in the portal or over REST; list_files shows the "
    "result and recipes read files already on the cluster's storage.",
    "instantstart.tenancy.api.MembershipViewSet.update": "PUT is not served (http_method_names); "
    "change_member_role is the PATCH.",
}


def action_key(view: type, action: str | None, method: str) -> str:
    return f"{view.__module__}.{view.__qualname__}.{action or method}"


def public_actions() -> list[tuple[type, str | None, str]]:
    """(view, action, method) of every DRF action the URLconf routes and the view serves."""
    found = []
    for view, action, route in _routes(get_resolver()):
        if route.method not in getattr(view, "http_method_names", ()):
            continue
        found.append((view, action, route.method))
    return found


def uncovered(tools: Registry = registry) -> list[str]:
    """The REST actions with neither a tool nor a reason in NOT_FOR_AGENTS ("module.View.action METHOD")."""
    covered = {(tool.view, tool.action) for tool in tools}
    missing = []
    for view, action, method in public_actions():
        if (view, action) in covered or action_key(view, action, method) in NOT_FOR_AGENTS:
            continue
        missing.append(f"{action_key(view, action, method)} {method.upper()}")
    return missing


def stale_exemptions() -> list[str]:
    """Entries of NOT_FOR_AGENTS that name no routed action any more (so the list stays true).

    Entries of apps this deployment does not install (an app merged separately) are not judged.
    """
    routed = {action_key(view, action, method) for view, action, method in _all_routed()}
    installed = {config.name.split(".")[0] for config in apps.get_app_configs()}
    return sorted(key for key in NOT_FOR_AGENTS if key not in routed and key.split(".")[0] in installed)


def _all_routed() -> list[tuple[type, str | None, str]]:
    return [(view, action, route.method) for view, action, route in _routes(get_resolver())]
