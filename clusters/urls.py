"""REST routes of the clusters app (included under /api/v1/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .api.catalog import CatalogViewSet, PreflightView
from .api.clusters import ClusterViewSet
from .api.groups import InstanceGroupViewSet
from .api.nodes import ClusterDiagnosisViewSet, NodeViewSet
from .api.storage import StorageViewSet

router = SimpleRouter(trailing_slash=True)
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("catalog", CatalogViewSet, basename="catalog")

storage_list = StorageViewSet.as_view({"get": "list", "post": "create"})
storage_detail = StorageViewSet.as_view({"get": "retrieve", "delete": "destroy"})

urlpatterns = [
    path("preflight/", PreflightView.as_view(), name="preflight"),
    path("clusters/<uuid:cluster_pk>/storage/", storage_list, name="storage-list"),
    path("clusters/<uuid:cluster_pk>/storage/<uuid:pk>/", storage_detail, name="storage-detail"),
    path(
        "clusters/<uuid:cluster_pk>/instance-groups/",
        InstanceGroupViewSet.as_view({"get": "list", "post": "create"}),
        name="instancegroup-list",
    ),
    path(
        "clusters/<uuid:cluster_pk>/instance-groups/<str:name>/",
        InstanceGroupViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="instancegroup-detail",
    ),
    path("clusters/<uuid:cluster_pk>/nodes/", NodeViewSet.as_view({"get": "list"}), name="node-list"),
    path("clusters/<uuid:cluster_pk>/nodes/<str:node>/", NodeViewSet.as_view({"get": "retrieve"}), name="node-detail"),
    path(
        "clusters/<uuid:cluster_pk>/nodes/<str:node>/reboot/",
        NodeViewSet.as_view({"post": "reboot"}),
        name="node-reboot",
    ),
    path(
        "clusters/<uuid:cluster_pk>/nodes/<str:node>/replace/",
        NodeViewSet.as_view({"post": "replace"}),
        name="node-replace",
    ),
    path(
        "clusters/<uuid:cluster_pk>/nodes/<str:node>/delete/",
        NodeViewSet.as_view({"post": "delete_node"}),
        name="node-delete",
    ),
    path(
        "clusters/<uuid:cluster_pk>/nodes/<str:node>/diagnosis/",
        NodeViewSet.as_view({"get": "diagnosis"}),
        name="node-diagnosis",
    ),
    path(
        "clusters/<uuid:cluster_pk>/diagnosis/",
        ClusterDiagnosisViewSet.as_view({"get": "list"}),
        name="cluster-diagnosis",
    ),
    *router.urls,
]
