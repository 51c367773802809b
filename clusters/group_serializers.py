"""Validation of instance group requests (add, scale) — for REST, MCP and the portal alike."""

from __future__ import annotations

from rest_framework import serializers

from instantstart.cloud.aws import team_cloud

from . import catalog
from .models import CapacityType, Cluster, DeepHealthCheck
from .preflight import run_preflight
from .serializers import InstanceGroupRequestSerializer, validate_group_against_cloud

# What a PATCH may change; everything else about a group is settled at create.
MUTABLE_FIELDS = {"count", "min_count"}
IMMUTABLE_FIELDS = {
    "capacity_type": "The capacity type cannot change after create: add a new group with the capacity you want.",
    "efa_only": "The network mode (EFA-only) cannot change after create: add a new group instead.",
    "instance_type": "The instance type cannot change after create: add a new group instead.",
    "training_plan_arn": "The training plan cannot change after create: add a new group instead.",
    "availability_zone": "The zone cannot change after create: add a new group in the other zone.",
    "name": "An instance group cannot be renamed.",
}


class TaintSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=253)
    value = serializers.CharField(max_length=63, required=False, allow_blank=True, default="")
    effect = serializers.ChoiceField(choices=["NoSchedule", "PreferNoSchedule", "NoExecute"])


class InstanceGroupAddSerializer(InstanceGroupRequestSerializer):
    """A new group for an existing cluster: the create fields plus placement and Kubernetes config."""

    min_count = serializers.IntegerField(min_value=0, max_value=1000, default=0)
    availability_zone = serializers.CharField(max_length=32, required=False)
    labels = serializers.DictField(child=serializers.CharField(max_length=63), required=False, default=dict)
    taints = TaintSerializer(many=True, required=False, default=list)
    ebs_volume_gb = serializers.IntegerField(min_value=100, max_value=16384, default=500)
    deep_health_checks = serializers.ListField(
        child=serializers.ChoiceField(choices=DeepHealthCheck.choices), required=False, default=list
    )

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        cluster: Cluster = self.context["cluster"]
        if cluster.instance_groups.filter(name=attrs["name"]).exists():
            raise serializers.ValidationError({"name": [f"The cluster already has a group named {attrs['name']}."]})
        if attrs["min_count"] > attrs["count"]:
            raise serializers.ValidationError({"min_count": ["At most count."]})
        cloud = team_cloud(cluster.team, cluster.region)
        requested_zone = attrs.get("availability_zone") or cluster.availability_zone
        zones = [z["name"] for z in catalog.availability_zones(cloud, cluster.region)]
        if requested_zone not in zones:
            raise serializers.ValidationError(
                {"availability_zone": [f"{requested_zone} is not a zone of {cluster.region}."]}
            )
        plans = {}
        if attrs["capacity_type"] == CapacityType.TRAINING_PLAN:
            plans = {p["arn"]: p for p in catalog.training_plans(cloud, cluster.region)}
        errors = validate_group_against_cloud(cloud, cluster.region, requested_zone, attrs, plans)
        if errors:
            raise serializers.ValidationError(errors)
        notes = []
        if attrs["availability_zone"] != requested_zone:
            notes.append(
                f"The training plan reserves capacity in {attrs['availability_zone']}; the group is placed "
                f"there instead of {requested_zone}."
            )
        checks = run_preflight(
            cluster.team,
            {
                "region": cluster.region,
                "availability_zone": attrs["availability_zone"],
                "instance_groups": [{**attrs, "count": attrs["count"] + _same_type_count(cluster, attrs)}],
            },
        )
        quota = [c for c in checks if not c.ok and (c.name.startswith("quota") or c.name.startswith("training_plan"))]
        if quota:
            raise serializers.ValidationError({"count": [c.message for c in quota]})
        attrs["notes"] = notes
        return attrs


def _same_type_count(cluster: Cluster, attrs: dict) -> int:
    if attrs["capacity_type"] == CapacityType.TRAINING_PLAN:
        return 0
    return sum(
        cluster.instance_groups.filter(instance_type=attrs["instance_type"])
        .exclude(capacity_type=CapacityType.TRAINING_PLAN)
        .values_list("count", flat=True)
    )


class InstanceGroupUpdateSerializer(serializers.Serializer):
    """PATCH of a group: only the count (and minimum) may change; the rest is a 400 naming the field."""

    count = serializers.IntegerField(min_value=0, max_value=1000, required=False)
    min_count = serializers.IntegerField(min_value=0, max_value=1000, required=False)

    def to_internal_value(self, data):
        immutable = {field: [IMMUTABLE_FIELDS[field]] for field in data if field in IMMUTABLE_FIELDS}
        unknown = {field: ["Unknown field."] for field in data if field not in IMMUTABLE_FIELDS.keys() | MUTABLE_FIELDS}
        if immutable or unknown:
            raise serializers.ValidationError({**immutable, **unknown})
        return super().to_internal_value(data)

    def validate(self, attrs: dict) -> dict:
        if not attrs:
            raise serializers.ValidationError("Send count (and optionally min_count).")
        group = self.context["group"]
        count = attrs.get("count", group.count)
        if attrs.get("min_count", group.min_count) > count:
            raise serializers.ValidationError({"min_count": ["At most count."]})
        if "count" in attrs and attrs["count"] > group.count:
            cluster = group.cluster
            checks = run_preflight(
                cluster.team,
                {
                    "region": cluster.region,
                    "availability_zone": group.availability_zone,
                    "instance_groups": [
                        {
                            "name": group.name,
                            "instance_type": group.instance_type,
                            "capacity_type": group.capacity_type,
                            "training_plan_arn": group.training_plan_arn,
                            "availability_zone": group.availability_zone,
                            "count": attrs["count"]
                            + _same_type_count(
                                cluster, {"instance_type": group.instance_type, "capacity_type": group.capacity_type}
                            )
                            - group.count,
                        }
                    ],
                },
            )
            quota = [c for c in checks if not c.ok and c.name.startswith(("quota", "training_plan"))]
            if quota:
                raise serializers.ValidationError({"count": [c.message for c in quota]})
        return attrs
