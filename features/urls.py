"""REST routes of the features app (included under /api/v1/)."""

from django.urls import path

from .api.features import FeatureViewSet

urlpatterns = [
    path(
        "clusters/<uuid:cluster_pk>/features/",
        FeatureViewSet.as_view({"get": "list", "patch": "partial_update"}),
        name="feature-list",
    ),
]
