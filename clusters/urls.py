"""REST routes of the clusters app (included under /api/v1/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .api import CatalogViewSet, ClusterViewSet, PreflightView, StorageViewSet

router = SimpleRouter(trailing_slash=True)
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("catalog", CatalogViewSet, basename="catalog")

storage_list = StorageViewSet.as_view({"get": "list", "post": "create"})
storage_detail = StorageViewSet.as_view({"get": "retrieve", "delete": "destroy"})

urlpatterns = [
    path("preflight/", PreflightView.as_view(), name="preflight"),
    path("clusters/<uuid:cluster_pk>/storage/", storage_list, name="storage-list"),
    path("clusters/<uuid:cluster_pk>/storage/<uuid:pk>/", storage_detail, name="storage-detail"),
    *router.urls,
]
