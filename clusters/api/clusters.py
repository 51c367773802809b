"""REST: the team's clusters — create, read, zone change, delete, activate, import, drift, reconcile."""

from __future__ import annotations

from functools import cached_property

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.models import Operation
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.roles import Role

from ..models import Cluster
from ..readers.drift import cluster_drift
from ..readers.importable import importable_clusters
from ..selectors import get_cluster
from ..serializers import (
    ClusterCreateSerializer,
    ClusterImportSerializer,
    ClusterSerializer,
    ClusterZoneChangeSerializer,
)
from ..serializers.queries import ClusterDeleteQuerySerializer, ImportableQuerySerializer, parse_query
from ..services import (
    change_zone,
    create_cluster,
    delete_cluster,
    import_cluster,
    reconcile_cluster,
    set_active_cluster,
)

ACCEPTED = inline_serializer("ClusterAccepted", {"cluster": ClusterSerializer(), "operation": OperationSerializer()})
FORGOTTEN = inline_serializer(
    "ClusterForgotten", {"forgotten": serializers.BooleanField(), "cluster": serializers.UUIDField()}
)
DICTS = serializers.ListField(child=serializers.DictField())


class ClusterChildMixin:
    """A resource nested under /clusters/{cluster_pk}/: the cluster is the caller's, or a 404."""

    @cached_property
    def cluster(self) -> Cluster:
        return get_cluster(self.access, self.kwargs["cluster_pk"])

    def resolve_parents(self) -> None:
        self.cluster  # noqa: B018 - another team's cluster is a 404 before the body is read


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The team's clusters. Creating and deleting start operations (202); poll them with get_operation."""

    queryset = Cluster.objects.prefetch_related("instance_groups", "storages")
    serializer_class = ClusterSerializer
    default_write_role = Role.ADMIN
    action_roles = {"activate": Role.VIEWER, "drift": Role.VIEWER, "importable": Role.VIEWER}

    def get_object(self) -> Cluster:
        return get_cluster(self.access, self.kwargs["pk"])

    def _data(self, cluster: Cluster) -> dict:
        return ClusterSerializer(cluster, context=self.get_serializer_context()).data

    def _accepted(self, cluster: Cluster, operation: Operation) -> Response:
        cluster.refresh_from_db()
        body = {"cluster": self._data(cluster), "operation": self.operation_data(operation)}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=ClusterCreateSerializer, responses={202: ACCEPTED})
    def create(self, request):
        """Create a cluster from decision-level inputs: region, zone, instance groups, storage."""
        serializer = ClusterCreateSerializer(data=request.data, context={"access": self.access})
        serializer.is_valid(raise_exception=True)
        cluster, operation, _ = create_cluster(
            access=self.access, data=serializer.validated_data, idempotency_key=self.idempotency_key
        )
        return self._accepted(cluster, operation)

    @extend_schema(parameters=[ClusterDeleteQuerySerializer], responses={200: FORGOTTEN, 202: ACCEPTED})
    def destroy(self, request, pk=None):
        """Tear the cluster down in reverse order (202, `cluster.delete`); an imported one is only forgotten (200)."""
        cluster = self.get_object()
        force = parse_query(ClusterDeleteQuerySerializer, request.query_params)["force"]
        operation = delete_cluster(
            access=self.access, cluster=cluster, force=force, idempotency_key=self.idempotency_key
        )
        if operation is None:
            return Response({"forgotten": True, "cluster": str(cluster.pk)}, status=status.HTTP_200_OK)
        return self._accepted(cluster, operation)

    @extend_schema(request=ClusterZoneChangeSerializer, responses=ClusterSerializer)
    def partial_update(self, request, pk=None):
        """Move a failed cluster to another zone before retrying its operation (the only change allowed)."""
        cluster = self.get_object()
        serializer = ClusterZoneChangeSerializer(data=request.data, context={"cluster": cluster})
        serializer.is_valid(raise_exception=True)
        changed = change_zone(access=self.access, cluster=cluster, zone=serializer.validated_data["availability_zone"])
        data = self._data(self.get_object())  # fresh groups, not the ones read before the change
        return Response(data if changed else {"changed": False, **data})

    @extend_schema(request=None, responses=ClusterSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request, pk=None):
        """Make this the caller's active cluster: workload pages and tools default to it."""
        return Response(self._data(set_active_cluster(access=self.access, cluster=self.get_object())))

    @extend_schema(
        parameters=[ImportableQuerySerializer],
        responses=inline_serializer("Importable", {"results": DICTS}),
    )
    @action(detail=False, methods=["get"])
    def importable(self, request):
        """EKS clusters (with their HyperPod cluster) in the team's account that InstantStart does not manage."""
        region = parse_query(ImportableQuerySerializer, request.query_params)["region"]
        return Response({"results": importable_clusters(self.access, region)})

    @extend_schema(
        request=ClusterImportSerializer,
        responses={202: ACCEPTED},
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_cluster(self, request):
        """Adopt an existing EKS (+ HyperPod) cluster without recreating it: 202 with `cluster.import`."""
        serializer = ClusterImportSerializer(data=request.data, context={"access": self.access})
        serializer.is_valid(raise_exception=True)
        cluster, operation = import_cluster(
            access=self.access, idempotency_key=self.idempotency_key, **serializer.validated_data
        )
        return self._accepted(cluster, operation)

    @extend_schema(responses=inline_serializer("Drift", {"in_sync": serializers.BooleanField(), "differences": DICTS}))
    @action(detail=True, methods=["get"])
    def drift(self, request, pk=None):
        """Where the actual state in AWS/Kubernetes differs from what InstantStart recorded. Reads only."""
        differences = cluster_drift(self.get_object())
        return Response({"in_sync": not differences, "differences": differences})

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def reconcile(self, request, pk=None):
        """Record the actual state and put back missing manifests and volumes (202 with `cluster.reconcile`)."""
        operation = reconcile_cluster(
            access=self.access, cluster=self.get_object(), idempotency_key=self.idempotency_key
        )
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)
