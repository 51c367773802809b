"""REST: a cluster's instance groups and nodes, and read-only diagnosis."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from instantstart.api.errors import Conflict
from instantstart.api.viewsets import TeamViewSet
from instantstart.cloud.aws import team_cloud
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.roles import Role

from .api_base import ClusterChildMixin
from .group_serializers import InstanceGroupAddSerializer, InstanceGroupUpdateSerializer
from .models import Cluster, InstanceGroup
from .nodes import actual_count, diagnose_cluster, diagnose_node, find_node, list_nodes, workloads_on
from .serializers import InstanceGroupSerializer
from .services import (
    ClusterStateError,
    add_instance_group,
    delete_instance_group,
    node_action,
    scale_instance_group,
)

FORCE = OpenApiParameter("force", bool, description="Act even while workloads run on the group's nodes.")


def _force(request) -> bool:
    return request.query_params.get("force", "").lower() in ("1", "true", "yes")


class InstanceGroupViewSet(ClusterChildMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The cluster's instance groups: add (202), scale with an explicit diff, delete (202)."""

    queryset = InstanceGroup.objects.select_related("cluster")
    serializer_class = InstanceGroupSerializer
    team_field = "cluster__team"
    lookup_field = "name"
    lookup_value_regex = "[a-zA-Z0-9-]+"
    default_write_role = Role.ADMIN

    def get_queryset(self):
        return super().get_queryset().filter(cluster=self.cluster).exclude(status="Deleted")

    @extend_schema(
        request=InstanceGroupAddSerializer,
        responses={
            202: inline_serializer(
                "GroupAccepted",
                {
                    "instance_group": InstanceGroupSerializer(),
                    "operation": OperationSerializer(),
                    "notes": serializers.ListField(child=serializers.CharField()),
                },
            )
        },
    )
    def create(self, request, cluster_pk=None):
        """Add a group; its subnet (a new /20 when the zone has none) and capacity are settled in one operation."""
        serializer = InstanceGroupAddSerializer(data=request.data, context={"cluster": self.cluster})
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        notes = data.pop("notes", [])
        try:
            group, operation = add_instance_group(
                access=self.access, cluster=self.cluster, data=data, idempotency_key=self.idempotency_key
            )
        except ClusterStateError as exc:
            raise Conflict(str(exc))
        return Response(
            {
                "instance_group": InstanceGroupSerializer(group).data,
                "operation": self.operation_data(operation),
                "notes": notes,
            },
            status=status.HTTP_202_ACCEPTED,
        )

    @extend_schema(
        request=InstanceGroupUpdateSerializer,
        responses={
            200: inline_serializer(
                "GroupUnchanged", {"changed": serializers.BooleanField(), "instance_group": InstanceGroupSerializer()}
            ),
            202: inline_serializer(
                "GroupScaling", {"changed": serializers.BooleanField(), "operation": OperationSerializer()}
            ),
        },
    )
    def partial_update(self, request, cluster_pk=None, name=None):
        """Scale: send {"count": N}. When the group already has N (read from HyperPod), 200 changed:false."""
        group = self.get_object()
        serializer = InstanceGroupUpdateSerializer(data=request.data, context={"group": group})
        serializer.is_valid(raise_exception=True)
        self.require_hyperpod()
        sagemaker = team_cloud(self.cluster.team, self.cluster.region).client("sagemaker")
        try:
            actual = actual_count(self.cluster, group)
        except sagemaker.exceptions.ResourceNotFound:
            raise Conflict(
                f"HyperPod has no cluster {self.cluster.hyperpod_cluster_name}: it changed outside InstantStart; "
                "look at the cluster's drift."
            )
        if actual is None:
            raise Conflict(f"HyperPod has no group {group.name} (yet): wait for its operation, or reconcile.")
        try:
            operation = scale_instance_group(
                access=self.access,
                group=group,
                actual_count=actual,
                changes=serializer.validated_data,
                idempotency_key=self.idempotency_key,
            )
        except ClusterStateError as exc:
            raise Conflict(str(exc))
        if operation is None:
            group.refresh_from_db()
            return Response({"changed": False, "instance_group": InstanceGroupSerializer(group).data})
        return Response({"changed": True, "operation": self.operation_data(operation)}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(parameters=[FORCE], responses={202: OperationSerializer})
    def destroy(self, request, cluster_pk=None, name=None):
        """Delete the group (202). Refused while workloads run on its nodes, unless force=true."""
        group = self.get_object()
        self.require_hyperpod()
        if not _force(request):
            busy = workloads_on(self.cluster, group)
            if busy:
                raise Conflict(
                    f"Workloads run on {group.name}: {', '.join(busy[:5])}. Stop them first, or delete with force=true."
                )
        try:
            operation = delete_instance_group(access=self.access, group=group, idempotency_key=self.idempotency_key)
        except ClusterStateError as exc:
            raise Conflict(str(exc))
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)


