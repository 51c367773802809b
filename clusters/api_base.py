"""Shared pieces of the clusters REST views."""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from instantstart.operations.serializers import OperationSerializer

from .models import Cluster, ClusterStatus


class ClusterChildMixin:
    """Scopes a nested resource to a cluster of the caller's team (another team's cluster is a 404)."""

    @property
    def cluster(self) -> Cluster:
        if not hasattr(self, "_cluster"):
            self._cluster = get_object_or_404(
                Cluster.objects.filter(team=self.access.team).exclude(status=ClusterStatus.DELETED),
                pk=self.kwargs["cluster_pk"],
            )
        return self._cluster

    def operation_data(self, operation) -> dict:
        return OperationSerializer(operation, context=self.get_serializer_context()).data

    def require_hyperpod(self) -> None:
        """Groups and nodes exist only once the HyperPod cluster does: before that, a clear 409."""
        from instantstart.api.errors import Conflict

        if self.cluster.status != ClusterStatus.ACTIVE:
            raise Conflict(
                f"The cluster is {self.cluster.status}: instance groups and nodes change only once it is active."
            )
        if not self.cluster.hyperpod_cluster_name:
            raise Conflict("The cluster has no HyperPod cluster recorded: reconcile it first.")
