"""All validation of cluster requests — for the portal, REST and MCP alike.

Decision-level inputs only (region, zone, instance type, count, capacity type). What the cloud
offers is checked here through the catalog, so a request that cannot work is a 400 naming the
field, and nothing is created.
"""

from __future__ import annotations

from rest_framework import serializers

from instantstart.cloud.aws import team_cloud
from instantstart.tenancy.serializers import known_regions

from . import catalog
from .models import (
    NAME_VALIDATOR,
    CapacityType,
    Cluster,
    ClusterStatus,
    DeepHealthCheck,
    InstanceGroup,
    Storage,
    StorageChoice,
)

KUBERNETES_VERSIONS = ("1.29", "1.30", "1.31", "1.32")
DEFAULT_KUBERNETES_VERSION = "1.31"


class InstanceGroupRequestSerializer(serializers.Serializer):
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


class ClusterCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=32, validators=[NAME_VALIDATOR])
    region = serializers.CharField(max_length=32)
    availability_zone = serializers.CharField(max_length=32)
    kubernetes_version = serializers.ChoiceField(choices=KUBERNETES_VERSIONS, default=DEFAULT_KUBERNETES_VERSION)
    storage = serializers.ChoiceField(choices=StorageChoice.choices, default=StorageChoice.S3)
    instance_groups = InstanceGroupRequestSerializer(many=True, allow_empty=False)

    def validate_region(self, value: str) -> str:
        if value not in known_regions():
            raise serializers.ValidationError(f"{value!r} is not a region where SageMaker HyperPod is offered.")
        return value

    def validate_name(self, value: str) -> str:
        team = self.context["access"].team
        if Cluster.objects.filter(team=team, name=value).exclude(status=ClusterStatus.DELETED).exists():
            raise serializers.ValidationError(f"The team already has a cluster named {value}.")
        return value

    def validate(self, attrs: dict) -> dict:
        groups = attrs["instance_groups"]
        names = [group["name"] for group in groups]
        duplicates = {name for name in names if names.count(name) > 1}
        if duplicates:
            # Errors of list items are keyed by index, as DRF keys its own nested errors.
            raise serializers.ValidationError(
                {
                    "instance_groups": {
                        str(index): {"name": [f"Instance group names must be unique; {name} is used twice."]}
                        for index, name in enumerate(names)
                        if name in duplicates and names.index(name) != index
                    }
                }
            )
        cloud = team_cloud(self.context["access"].team, attrs["region"])
        zones = [zone["name"] for zone in catalog.availability_zones(cloud, attrs["region"])]
        if attrs["availability_zone"] not in zones:
            raise serializers.ValidationError(
                {
                    "availability_zone": [
                        f"{attrs['availability_zone']} is not a zone of {attrs['region']}; "
                        f"choose one of {', '.join(zones)}."
                    ]
                }
            )
        plans = (
            {plan["arn"]: plan for plan in catalog.training_plans(cloud, attrs["region"])}
            if any(g["capacity_type"] == CapacityType.TRAINING_PLAN for g in groups)
            else {}
        )
        errors = [
            validate_group_against_cloud(cloud, attrs["region"], attrs["availability_zone"], g, plans) for g in groups
        ]
        if any(errors):
            raise serializers.ValidationError(
                {"instance_groups": {str(index): error for index, error in enumerate(errors) if error}}
            )
        return attrs


def validate_group_against_cloud(cloud, region: str, zone: str, group: dict, plans: dict) -> dict:
    """Field errors for one group against what the cloud offers ({} when valid).

    Sets group["availability_zone"]: the cluster's zone, or for a training plan the plan's zone.
    """
    info = catalog.instance_type_info(cloud, region, group["instance_type"])
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


class ClusterZoneChangeSerializer(serializers.Serializer):
    """Moving a failed cluster's instance groups to another zone before a retry (context: the cluster)."""

    availability_zone = serializers.CharField(max_length=32)

    def validate_availability_zone(self, value: str) -> str:
        cluster: Cluster = self.context["cluster"]
        cloud = team_cloud(cluster.team, cluster.region)
        zones = [zone["name"] for zone in catalog.availability_zones(cloud, cluster.region)]
        if value not in zones:
            raise serializers.ValidationError(f"{value} is not a zone of {cluster.region}.")
        return value


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


class StorageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Storage
        fields = ["id", "name", "kind", "bucket", "file_system_id", "namespace", "claim_name", "status", "managed"]


class ClusterSerializer(serializers.ModelSerializer):
    instance_groups = InstanceGroupSerializer(many=True, read_only=True)
    storages = StorageSerializer(many=True, read_only=True)
    last_operation = serializers.SerializerMethodField()
    nodes = serializers.SerializerMethodField()

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "region",
            "availability_zone",
            "kubernetes_version",
            "storage",
            "status",
            "managed",
            "eks_cluster_name",
            "eks_cluster_arn",
            "eks_endpoint",
            "hyperpod_cluster_name",
            "hyperpod_cluster_arn",
            "vpc_id",
            "network",
            "versions",
            "instance_groups",
            "storages",
            "nodes",
            "last_operation",
            "created_at",
            "updated_at",
        ]

    def get_last_operation(self, cluster: Cluster) -> dict | None:
        from instantstart.operations.serializers import OperationSerializer

        from .selectors import last_operation

        operation = last_operation(cluster)
        return OperationSerializer(operation, context=self.context).data if operation else None

    def get_nodes(self, cluster: Cluster) -> dict:
        return cluster.node_summary


class ClusterImportSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=32, validators=[NAME_VALIDATOR])
    region = serializers.CharField(max_length=32)
    eks_cluster_name = serializers.CharField(max_length=100)

    def validate_region(self, value: str) -> str:
        if value not in known_regions():
            raise serializers.ValidationError(f"{value!r} is not a region where SageMaker HyperPod is offered.")
        return value

    def validate(self, attrs: dict) -> dict:
        team = self.context["access"].team
        if Cluster.objects.filter(team=team, name=attrs["name"]).exclude(status=ClusterStatus.DELETED).exists():
            raise serializers.ValidationError({"name": [f"The team already has a cluster named {attrs['name']}."]})
        if (
            Cluster.objects.filter(team=team, region=attrs["region"], eks_cluster_name=attrs["eks_cluster_name"])
            .exclude(status=ClusterStatus.DELETED)
            .exists()
        ):
            raise serializers.ValidationError({"eks_cluster_name": ["InstantStart already manages this cluster."]})
        eks = team_cloud(team, attrs["region"]).client("eks")
        try:
            eks.describe_cluster(name=attrs["eks_cluster_name"])
        except eks.exceptions.ResourceNotFoundException:
            raise serializers.ValidationError(
                {"eks_cluster_name": [f"No EKS cluster named {attrs['eks_cluster_name']} in {attrs['region']}."]}
            )
        return attrs


class StorageAttachSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=63, validators=[NAME_VALIDATOR])
    kind = serializers.ChoiceField(choices=[("s3", "S3 bucket"), ("fsx", "FSx for Lustre")])
    bucket = serializers.CharField(max_length=63, required=False, allow_blank=True)
    file_system_id = serializers.RegexField(r"^fs-[0-9a-f]{8,17}$", required=False, allow_blank=True)

    def validate(self, attrs: dict) -> dict:
        cluster: Cluster = self.context["cluster"]
        if cluster.storages.filter(name=attrs["name"]).exclude(status="detached").exists():
            raise serializers.ValidationError({"name": [f"The cluster already has storage named {attrs['name']}."]})
        cloud = team_cloud(cluster.team, cluster.region)
        if attrs["kind"] == "s3":
            if not attrs.get("bucket"):
                raise serializers.ValidationError({"bucket": ["Required for S3 storage."]})
            s3 = cloud.client("s3")
            try:
                s3.head_bucket(Bucket=attrs["bucket"])
            except s3.exceptions.ClientError:
                raise serializers.ValidationError({"bucket": [f"No bucket {attrs['bucket']} in the team's account."]})
            attrs.pop("file_system_id", None)
        else:
            if not attrs.get("file_system_id"):
                raise serializers.ValidationError({"file_system_id": ["Required for FSx storage."]})
            fsx = cloud.client("fsx")
            try:
                fsx.describe_file_systems(FileSystemIds=[attrs["file_system_id"]])
            except fsx.exceptions.FileSystemNotFound:
                raise serializers.ValidationError(
                    {"file_system_id": [f"No FSx file system {attrs['file_system_id']} in {cluster.region}."]}
                )
            attrs.pop("bucket", None)
        return attrs
