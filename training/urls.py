"""REST routes of the training app (included under /api/v1/)."""

from django.urls import path

from .api.files import FileViewSet
from .api.jobs import JobViewSet

JOBS = "clusters/<uuid:cluster_pk>/jobs/"

urlpatterns = [
    path(JOBS, JobViewSet.as_view({"get": "list", "post": "create"}), name="job-list"),
    path(f"{JOBS}<str:pk>/", JobViewSet.as_view({"get": "retrieve", "delete": "destroy"}), name="job-detail"),
    path(f"{JOBS}<str:pk>/resubmit/", JobViewSet.as_view({"post": "resubmit"}), name="job-resubmit"),
    path(f"{JOBS}<str:pk>/logs/", JobViewSet.as_view({"get": "logs"}), name="job-logs"),
    path(f"{JOBS}<str:pk>/metrics/", JobViewSet.as_view({"get": "metrics"}), name="job-metrics"),
    path(
        "clusters/<uuid:cluster_pk>/files/",
        FileViewSet.as_view({"get": "list", "post": "create"}),
        name="file-list",
    ),
]
