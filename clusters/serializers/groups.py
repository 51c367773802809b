"""Validation of instance group requests (in a cluster create, add, scale) and their representation —
for REST, MCP and the portal alike. What the cloud offers is checked through the readers."""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from instantstart import kube_names
from instantstart.api.serializers import InputSerializer, merge_errors

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


ZONE_PATTERN = r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$"


@extend_schema_field({"type": "string", "pattern": ZONE_PATTERN, "maxLength": 32, "example": "us-west-2a"})
class ZoneField(serializers.RegexField):
    """An availability zone name (which zones a region has: GET /catalog/availability-zones/)."""

    pattern = ZONE_PATTERN

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", 32)
        kwargs.setdefault("error_messages", {"invalid": "An availability zone name such as us-west-2a."})
        super().__init__(self.pattern, **kwargs)


@extend_schema_field(
    {"type": "string", "pattern": f"^({ZONE_PATTERN[1:-1]})?$", "maxLength": 32, "example": "us-west-2b"}
)
class OptionalZoneField(ZoneField):
    """A zone, or blank for the default one."""

    pattern = f"^({ZONE_PATTERN[1:-1]})?$"

    def __init__(self, **kwargs) -> None:
        super().__init__(allow_blank=True, required=False, **kwargs)


@extend_schema_field(
    {"type": "string", "pattern": r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", "maxLength": 32, "example": "ml.g5.xlarge"}
)
class InstanceTypeField(serializers.RegexField):
    """A SageMaker instance type (which a zone offers: GET /catalog/instance-types/)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", 32)
        kwargs.setdefault("error_messages", {"invalid": "A SageMaker instance type such as ml.p5.48xlarge."})
        super().__init__(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", **kwargs)


# HyperPod's own bounds (the SageMaker API model): groups per cluster, labels and taints per group,
# the EBS volume each instance gets.
MAX_GROUPS_PER_CLUSTER = 100
MAX_LABELS = MAX_TAINTS = 50
EBS_VOLUME_GB = (1, 16384)


class TaintSerializer(InputSerializer):
    """A Kubernetes taint every node of the group carries (key and value by Kubernetes' label rules)."""

    key = serializers.CharField(max_length=317, help_text="A qualified name, e.g. example.com/dedicated.")
    value = serializers.CharField(max_length=63, required=False, allow_blank=True, default="")
    effect = serializers.ChoiceField(choices=kube_names.TAINT_EFFECTS)

    def validate_key(self, value: str) -> str:
        if errors := kube_names.label_key_errors(value):
            raise serializers.ValidationError(errors)
        return value

    def validate_value(self, value: str) -> str:
        if errors := kube_names.label_value_errors(value):
            raise serializers.ValidationError(errors)
        return value


class LabelsField(serializers.DictField):
    """Kubernetes labels for the group's nodes: keys are qualified names outside the reserved
    prefixes, values Kubernetes label values (HyperPod refuses an empty one)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(child=serializers.CharField(max_length=63, allow_blank=True), **kwargs)

    def to_internal_value(self, data):
        labels = super().to_internal_value(data)
        if len(labels) > MAX_LABELS:
            raise serializers.ValidationError(f"At most {MAX_LABELS} labels (HyperPod's limit).")
        errors = {}
        for key, value in labels.items():
            found = [f"key: {m}" for m in kube_names.label_key_errors(key)]
            found += [f"value: {m}" for m in kube_names.label_value_errors(value, allow_empty=False)]
            if found:
                errors[key] = found
        if errors:
            raise serializers.ValidationError(errors)
        return labels


class InstanceGroupRequestSerializer(InputSerializer):
    """One instance group as a request gives it — in a cluster create and in a group add alike: what
    the user decides (type, count, capacity) and the nodes' Kubernetes config, nothing about networks.
    Cross-object checks (the cluster's groups, the catalog, quotas) are the callers'."""

    name = serializers.RegexField(
        r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
        max_length=63,
        error_messages={"invalid": "Letters, digits and dashes, at most 63."},
    )
    instance_type = InstanceTypeField()
    count = serializers.IntegerField(min_value=1, max_value=1000)
    min_count = serializers.IntegerField(min_value=0, max_value=1000, default=0)
    capacity_type = serializers.ChoiceField(choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    training_plan_arn = serializers.RegexField(
        r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:training-plan/.+$",
        max_length=2048,
        required=False,
        allow_blank=True,
        error_messages={"invalid": "A SageMaker training plan ARN."},
    )
    efa_only = serializers.BooleanField(default=False)
    deep_health_checks = serializers.ListField(
        child=serializers.ChoiceField(choices=DeepHealthCheck.choices),
        required=False,
        default=list,
        max_length=len(DeepHealthCheck.choices),
    )
    availability_zone = OptionalZoneField(
        help_text="Where the group's nodes run (default: the cluster's zone; a training plan's reservation decides).",
    )
    labels = LabelsField(required=False, default=dict)
    taints = TaintSerializer(many=True, required=False, default=list, max_length=MAX_TAINTS)
    ebs_volume_gb = serializers.IntegerField(
        min_value=EBS_VOLUME_GB[0],
        max_value=EBS_VOLUME_GB[1],
        default=500,
        help_text="The EBS volume each instance gets, in GB.",
    )

    def cross_check(self, attrs: dict, invalid: set[str]) -> dict:
        errors: dict[str, list[str]] = {}
        capacity, plan = attrs.get("capacity_type"), attrs.get("training_plan_arn", "")
        if "capacity_type" not in invalid and "training_plan_arn" not in invalid:
            if capacity == CapacityType.TRAINING_PLAN and not plan:
                errors["training_plan_arn"] = ["Required for training-plan capacity."]
            if capacity != CapacityType.TRAINING_PLAN and plan:
                errors["training_plan_arn"] = [
                    "Only with capacity_type training_plan (spot and training plans exclude each other)."
                ]
        checks = attrs.get("deep_health_checks", [])
        if len(set(checks)) != len(checks):
            errors["deep_health_checks"] = ["Each check at most once."]
        if not invalid & {"count", "min_count"} and attrs["min_count"] > attrs["count"]:
            errors["min_count"] = ["At most count."]
        taints = [(t["key"], t["effect"]) for t in attrs.get("taints", [])]
        if len(set(taints)) != len(taints):
            errors["taints"] = ["Taints must be unique by key and effect."]
        return errors


def instance_type_infos(team, region: str, groups: list[dict]) -> dict:
    """What the catalog says of each distinct instance type of ``groups``: one describe per type,
    however many groups share it."""
    types = {group["instance_type"] for group in groups if "instance_type" in group}
    return {instance_type: catalog.instance_type_info(team, region, instance_type) for instance_type in sorted(types)}


def validate_group_against_cloud(
    team, region: str, zone: str | None, group: dict, plans: dict, infos: dict | None = None
) -> dict:
    """Field errors for one group against what the team's cloud offers ({} when valid).

    Sets group["availability_zone"]: the cluster's zone, or for a training plan the plan's zone.
    ``zone`` None (the cluster's zone is itself invalid) checks only the type; ``infos`` are the
    types already described in this request (instance_type_infos).
    """
    if infos is None:
        infos = instance_type_infos(team, region, [group])
    info = infos[group["instance_type"]]
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
    if group_zone is None:
        return {}
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


class InstanceGroupAddSerializer(InstanceGroupRequestSerializer):
    """A new group for an existing cluster (context: the cluster): the fields of a group in a cluster
    create, checked against the cluster, the catalog and the quotas. ``notes`` in the validated
    data say what was decided differently (a training plan's zone)."""

    def cross_check(self, attrs: dict, invalid: set[str]) -> dict:
        errors = super().cross_check(attrs, invalid)
        cluster: Cluster = self.context["cluster"]
        if "name" not in invalid and cluster.instance_groups.filter(name=attrs["name"]).exists():
            errors["name"] = [f"The cluster already has a group named {attrs['name']}."]
        if cluster.instance_groups.count() >= MAX_GROUPS_PER_CLUSTER:
            errors.setdefault("name", []).append(
                f"A cluster has at most {MAX_GROUPS_PER_CLUSTER} instance groups (HyperPod's limit)."
            )
        if "availability_zone" in invalid:
            return errors
        requested_zone = attrs.get("availability_zone") or cluster.availability_zone
        if error := zone_error(cluster.team, cluster.region, requested_zone):
            errors["availability_zone"] = [error]
            requested_zone = None
        if invalid & {"instance_type", "capacity_type", "training_plan_arn", "efa_only"} or errors.keys() & {
            "training_plan_arn"
        }:
            return errors
        plans = plans_for(cluster.team, cluster.region, [attrs])
        cloud = validate_group_against_cloud(cluster.team, cluster.region, requested_zone, attrs, plans)
        merge_errors(errors, cloud)
        if errors or invalid:
            return errors
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
            return {"count": refused}
        attrs["notes"] = notes
        return errors


class InstanceGroupUpdateSerializer(InputSerializer):
    """PATCH of a group (context: the group): only the count (and minimum) may change; the rest is a
    400 naming the field. Scaling up beyond the quota is a 400 naming count."""

    count = serializers.IntegerField(min_value=0, max_value=1000, required=False)
    min_count = serializers.IntegerField(min_value=0, max_value=1000, required=False)
    refused_fields = tuple(IMMUTABLE_FIELDS)  # refused below, each with why

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            immutable = {field: [IMMUTABLE_FIELDS[field]] for field in data if field in IMMUTABLE_FIELDS}
            if immutable:
                raise serializers.ValidationError(immutable)
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
