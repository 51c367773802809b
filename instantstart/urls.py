from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", RedirectView.as_view(url=static("instantstart/favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("api/v1/", include("instantstart.api.urls")),
    path("mcp/", include("agent_tools.urls")),
    path("", include("instantstart.portal.urls")),
]
