"""Validation of instance group requests (in a cluster create, add, scale) and their representation —
for REST, MCP and the portal alike. What the cloud offers is checked through the readers."""

from __future__ import annotations

from rest_framework import serializers

from ..models import CapacityType, Cluster, DeepHealthCheck, InstanceGroup
from ..readers import catalog
from ..readers.preflight import quota_refusals

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


class InstanceGroupRequestSerializer(serializers.Serializer):
    """One group of a request: what the user decides (type, count, capacity), nothing about networks."""

    name = serializers.RegexField(
        r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
        max_length=63,
        error_messages={"invalid": "Letters, digits and dashes, at most 63."},
    )
    instance_type = serializers.RegexField(
        r"^ml\.[a-z0-9-]+\.[a-z0-9]+$",
        max_length=32,
        error_messages={"invalid": "A SageMaker instance type such as ml.p5.48xlarge."},
    )
    count = serializers.IntegerField(min_value=1, max_value=1000)
    capacity_type = serializers.ChoiceField(choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    training_plan_arn = serializers.RegexField(
        r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:training-plan/.+$",
        required=False,
        allow_blank=True,
        error_messages={"invalid": "A SageMaker training plan ARN."},
    )
    efa_only = serializers.BooleanField(default=False)
    deep_health_checks = serializers.ListField(
        child=serializers.ChoiceField(choices=DeepHealthCheck.choices), required=False, default=list
    )

    def validate(self, attrs: dict) -> dict:
        plan = attrs.get("training_plan_arn", "")
        if attrs["capacity_type"] == CapacityType.TRAINING_PLAN and not plan:
            raise serializers.ValidationError({"training_plan_arn": ["Required for training-plan capacity."]})
        if attrs["capacity_type"] != CapacityType.TRAINING_PLAN and plan:
            raise serializers.ValidationError(
                {
                    "training_plan_arn": [
                        "Only with capacity_type training_plan (spot and training plans exclude each other)."
                    ]
                }
            )
        if len(set(attrs.get("deep_health_checks", []))) != len(attrs.get("deep_health_checks", [])):
            raise serializers.ValidationError({"deep_health_checks": ["Each check at most once."]})
        return attrs


def validate_group_against_cloud(team, region: str, zone: str, group: dict, plans: dict) -> dict:
    """Field errors for one group against what the team's cloud offers ({} when valid).

    Sets group["availability_zone"]: the cluster's zone, or for a training plan the plan's zone.
    """
    info = catalog.instance_type_info(team, region, group["instance_type"])
    if info is None or not catalog.is_accelerator(catalog.ec2_name(group["instance_type"])):
        return {"instance_type": [f"{group['instance_type']} is not an accelerator type HyperPod offers in {region}."]}
    group_zone = zone
    if group["capacity_type"] == CapacityType.TRAINING_PLAN:
        plan = plans.get(group["training_plan_arn"])
        if plan is None:
            return {"training_plan_arn": [f"No training plan {group['training_plan_arn']} in {region}."]}
        if plan["instance_types"] and group["instance_type"] not in plan["instance_types"]:
            return {
                "instance_type": [
                    f"The training plan reserves {', '.join(plan['instance_types'])}, not {group['instance_type']}."
                ]
            }
        if plan["zones"]:
            group_zone = plan["zones"][0]  # the plan's reservation decides the zone
    if group_zone not in info.zones:
        offered = ", ".join(info.zones) or "no zone"
        return {"instance_type": [f"{group['instance_type']} is not offered in {group_zone}; it is in {offered}."]}
    if group["efa_only"] and not info.efa_only_allowed:
        return {
            "efa_only": [
                f"EFA-only networking needs an instance type with several EFA network cards (p4d, p5, …); "
                f"{group['instance_type']} has {'one' if info.efa_supported else 'no EFA'}."
            ]
        }
    group["availability_zone"] = group_zone
    return {}


def plans_for(team, region: str, groups: list[dict]) -> dict[str, dict]:
    """The region's training plans by ARN, read only when a group asks for training-plan capacity."""
    if not any(group["capacity_type"] == CapacityType.TRAINING_PLAN for group in groups):
        return {}
    return {plan["arn"]: plan for plan in catalog.training_plans(team, region)}


def zone_error(team, region: str, zone: str) -> str:
    """Why ``zone`` cannot be used in ``region`` ("" when it can)."""
    zones = [z["name"] for z in catalog.availability_zones(team, region)]
    return "" if zone in zones else f"{zone} is not a zone of {region}; choose one of {', '.join(zones)}."


class TaintSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=253)
    value = serializers.CharField(max_length=63, required=False, allow_blank=True, default="")
    effect = serializers.ChoiceField(choices=["NoSchedule", "PreferNoSchedule", "NoExecute"])


