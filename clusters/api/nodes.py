"""REST: a cluster's nodes as HyperPod and Kubernetes see them, remediation, and read-only diagnosis."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.roles import Role

from ..models import Cluster
from ..readers.diagnosis import diagnose_cluster, diagnose_node
from ..readers.nodes import get_node, list_nodes
from ..serializers.nodes import ClusterDiagnosisSerializer, NodeDiagnosisSerializer, NodeListSerializer, NodeSerializer
from ..serializers.queries import NodeQuerySerializer, parse_query
from ..services import node_action
from .clusters import ClusterChildMixin


class NodeViewSet(ClusterChildMixin, TeamViewSet):
    """The cluster's nodes as HyperPod and Kubernetes see them; remediation starts operations."""

    queryset = Cluster.objects.none()
    pagination_class = None  # the list answers {results} unpaged: advertise no limit/offset
    lookup_field = "node"
    lookup_value_regex = "[a-zA-Z0-9.-]+"
    default_write_role = Role.ADMIN

    @extend_schema(parameters=[NodeQuerySerializer], responses=NodeListSerializer)
    def list(self, request, cluster_pk=None):
        """Each node: group, instance id, type, zone, status, health label, deep health check, fault, pods."""
        health = parse_query(NodeQuerySerializer, request.query_params).get("health")
        return Response({"results": list_nodes(self.cluster, health)})

    @extend_schema(responses=NodeSerializer)
    def retrieve(self, request, cluster_pk=None, node=None):
        return Response(get_node(self.cluster, node))

    def _act(self, node: str, action_name: str) -> Response:
        operation = node_action(
            access=self.access,
            cluster=self.cluster,
            node=node,
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

    @extend_schema(responses=NodeDiagnosisSerializer)
    @action(detail=True, methods=["get"])
    def diagnosis(self, request, cluster_pk=None, node=None):
        """Read-only investigation of one node: findings and suggested actions (investigate → reboot → replace)."""
        return Response(diagnose_node(self.cluster, get_node(self.cluster, node)))


class ClusterDiagnosisViewSet(ClusterChildMixin, TeamViewSet):
    """Read-only investigation of a whole cluster."""

    queryset = Cluster.objects.none()
    pagination_class = None  # one report, not a page

    @extend_schema(responses=ClusterDiagnosisSerializer)
    def list(self, request, cluster_pk=None):
        """Read-only investigation of the whole cluster: unhealthy nodes, short groups, failure causes."""
        return Response(diagnose_cluster(self.cluster))
