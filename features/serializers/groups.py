"""An instance group's ``autoscaling: {min, max}`` (PATCH on the group), checked against the actual state."""

from __future__ import annotations

from rest_framework import serializers

from clusters.models import CapacityType
from clusters.serializers import InstanceGroupUpdateSerializer


class AutoscalingRangeSerializer(serializers.Serializer):
    min = serializers.IntegerField(min_value=0, max_value=1000)
    max = serializers.IntegerField(min_value=1, max_value=1000)

    def validate(self, attrs):
        if attrs["min"] > attrs["max"]:
            raise serializers.ValidationError({"min": [f"min ({attrs['min']}) is above max ({attrs['max']})."]})
        return attrs


class GroupAutoscalingSerializer(serializers.Serializer):
    """``{"autoscaling": {"min": N, "max": M}}``, or ``{"autoscaling": null}`` to stop autoscaling the group.

    Context: ``group`` and ``actual`` (readers.groups.group_autoscaling, read once by the caller).
    """

    autoscaling = AutoscalingRangeSerializer(allow_null=True)

    def validate(self, attrs):
        group, actual = self.context["group"], self.context["actual"]
        if not actual["in_hyperpod"]:
            raise serializers.ValidationError(
                {
                    "autoscaling": [
                        f"{group.name} is not a HyperPod instance group: the managed autoscaler scales HyperPod "
                        "instance groups only, not plain EC2 capacity."
                    ]
                }
            )
        if attrs["autoscaling"] is not None and not actual["feature_on"]:
            raise serializers.ValidationError(
                {
                    "autoscaling": [
                        "The autoscaling feature is not enabled on this cluster: enable it first (PATCH features "
                        '{"autoscaling": true}, MCP update_features).'
                    ]
                }
            )
        if attrs["autoscaling"] is not None and group.capacity_type != CapacityType.ON_DEMAND:
            raise serializers.ValidationError(
                {
                    "autoscaling": [
                        f"{group.name} is {group.get_capacity_type_display()} capacity: managed Karpenter scales "
                        "on-demand HyperPod groups only."
                    ]
                }
            )
        return attrs


class GroupPatchSerializer(InstanceGroupUpdateSerializer):
    """The instance group PATCH as documented (schema, MCP arguments, the strict body check): ``count`` /
    ``min_count`` (clusters' rules), or ``autoscaling`` (the features app's rules, GroupAutoscalingSerializer)."""

    autoscaling = AutoscalingRangeSerializer(
        required=False,
        allow_null=True,
        help_text="Managed autoscaling of this HyperPod group: {min, max} nodes (null: stop). Only while the "
        "autoscaling feature is enabled; on-demand groups only. Send it alone.",
    )
