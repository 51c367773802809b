"""REST: a cluster's instance groups — add (202), scale with an explicit diff, delete (202)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from features.api.groups import patch_group_autoscaling
from features.serializers.groups import GroupPatchSerializer
from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.roles import Role

from ..models import InstanceGroup
from ..selectors import get_group
from ..serializers import InstanceGroupAddSerializer, InstanceGroupSerializer, InstanceGroupUpdateSerializer
from ..serializers.queries import GroupDeleteQuerySerializer, parse_query
from ..services import add_instance_group, delete_instance_group, scale_instance_group
from .clusters import ClusterChildMixin


class InstanceGroupViewSet(ClusterChildMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The cluster's instance groups: add (202), scale with an explicit diff, delete (202)."""

    queryset = InstanceGroup.objects.select_related("cluster")
    serializer_class = InstanceGroupSerializer
    lookup_field = "name"
    lookup_value_regex = "[a-zA-Z0-9-]+"
    default_write_role = Role.ADMIN

    def get_queryset(self):
        return super().get_queryset().filter(cluster=self.cluster)

    def get_object(self) -> InstanceGroup:
        return get_group(self.access, self.kwargs["cluster_pk"], self.kwargs["name"])

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
        group, operation = add_instance_group(
            access=self.access, cluster=self.cluster, data=data, idempotency_key=self.idempotency_key
        )
        body = {"instance_group": InstanceGroupSerializer(group).data, "operation": self.operation_data(operation)}
        return Response({**body, "notes": notes}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=GroupPatchSerializer,  # count / min_count, or the features app's autoscaling
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
        if "autoscaling" in request.data:  # managed autoscaling {min, max}: the features app's rule
            return patch_group_autoscaling(self, request, group)
        serializer = InstanceGroupUpdateSerializer(data=request.data, context={"group": group})
        serializer.is_valid(raise_exception=True)
        operation, _ = scale_instance_group(
            access=self.access, group=group, changes=serializer.validated_data, idempotency_key=self.idempotency_key
        )
        if operation is None:
            group.refresh_from_db()
            return Response({"changed": False, "instance_group": InstanceGroupSerializer(group).data})
        return Response({"changed": True, "operation": self.operation_data(operation)}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(parameters=[GroupDeleteQuerySerializer], responses={202: OperationSerializer})
    def destroy(self, request, cluster_pk=None, name=None):
        """Delete the group (202). Refused while workloads run on its nodes, unless force=true."""
        force = parse_query(GroupDeleteQuerySerializer, request.query_params)["force"]
        operation = delete_instance_group(
            access=self.access, group=self.get_object(), force=force, idempotency_key=self.idempotency_key
        )
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)
