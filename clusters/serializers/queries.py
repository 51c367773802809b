"""Query parameters of the clusters endpoints, validated once for REST, MCP and the portal.

The viewsets name them in ``extend_schema(parameters=[…])``, which is also where the MCP tools
read their arguments from; portal views parse their filters with the same classes.
"""

from __future__ import annotations

from rest_framework import serializers

from instantstart.tenancy.serializers import RegionField

from ..readers.nodes import HEALTH_VALUES
from .groups import ZoneField


class ImportableQuerySerializer(serializers.Serializer):
    """GET /api/v1/clusters/importable/: the region to look in."""

    region = RegionField()


class RegionQuerySerializer(ImportableQuerySerializer):
    """The catalog's query: a region and, for the instance types, optionally one zone of it."""

    availability_zone = ZoneField(required=False)


class NodeQuerySerializer(serializers.Serializer):
    """GET …/nodes/: keep only the nodes with this health label."""

    health = serializers.ChoiceField(required=False, choices=HEALTH_VALUES)


def _force(help_text: str) -> serializers.BooleanField:
    # One parse of force for every face: DRF's true words (true, 1, yes, on…), false when absent.
    return serializers.BooleanField(required=False, default=False, help_text=help_text)


class ClusterDeleteQuerySerializer(serializers.Serializer):
    """DELETE /api/v1/clusters/{id}/."""

    force = _force(
        "Delete even while another operation (a create, an update) runs on the cluster: that "
        "operation is asked to cancel. Leave false unless the user asked to force."
    )


class GroupDeleteQuerySerializer(serializers.Serializer):
    """DELETE /api/v1/clusters/{cluster_pk}/instance-groups/{name}/."""

    force = _force(
        "Delete even while workloads run on the group's nodes (they are stopped with the nodes). "
        "Leave false unless the user asked to force."
    )


def parse_query(serializer_class: type[serializers.Serializer], data) -> dict:
    """Validated query parameters (a 400 with field errors when they are wrong) — e.g. ``force``."""
    query = serializer_class(data=data)
    query.is_valid(raise_exception=True)
    return query.validated_data
