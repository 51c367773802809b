"""REST: ``autoscaling: {min, max}`` on an instance group's PATCH (the clusters group viewset hands it here)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from ..readers.groups import group_autoscaling
from ..serializers.groups import GroupAutoscalingSerializer
from ..services import set_group_autoscaling


def patch_group_autoscaling(view, request, group) -> Response:
    """200 {"changed": false, "autoscaling"} when the group already scales so; else 202 with the operation."""
    actual = group_autoscaling(group.cluster, group)
    serializer = GroupAutoscalingSerializer(data=request.data, context={"group": group, "actual": actual})
    serializer.is_valid(raise_exception=True)
    wanted = serializer.validated_data["autoscaling"]
    wanted = dict(wanted) if wanted is not None else None
    operation = set_group_autoscaling(
        access=view.access, group=group, wanted=wanted, actual=actual, idempotency_key=view.idempotency_key
    )
    if operation is None:
        return Response({"changed": False, "autoscaling": actual["autoscaling"]})
    body = {"changed": True, "operation": view.operation_data(operation)}
    return Response(body, status=status.HTTP_202_ACCEPTED)
