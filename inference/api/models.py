"""REST: a cluster's model downloads — start one (202) and list what was downloaded, with progress."""

from __future__ import annotations

from functools import cached_property

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from clusters.models import Cluster
from clusters.selectors import get_cluster
from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.serializers import OperationSerializer

from ..models import ModelDownload
from ..selectors import downloads_of, get_download
from ..serializers import ModelDownloadSerializer, ModelSerializer
from ..services import download_model

ACCEPTED = inline_serializer("DownloadAccepted", {"model": ModelSerializer(), "operation": OperationSerializer()})


class ModelViewSet(TeamViewSet):
    """Models and datasets downloaded from Hugging Face to the cluster's shared storage."""

    queryset = ModelDownload.objects.select_related("cluster")
    serializer_class = ModelSerializer

    @cached_property
    def cluster(self) -> Cluster:
        return get_cluster(self.access, self.kwargs["cluster_pk"])

    @extend_schema(
        responses={
            200: inline_serializer(
                "ModelList", {"count": serializers.IntegerField(), "results": ModelSerializer(many=True)}
            )
        }
    )
    def list(self, request, cluster_pk=None):
        """Every download of the cluster (newest first) with status, progress, uri and mount_path."""
        found = downloads_of(self.access, self.cluster)
        return Response({"count": len(found), "results": ModelSerializer(found, many=True).data})

    @extend_schema(responses={200: ModelSerializer})
    def retrieve(self, request, cluster_pk=None, pk=None):
        return Response(ModelSerializer(get_download(self.access, cluster_pk, pk)).data)

    @extend_schema(request=ModelDownloadSerializer, responses={202: ACCEPTED})
    def create(self, request, cluster_pk=None):
        """Download a model or dataset with a Kubernetes Job; the token (optional) becomes a Secret."""
        serializer = ModelDownloadSerializer(data=request.data, context={"cluster": self.cluster})
        serializer.is_valid(raise_exception=True)
        download, operation = download_model(
            access=self.access,
            cluster=self.cluster,
            data=serializer.validated_data,
            idempotency_key=self.idempotency_key,
        )
        body = {"model": ModelSerializer(download).data, "operation": self.operation_data(operation)}
        return Response(body, status=status.HTTP_202_ACCEPTED)
