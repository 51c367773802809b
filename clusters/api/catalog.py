"""REST: check before create — what the team's account offers in a region, and preflight."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from instantstart.api.viewsets import TeamViewSet

from ..models import Cluster
from ..readers import catalog
from ..readers.preflight import preflight_new_cluster
from ..serializers import ClusterCreateSerializer
from ..serializers.queries import RegionQuerySerializer, parse_query

RESULTS = inline_serializer("CatalogResults", {"results": serializers.ListField(child=serializers.DictField())})


class CatalogViewSet(TeamViewSet):
    """Check before create: what the team's account offers in a region."""

    queryset = Cluster.objects.none()

    def _query(self) -> dict:
        return parse_query(RegionQuerySerializer, self.request.query_params)

    @extend_schema(parameters=[RegionQuerySerializer], responses=RESULTS)
    @action(detail=False, methods=["get"], url_path="availability-zones")
    def availability_zones(self, request):
        query = self._query()
        return Response({"results": catalog.availability_zones(self.access.team, query["region"])})

    @extend_schema(parameters=[RegionQuerySerializer], responses=RESULTS)
    @action(detail=False, methods=["get"], url_path="instance-types")
    def instance_types(self, request):
        query = self._query()
        types = catalog.instance_types(self.access.team, query["region"], query.get("availability_zone"))
        return Response({"results": [t.as_dict() for t in types]})

    @extend_schema(parameters=[RegionQuerySerializer], responses=RESULTS)
    @action(detail=False, methods=["get"], url_path="training-plans")
    def training_plans(self, request):
        query = self._query()
        return Response({"results": catalog.training_plans(self.access.team, query["region"])})


class PreflightView(APIView):
    """Would this cluster request work? Checks quotas, zones, training plans, name, role. Creates nothing."""

    @extend_schema(
        request=ClusterCreateSerializer,
        responses=inline_serializer(
            "Preflight",
            {"ok": serializers.BooleanField(), "checks": serializers.ListField(child=serializers.DictField())},
        ),
    )
    def post(self, request):
        serializer = ClusterCreateSerializer(data=request.data, context={"access": request.auth})
        serializer.is_valid(raise_exception=True)
        checks = preflight_new_cluster(request.auth.team, serializer.validated_data)
        return Response({"ok": all(c.ok for c in checks), "checks": [c.as_dict() for c in checks]})
