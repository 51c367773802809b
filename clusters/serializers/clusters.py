"""All validation of cluster requests — for the portal, REST and MCP alike — and their representation.

Decision-level inputs only (region, zone, instance type, count, capacity type). What the cloud
offers is checked here through the readers, so a request that cannot work is a 400 naming the
field, and nothing is created.
"""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers

from instantstart.api.serializers import InputSerializer
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.serializers import RegionField

from ..models import NAME_VALIDATOR, Cluster, StorageChoice
from ..readers.catalog import DEFAULT_KUBERNETES_VERSION, KUBERNETES_VERSIONS
from ..readers.importable import eks_cluster_exists
from ..selectors import last_operation
from .groups import (
    MAX_GROUPS_PER_CLUSTER,
    InstanceGroupRequestSerializer,
    InstanceGroupSerializer,
    ZoneField,
    instance_type_infos,
    plans_for,
    validate_group_against_cloud,
    zone_error,
)
from .storage import StorageSerializer

# The EKS versions a new cluster may run (those in standard or extended support, newest last) and the
# default, the newest: the one list the form, REST and MCP share.
# What a PATCH of a cluster may carry; the rest is fixed at create (a 400 naming the field).
ZONE_CHANGE_FIELDS = {"availability_zone"}


def name_taken(access, name: str) -> str:
    """Why a new cluster cannot take ``name`` in the caller's team ("" when it can)."""
    if Cluster.objects.visible_to(access).filter(name=name).exists():
        return f"The team already has a cluster named {name}."
    return ""


class ClusterCreateSerializer(InputSerializer):
    """A new cluster (context: the caller's access). Every field error of the body comes at once:
    the name, the zone and each group's type are checked together (instantstart.api.serializers)."""

    name = serializers.CharField(max_length=32, validators=[NAME_VALIDATOR])
    region = RegionField()
    availability_zone = ZoneField()
    kubernetes_version = serializers.ChoiceField(choices=KUBERNETES_VERSIONS, default=DEFAULT_KUBERNETES_VERSION)
    storage = serializers.ChoiceField(choices=StorageChoice.choices, default=StorageChoice.S3)
    instance_groups = InstanceGroupRequestSerializer(many=True, allow_empty=False, max_length=MAX_GROUPS_PER_CLUSTER)

    def validate_name(self, value: str) -> str:
        if error := name_taken(self.context["access"], value):
            raise serializers.ValidationError(error)
        return value

    def cross_check(self, attrs: dict, invalid: set[str]) -> dict:
        if "region" in invalid:
            return {}  # the zone and the types are the region's
        team, region = self.context["access"].team, attrs["region"]
        errors: dict = {}
        zone = None
        if "availability_zone" not in invalid:
            zone = attrs["availability_zone"]
            if error := zone_error(team, region, zone):
                errors["availability_zone"] = [error]
                zone = None
        if "instance_groups" in invalid:
            return errors
        groups = attrs["instance_groups"]
        names = [group["name"] for group in groups]
        group_errors: dict[str, dict] = {}
        for index, group in enumerate(groups):
            found: dict = {}
            if names.index(group["name"]) != index:
                found["name"] = [f"Instance group names must be unique; {group['name']} is used twice."]
            if group.get("availability_zone") and group["availability_zone"] != attrs.get("availability_zone"):
                found["availability_zone"] = [
                    "A new cluster's groups are in the cluster's zone; add a group in another zone once it is active."
                ]
            if found:
                group_errors[str(index)] = found  # keyed by index, as DRF keys its own nested errors
        plans = plans_for(team, region, groups)
        infos = instance_type_infos(team, region, groups)  # one describe per distinct type
        for index, group in enumerate(groups):
            if str(index) in group_errors:
                continue
            if cloud := validate_group_against_cloud(team, region, zone, group, plans, infos):
                group_errors[str(index)] = cloud
        if group_errors:
            errors["instance_groups"] = group_errors
        return errors


class ClusterZoneChangeSerializer(InputSerializer):
    """PATCH of a cluster (context: the cluster): only the zone may change, to one of its region."""

    availability_zone = ZoneField()
    # Refused below as fixed at create (rather than as unknown).
    refused_fields = ("name", "region", "kubernetes_version", "storage", "instance_groups")

    def to_internal_value(self, data):
        fixed = sorted(set(data) - ZONE_CHANGE_FIELDS) if isinstance(data, Mapping) else []
        if fixed:
            raise serializers.ValidationError(
                {field: ["This field cannot be changed after create."] for field in fixed}
            )
        return super().to_internal_value(data)

    def validate_availability_zone(self, value: str) -> str:
        cluster: Cluster = self.context["cluster"]
        if error := zone_error(cluster.team, cluster.region, value):
            raise serializers.ValidationError(error)
        return value


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
        operation = last_operation(cluster)
        return OperationSerializer(operation, context=self.context).data if operation else None

    def get_nodes(self, cluster: Cluster) -> dict:
        return cluster.node_summary


class ClusterImportSerializer(InputSerializer):
    """An existing EKS (+ HyperPod) cluster of the team's account to adopt (context: the caller's access)."""

    name = serializers.CharField(max_length=32, validators=[NAME_VALIDATOR])
    region = RegionField()
    eks_cluster_name = serializers.RegexField(
        r"^[0-9A-Za-z][A-Za-z0-9_-]*$",  # EKS's own ClusterName pattern: never anything a URL path would mangle
        max_length=100,
        error_messages={
            "invalid": "An EKS cluster name: letters, digits, '-' and '_', starting with a letter or digit."
        },
    )

    def validate(self, attrs: dict) -> dict:
        access = self.context["access"]
        if error := name_taken(access, attrs["name"]):
            raise serializers.ValidationError({"name": [error]})
        managed = Cluster.objects.visible_to(access).filter(
            region=attrs["region"], eks_cluster_name=attrs["eks_cluster_name"]
        )
        if managed.exists():
            raise serializers.ValidationError({"eks_cluster_name": ["InstantStart already manages this cluster."]})
        if not eks_cluster_exists(access, attrs["region"], attrs["eks_cluster_name"]):
            raise serializers.ValidationError(
                {"eks_cluster_name": [f"No EKS cluster named {attrs['eks_cluster_name']} in {attrs['region']}."]}
            )
        return attrs