class NodeQuerySerializer(serializers.Serializer):
    health = serializers.ChoiceField(
        required=False,
        choices=[
            "Schedulable",
            "Unschedulable",
            "UnschedulablePendingReplacement",
            "UnschedulablePendingReboot",
            "Unknown",
            "NotRegistered",
        ],
    )


class NodeViewSet(ClusterChildMixin, TeamViewSet):
    """The cluster's nodes as HyperPod and Kubernetes see them; remediation starts operations."""

    queryset = Cluster.objects.none()
    pagination_class = None  # the list answers {results} unpaged: advertise no limit/offset
    lookup_field = "node"
    lookup_value_regex = "[a-zA-Z0-9.-]+"
    default_write_role = Role.ADMIN

    def _node(self, node: str) -> dict:
        if not self.cluster.hyperpod_cluster_name:
            raise Conflict("The cluster has no HyperPod cluster yet.")
        found = find_node(self.cluster, node)
        if found is None:
            from rest_framework.exceptions import NotFound

            raise NotFound(f"No node {node} in cluster {self.cluster.name}.")
        return found

    @extend_schema(
        parameters=[NodeQuerySerializer],
        responses=inline_serializer("Nodes", {"results": serializers.ListField(child=serializers.DictField())}),
    )
    def list(self, request, cluster_pk=None):
        """Each node: group, instance id, type, zone, status, health label, deep health check, fault, pods."""
        query = NodeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        if not self.cluster.hyperpod_cluster_name:
            return Response({"results": []})
        return Response({"results": list_nodes(self.cluster, query.validated_data.get("health"))})

    @extend_schema(responses=inline_serializer("Node", {"node": serializers.DictField()}))
    def retrieve(self, request, cluster_pk=None, node=None):
        return Response(self._node(node))

    def _act(self, node: str, action_name: str) -> Response:
        self.require_hyperpod()
        found = self._node(node)
        operation = node_action(
            access=self.access,
            cluster=self.cluster,
            node=found,
            action=action_name,
            idempotency_key=self.idempotency_key,
        )
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def reboot(self, request, cluster_pk=None, node=None):
        """Reboot the node (BatchRebootClusterNodes); the operation ends when it is back and schedulable."""
        return self._act(node, "reboot")

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def replace(self, request, cluster_pk=None, node=None):
        """Replace the instance with a new one (BatchReplaceClusterNodes); ends when the group is whole again."""
        return self._act(node, "replace")

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"], url_path="delete")
    def delete_node(self, request, cluster_pk=None, node=None):
        """Remove the node from the cluster (BatchDeleteClusterNodes); the group's count goes down by one."""
        return self._act(node, "delete")

    @extend_schema(
        responses=inline_serializer(
            "NodeDiagnosis",
            {
                "healthy": serializers.BooleanField(),
                "findings": serializers.ListField(child=serializers.DictField()),
                "suggested_actions": serializers.ListField(child=serializers.DictField()),
            },
        )
    )
    @action(detail=True, methods=["get"])
    def diagnosis(self, request, cluster_pk=None, node=None):
        """Read-only investigation of one node: findings and suggested actions (investigate → reboot → replace)."""
        return Response(diagnose_node(self.cluster, self._node(node)))


class ClusterDiagnosisViewSet(ClusterChildMixin, TeamViewSet):
    queryset = Cluster.objects.none()
    pagination_class = None  # one report, not a page

    @extend_schema(
        responses=inline_serializer(
            "ClusterDiagnosis",
            {"healthy": serializers.BooleanField(), "findings": serializers.ListField(child=serializers.DictField())},
        )
    )
    def list(self, request, cluster_pk=None):
        """Read-only investigation of the whole cluster: unhealthy nodes, short groups, failure causes."""
        if not self.cluster.hyperpod_cluster_name:
            raise Conflict("The cluster has no HyperPod cluster yet.")
        return Response(diagnose_cluster(self.cluster))
