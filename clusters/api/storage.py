"""REST: a cluster's shared storage — S3 buckets and FSx file systems mounted as volumes + claims."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, status
from rest_framework.response import Response

from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.roles import Role

from ..models import Storage
from ..selectors import get_storage
from ..serializers import StorageAttachSerializer, StorageSerializer
from ..services import attach_storage, detach_storage
from .clusters import ClusterChildMixin


class StorageViewSet(ClusterChildMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """Shared storage of a cluster: S3 buckets and FSx file systems mounted as volumes + claims."""

    queryset = Storage.objects.select_related("cluster")
    serializer_class = StorageSerializer
    default_write_role = Role.ADMIN

    def get_queryset(self):
        return super().get_queryset().filter(cluster=self.cluster)

    def get_object(self) -> Storage:
        return get_storage(self.access, self.kwargs["cluster_pk"], self.kwargs["pk"])

    @extend_schema(
        request=StorageAttachSerializer,
        responses={
            202: inline_serializer(
                "StorageAttached", {"storage": StorageSerializer(), "operation": OperationSerializer()}
            )
        },
    )
    def create(self, request, cluster_pk=None):
        """Mount an existing S3 bucket or FSx file system (202 with `storage.attach`)."""
        serializer = StorageAttachSerializer(data=request.data, context={"cluster": self.cluster})
        serializer.is_valid(raise_exception=True)
        storage, operation = attach_storage(
            access=self.access,
            cluster=self.cluster,
            data=serializer.validated_data,
            idempotency_key=self.idempotency_key,
        )
        storage.refresh_from_db()
        body = {"storage": StorageSerializer(storage).data, "operation": self.operation_data(operation)}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={202: OperationSerializer})
    def destroy(self, request, cluster_pk=None, pk=None):
        """Unmount the storage (202 with `storage.detach`); the bucket or file system and its data stay."""
        operation = detach_storage(access=self.access, storage=self.get_object(), idempotency_key=self.idempotency_key)
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)
