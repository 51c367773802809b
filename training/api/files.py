"""REST: the team's shared bucket of a cluster (mounted at /s3 in pods) — list and upload."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from clusters.api.clusters import ClusterChildMixin
from clusters.models import Cluster
from instantstart.api.viewsets import TeamViewSet

from ..readers.files import list_files
from ..serializers import FilesQuerySerializer, FileUploadSerializer
from ..serializers.queries import parse_query
from ..services import upload_file

FILE = inline_serializer(
    "SharedFile",
    {
        "path": serializers.CharField(),
        "size": serializers.IntegerField(),
        "modified": serializers.CharField(),
        "mount_path": serializers.CharField(),
    },
)
UPLOADED = inline_serializer(
    "SharedFileUploaded",
    {"path": serializers.CharField(), "size": serializers.IntegerField(), "mount_path": serializers.CharField()},
)


class FileViewSet(ClusterChildMixin, TeamViewSet):
    """Objects of the team's shared bucket; a file uploaded here is at /s3/<path> in every job's pods."""

    queryset = Cluster.objects.none()
    pagination_class = None
    parser_classes = [MultiPartParser]  # a file upload: multipart only

    @extend_schema(
        parameters=[FilesQuerySerializer],
        responses=inline_serializer("SharedFiles", {"results": serializers.ListField(child=FILE)}),
    )
    def list(self, request, cluster_pk=None):
        """Files under `prefix` (path, size, modified, mount_path)."""
        prefix = parse_query(FilesQuerySerializer, request.query_params)["prefix"]
        return Response({"results": list_files(self.cluster, prefix)})

    @extend_schema(request=FileUploadSerializer, responses={201: UPLOADED})
    def create(self, request, cluster_pk=None):
        """Upload one file (multipart: file, path relative to the bucket root) → 201 {path, size, mount_path}."""
        cluster = self.cluster  # another team's cluster is a 404 before the body is looked at
        serializer = FileUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        body = upload_file(access=self.access, cluster=cluster, path=data["path"], upload=data["file"])
        return Response(body, status=status.HTTP_201_CREATED)
