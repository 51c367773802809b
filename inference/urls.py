"""REST routes of the inference app (included under /api/v1/)."""

from django.urls import path

from .api.endpoints import EndpointViewSet
from .api.models import ModelViewSet

BASE = "clusters/<uuid:cluster_pk>"

urlpatterns = [
    path(
        f"{BASE}/endpoints/",
        EndpointViewSet.as_view({"get": "list", "post": "create"}),
        name="endpoint-list",
    ),
    path(
        f"{BASE}/endpoints/<str:name>/",
        EndpointViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="endpoint-detail",
    ),
    path(f"{BASE}/endpoints/<str:name>/invoke/", EndpointViewSet.as_view({"post": "invoke"}), name="endpoint-invoke"),
    path(
        f"{BASE}/endpoints/<str:name>/workers/<str:pod>/assign/",
        EndpointViewSet.as_view({"post": "assign"}),
        name="endpoint-assign",
    ),
    path(f"{BASE}/models/", ModelViewSet.as_view({"get": "list", "post": "create"}), name="model-list"),
    path(f"{BASE}/models/<uuid:pk>/", ModelViewSet.as_view({"get": "retrieve"}), name="model-detail"),
]
