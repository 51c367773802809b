"""/api/v1/: every team-facing REST endpoint."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from agent_tools.api import ApprovalViewSet
from instantstart.operations.api import AuditEventViewSet, OperationViewSet
from instantstart.tenancy.api import ApiTokenViewSet, MembershipViewSet, TeamSettingsViewSet, WhoAmIView

from .root import ApiRootView

app_name = "api"

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("operations", OperationViewSet, basename="operation")
router.register("audit-events", AuditEventViewSet, basename="auditevent")
router.register("tokens", ApiTokenViewSet, basename="token")
router.register("team/members", MembershipViewSet, basename="member")
router.register("approvals", ApprovalViewSet, basename="approval")

team_settings = TeamSettingsViewSet.as_view({"get": "retrieve", "patch": "partial_update"})

urlpatterns = [
    path("", ApiRootView.as_view(), name="root"),
    path("whoami/", WhoAmIView.as_view(), name="whoami"),
    path("team/", team_settings, name="team"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("", include(router.urls)),
    path("", include("clusters.urls")),
    path("", include("features.urls")),
    path("", include("inference.urls")),
    path("", include("training.urls")),
]