class InstanceGroupAddSerializer(InstanceGroupRequestSerializer):
    """A new group for an existing cluster (context: the cluster): the create fields plus placement
    and Kubernetes config. ``notes`` in the validated data say what was decided differently."""

    min_count = serializers.IntegerField(min_value=0, max_value=1000, default=0)
    availability_zone = serializers.CharField(max_length=32, required=False)
    labels = serializers.DictField(child=serializers.CharField(max_length=63), required=False, default=dict)
    taints = TaintSerializer(many=True, required=False, default=list)
    ebs_volume_gb = serializers.IntegerField(min_value=100, max_value=16384, default=500)

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        cluster: Cluster = self.context["cluster"]
        if cluster.instance_groups.filter(name=attrs["name"]).exists():
            raise serializers.ValidationError({"name": [f"The cluster already has a group named {attrs['name']}."]})
        if attrs["min_count"] > attrs["count"]:
            raise serializers.ValidationError({"min_count": ["At most count."]})
        requested_zone = attrs.get("availability_zone") or cluster.availability_zone
        if error := zone_error(cluster.team, cluster.region, requested_zone):
            raise serializers.ValidationError({"availability_zone": [error]})
        plans = plans_for(cluster.team, cluster.region, [attrs])
        errors = validate_group_against_cloud(cluster.team, cluster.region, requested_zone, attrs, plans)
        if errors:
            raise serializers.ValidationError(errors)
        notes = []
        if attrs["availability_zone"] != requested_zone:
            notes.append(
                f"The training plan reserves capacity in {attrs['availability_zone']}; the group is placed "
                f"there instead of {requested_zone}."
            )
        refused = quota_refusals(
            cluster.team,
            {
                "region": cluster.region,
                "availability_zone": attrs["availability_zone"],
                # What the account's HyperPod clusters run (this one included) is read as usage.
                "hyperpod_cluster_name": cluster.hyperpod_cluster_name,
                "instance_groups": [attrs],
            },
        )
        if refused:
            raise serializers.ValidationError({"count": refused})
        attrs["notes"] = notes
        return attrs


class InstanceGroupUpdateSerializer(serializers.Serializer):
    """PATCH of a group (context: the group): only the count (and minimum) may change; the rest is a
    400 naming the field. Scaling up beyond the quota is a 400 naming count."""

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
        group: InstanceGroup = self.context["group"]
        count = attrs.get("count", group.count)
        if attrs.get("min_count", group.min_count) > count:
            raise serializers.ValidationError({"min_count": ["At most count."]})
        if "count" in attrs and attrs["count"] > group.count:
            cluster, actual = group.cluster, group.count
            refused = quota_refusals(
                cluster.team,
                {
                    "region": cluster.region,
                    "availability_zone": group.availability_zone,
                    "hyperpod_cluster_name": cluster.hyperpod_cluster_name,
                    "instance_groups": [
                        {
                            "name": group.name,
                            "instance_type": group.instance_type,
                            "capacity_type": group.capacity_type,
                            "training_plan_arn": group.training_plan_arn,
                            "availability_zone": group.availability_zone,
                            "count": attrs["count"] - actual,  # the instances the scale adds
                        }
                    ],
                },
            )
            if refused:
                raise serializers.ValidationError({"count": refused})
        return attrs


class InstanceGroupSerializer(serializers.ModelSerializer):
    class Meta:
        model = InstanceGroup
        fields = [
            "name",
            "instance_type",
            "count",
            "min_count",
            "capacity_type",
            "training_plan_arn",
            "efa_only",
            "deep_health_checks",
            "labels",
            "taints",
            "ebs_volume_gb",
            "availability_zone",
            "subnet_id",
            "status",
        ]
