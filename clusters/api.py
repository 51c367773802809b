"""REST: clusters, the catalog (check before create) and preflight."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from instantstart.api.errors import Conflict
from instantstart.api.viewsets import TeamViewSet
from instantstart.cloud.aws import team_cloud
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.roles import Role
from instantstart.tenancy.serializers import known_regions

from . import catalog
from .adoption import importable_clusters
from .api_base import ClusterChildMixin
from .drift import cluster_drift
from .models import Cluster, ClusterStatus, Storage
from .preflight import run_preflight
from .serializers import (
    ClusterCreateSerializer,
    ClusterImportSerializer,
    ClusterSerializer,
    ClusterZoneChangeSerializer,
    StorageAttachSerializer,
    StorageSerializer,
)
from .services import (
    ClusterStateError,
    attach_storage,
    change_zone,
    create_cluster,
    delete_cluster,
    detach_storage,
    forget_cluster,
    import_cluster,
    reconcile_cluster,
    set_active_cluster,
)


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The team's clusters. Creating and deleting start operations (202); poll them with get_operation."""

    queryset = Cluster.objects.exclude(status=ClusterStatus.DELETED).prefetch_related("instance_groups", "storages")
    serializer_class = ClusterSerializer
    default_write_role = Role.ADMIN
    action_roles = {"activate": Role.VIEWER, "drift": Role.VIEWER, "importable": Role.VIEWER}

    def _accepted(self, cluster: Cluster, operation) -> Response:
        cluster.refresh_from_db()
        return Response(
            {
                "cluster": ClusterSerializer(cluster, context=self.get_serializer_context()).data,
                "operation": OperationSerializer(operation, context=self.get_serializer_context()).data,
            },
            status=status.HTTP_202_ACCEPTED,
        )

    @extend_schema(
        request=ClusterCreateSerializer,
        responses={
            202: inline_serializer(
                "ClusterAccepted", {"cluster": ClusterSerializer(), "operation": OperationSerializer()}
            )
        },
    )
    def create(self, request):
        """Create a cluster from decision-level inputs: region, zone, instance groups, storage."""
        serializer = ClusterCreateSerializer(data=request.data, context={"access": self.access})
        serializer.is_valid(raise_exception=True)
        cluster, operation, _ = create_cluster(
            access=self.access, data=serializer.validated_data, idempotency_key=self.idempotency_key
        )
        return self._accepted(cluster, operation)

    @extend_schema(
        parameters=[OpenApiParameter("force", bool, description="Delete even while an operation runs.")],
        responses={202: OperationSerializer},
    )
    def destroy(self, request, pk=None):
        """Tear the cluster down in reverse order (202 with the `cluster.delete` operation)."""
        cluster = self.get_object()
        if not cluster.managed:
            forget_cluster(access=self.access, cluster=cluster)
            return Response({"forgotten": True, "cluster": str(cluster.pk)}, status=status.HTTP_200_OK)
        force = request.query_params.get("force", "").lower() in ("1", "true", "yes")
        try:
            operation = delete_cluster(
                access=self.access, cluster=cluster, force=force, idempotency_key=self.idempotency_key
            )
        except ClusterStateError as exc:
            raise Conflict(str(exc))
        return self._accepted(cluster, operation)

    @extend_schema(request=ClusterZoneChangeSerializer, responses=ClusterSerializer)
    def partial_update(self, request, pk=None):
        """Move a failed cluster to another zone before retrying its operation (the only change allowed)."""
        cluster = self.get_object()
        immutable = sorted(set(request.data) - {"availability_zone"})
        if immutable:
            raise serializers.ValidationError(
                {field: ["This field cannot be changed after create."] for field in immutable}
            )
        serializer = ClusterZoneChangeSerializer(data=request.data, context={"cluster": cluster})
        serializer.is_valid(raise_exception=True)
        zone = serializer.validated_data["availability_zone"]
        if zone == cluster.availability_zone:
            data = ClusterSerializer(cluster, context=self.get_serializer_context()).data
            return Response({"changed": False, **data})
        try:
            change_zone(access=self.access, cluster=cluster, zone=zone)
        except ClusterStateError as exc:
            raise Conflict(str(exc))
        cluster = self.get_queryset().get(pk=cluster.pk)  # fresh groups, not the prefetched ones
        return Response(ClusterSerializer(cluster, context=self.get_serializer_context()).data)

    @extend_schema(request=None, responses=ClusterSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request, pk=None):
        """Make this the caller's active cluster: workload pages and tools default to it."""
        cluster = set_active_cluster(access=self.access, cluster=self.get_object())
        return Response(ClusterSerializer(cluster, context=self.get_serializer_context()).data)

    @extend_schema(
        parameters=[OpenApiParameter("region", str, required=True)],
        responses=inline_serializer("Importable", {"results": serializers.ListField(child=serializers.DictField())}),
    )
    @action(detail=False, methods=["get"])
    def importable(self, request):
        """EKS clusters (with their HyperPod cluster) in the team's account that InstantStart does not manage."""
        query = RegionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        region = query.validated_data["region"]
        return Response(
            {"results": importable_clusters(self.access.team, team_cloud(self.access.team, region), region)}
        )

    @extend_schema(
        request=ClusterImportSerializer,
        responses={
            202: inline_serializer(
                "ClusterImported", {"cluster": ClusterSerializer(), "operation": OperationSerializer()}
            )
        },
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

    @extend_schema(
        responses=inline_serializer(
            "Drift",
            {
                "in_sync": serializers.BooleanField(),
                "differences": serializers.ListField(child=serializers.DictField()),
            },
        )
    )
    @action(detail=True, methods=["get"])
    def drift(self, request, pk=None):
        """Where the actual state in AWS/Kubernetes differs from what InstantStart recorded. Reads only."""
        differences = cluster_drift(self.get_object())
        return Response({"in_sync": not differences, "differences": differences})

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def reconcile(self, request, pk=None):
        """Record the actual state and put back missing manifests and volumes (202 with `cluster.reconcile`)."""
        cluster = self.get_object()
        try:
            operation = reconcile_cluster(access=self.access, cluster=cluster, idempotency_key=self.idempotency_key)
        except ClusterStateError as exc:
            raise Conflict(str(exc))
        return Response(
            OperationSerializer(operation, context=self.get_serializer_context()).data, status=status.HTTP_202_ACCEPTED
        )


class StorageViewSet(ClusterChildMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """Shared storage of a cluster: S3 buckets and FSx file systems mounted as volumes + claims."""

    queryset = Storage.objects.exclude(status="detached").select_related("cluster")
    serializer_class = StorageSerializer
    team_field = "cluster__team"
    default_write_role = Role.ADMIN

    def get_queryset(self):
        return super().get_queryset().filter(cluster=self.cluster)

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
        return Response(
            {
                "storage": StorageSerializer(storage).data,
                "operation": OperationSerializer(operation, context=self.get_serializer_context()).data,
            },
            status=status.HTTP_202_ACCEPTED,
        )

    @extend_schema(responses={202: OperationSerializer})
    def destroy(self, request, cluster_pk=None, pk=None):
        """Unmount the storage (202 with `storage.detach`); the bucket or file system and its data stay."""
        operation = detach_storage(access=self.access, storage=self.get_object(), idempotency_key=self.idempotency_key)
        return Response(
            OperationSerializer(operation, context=self.get_serializer_context()).data, status=status.HTTP_202_ACCEPTED
        )


class RegionQuerySerializer(serializers.Serializer):
    region = serializers.CharField(max_length=32)
    availability_zone = serializers.CharField(max_length=32, required=False)

    def validate_region(self, value: str) -> str:
        if value not in known_regions():
            raise serializers.ValidationError(f"{value!r} is not a region where SageMaker HyperPod is offered.")
        return value


class CatalogViewSet(TeamViewSet):
    """Check before create: what the team's account offers in a region."""

    queryset = Cluster.objects.none()

    def _query(self) -> dict:
        query = RegionQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data

    @extend_schema(
        parameters=[RegionQuerySerializer],
        responses=inline_serializer("Zones", {"results": serializers.ListField(child=serializers.DictField())}),
    )
    @action(detail=False, methods=["get"], url_path="availability-zones")
    def availability_zones(self, request):
        query = self._query()
        cloud = team_cloud(self.access.team, query["region"])
        return Response({"results": catalog.availability_zones(cloud, query["region"])})

    @extend_schema(
        parameters=[RegionQuerySerializer],
        responses=inline_serializer("InstanceTypes", {"results": serializers.ListField(child=serializers.DictField())}),
    )
    @action(detail=False, methods=["get"], url_path="instance-types")
    def instance_types(self, request):
        query = self._query()
        cloud = team_cloud(self.access.team, query["region"])
        types = catalog.instance_types(cloud, query["region"], query.get("availability_zone"))
        return Response({"results": [t.as_dict() for t in types]})

    @extend_schema(
        parameters=[RegionQuerySerializer],
        responses=inline_serializer("TrainingPlans", {"results": serializers.ListField(child=serializers.DictField())}),
    )
    @action(detail=False, methods=["get"], url_path="training-plans")
    def training_plans(self, request):
        query = self._query()
        cloud = team_cloud(self.access.team, query["region"])
        return Response({"results": catalog.training_plans(cloud, query["region"])})


class PreflightView(APIView):
    """Would this cluster request work? Checks quotas, zones, training plans, name, role. Creates nothing."""

    @extend_schema(
        request=ClusterCreateSerializer,
        responses=inline_serializer(
            "Preflight",
            {"ok": serializers.BooleanField(), "checks": serializers.ListField(child=serializers.DictField())},
        ),
    )
    def post(self, request):
        serializer = ClusterCreateSerializer(data=request.data, context={"access": request.auth})
        serializer.is_valid(raise_exception=True)
        from .steps.eks import eks_name

        probe = Cluster(team=request.auth.team, name=serializer.validated_data["name"])
        checks = run_preflight(request.auth.team, serializer.validated_data, eks_name=eks_name(probe))
        return Response({"ok": all(c.ok for c in checks), "checks": [c.as_dict() for c in checks]})
