"""REST: a cluster's managed features — actual state (GET) and an explicit-diff PATCH (200 or 202)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from clusters.api.clusters import ClusterChildMixin
from clusters.models import Cluster
from instantstart.api.viewsets import TeamViewSet
from instantstart.tenancy.roles import Role

from ..catalog import CATALOG
from ..readers.state import read_state
from ..selectors import feature_list, features_now, records_of, running_update
from ..serializers import (
    FeaturesAcceptedSerializer,
    FeatureSerializer,
    FeaturesSerializer,
    FeaturesUpdateSerializer,
    FeatureValueField,
)
from ..services import replayed_update, require_ready, update_features

UNCHANGED = inline_serializer(
    "FeaturesUnchanged", {"changed": serializers.BooleanField(), "features": FeatureSerializer(many=True)}
)


def _help(f) -> str:
    settings = ", ".join(f"{s.name} ({s.minimum}-{s.maximum})" for s in f.settings)
    shape = f"{{enabled, {settings}}}" if settings else "{enabled}"
    return f"{f.kind}: {f.title}. true / false, or {shape}"


# Every catalog name is a (non-required) field: the schema, the MCP arguments and the strict body check read it.
PATCH_BODY = inline_serializer(
    "FeaturesPatch", {f.name: FeatureValueField(required=False, help_text=_help(f)) for f in CATALOG.values()}
)


class FeatureViewSet(ClusterChildMixin, TeamViewSet):
    """The cluster's managed features and the dependencies they install."""

    queryset = Cluster.objects.none()
    pagination_class = None
    default_write_role = Role.ADMIN

    @extend_schema(responses=FeaturesSerializer)
    def list(self, request, cluster_pk=None):
        """Every feature and dependency: actual state (read now), desired state, requires / required_by, drift."""
        cluster = self.cluster
        require_ready(cluster)
        return Response({"features": features_now(cluster)[0]})

    @extend_schema(
        request=PATCH_BODY,
        responses={200: UNCHANGED, 202: FeaturesAcceptedSerializer},
        examples=[
            OpenApiExample(
                "Enable the training operator and tiered checkpointing",
                value={"training_operator": True, "tiered_checkpointing": {"enabled": True, "memory_percent": 20}},
                request_only=True,
            )
        ],
    )
    def partial_update(self, request, cluster_pk=None):
        """Send only the features that change. Equal to the actual state: 200 changed:false; else 202 with the plan."""
        cluster = self.cluster
        replayed = replayed_update(self.access, self.idempotency_key)
        if replayed is not None:
            return self._accepted(replayed)
        require_ready(cluster)
        state, records = read_state(cluster), records_of(cluster)
        serializer = FeaturesUpdateSerializer(
            data=request.data, context={"cluster": cluster, "state": state, "records": records}
        )
        serializer.is_valid(raise_exception=True)
        plan = serializer.validated_data["plan"]
        operation = update_features(
            access=self.access,
            cluster=cluster,
            request=serializer.validated_data["request"],
            plan=plan,
            idempotency_key=self.idempotency_key,
        )
        if operation is None:
            rows = feature_list(cluster, state, running=running_update(cluster))
            return Response({"changed": False, "features": rows})
        return self._accepted(operation)

    def _accepted(self, operation) -> Response:
        body = {
            "changed": True,
            "operation": self.operation_data(operation),
            "plan": operation.params.get("plan", []),
            "summary": operation.params.get("summary", ""),
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)
