"""REST routes of the clusters app (included under /api/v1/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .api import CatalogViewSet, ClusterViewSet, PreflightView

router = SimpleRouter(trailing_slash=True)
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("catalog", CatalogViewSet, basename="catalog")

urlpatterns = [path("preflight/", PreflightView.as_view(), name="preflight"), *router.urls]
