from django.contrib import admin
from django.urls import include, path

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("instantstart.api.urls")),
    path("mcp/", include("agent_tools.urls")),
    path("", include("instantstart.portal.urls")),
]
