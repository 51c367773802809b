"""REST: a cluster's inference endpoints — deploy (202), read, scale with an explicit diff, delete (202),
invoke (the model's answer, streamed on request) and a pool worker's assignment."""

from __future__ import annotations

from functools import cached_property

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from clusters.models import Cluster
from clusters.selectors import get_cluster
from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.serializers import OperationSerializer
from instantstart.tenancy.access import Via

from ..models import Endpoint
from ..readers.endpoints import endpoint_view
from ..readers.invoke import invoke
from ..selectors import endpoints_of, get_endpoint
from ..serializers import (
    AssignWorkerSerializer,
    EndpointDeploySerializer,
    EndpointScaleSerializer,
    EndpointSerializer,
    InvokeSerializer,
)
from ..services import assign_worker, delete_endpoint, deploy_endpoint, scale_endpoint

ACCEPTED = inline_serializer("EndpointAccepted", {"endpoint": EndpointSerializer(), "operation": OperationSerializer()})
CHAT_ANSWER = inline_serializer(
    "ChatCompletion",
    {
        "id": serializers.CharField(),
        "model": serializers.CharField(),
        "choices": serializers.ListField(child=serializers.DictField()),
        "usage": serializers.DictField(),
    },
)
ASSIGNED = inline_serializer(
    "WorkerAssigned",
    {"pod": serializers.CharField(), "model": serializers.CharField(), "changed": serializers.BooleanField()},
)


class EndpointViewSet(TeamViewSet):
    """The cluster's endpoints. Deploy, scale and delete start operations (202): poll get_operation."""

    queryset = Endpoint.objects.select_related("cluster__team")
    serializer_class = EndpointSerializer
    lookup_field = "name"

    @cached_property
    def cluster(self) -> Cluster:
        return get_cluster(self.access, self.kwargs["cluster_pk"])

    def get_object(self) -> Endpoint:
        return get_endpoint(self.access, self.kwargs["cluster_pk"], self.kwargs["name"])

    @extend_schema(
        responses={
            200: inline_serializer(
                "EndpointList", {"count": serializers.IntegerField(), "results": EndpointSerializer(many=True)}
            )
        }
    )
    def list(self, request, cluster_pk=None):
        """Every endpoint of the cluster with its status and replicas read live."""
        views = [endpoint_view(e, detail=False) for e in endpoints_of(self.access, self.cluster)]
        return Response({"count": len(views), "results": EndpointSerializer(views, many=True).data})

    @extend_schema(responses={200: EndpointSerializer})
    def retrieve(self, request, cluster_pk=None, name=None):
        """One endpoint: status, replicas, url, pods, events and the applied manifest."""
        return Response(EndpointSerializer(endpoint_view(self.get_object())).data)

    @extend_schema(request=EndpointDeploySerializer, responses={202: ACCEPTED})
    def create(self, request, cluster_pk=None):
        """Deploy an endpoint (managed or self-managed); nothing is applied when the request is refused."""
        serializer = EndpointDeploySerializer(data=request.data, context={"cluster": self.cluster})
        serializer.is_valid(raise_exception=True)
        endpoint, operation = deploy_endpoint(
            access=self.access,
            cluster=self.cluster,
            data=serializer.validated_data,
            idempotency_key=self.idempotency_key,
        )
        body = {"endpoint": EndpointSerializer(endpoint_view(endpoint, detail=False)).data}
        return Response({**body, "operation": self.operation_data(operation)}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=EndpointScaleSerializer,
        responses={
            200: inline_serializer(
                "EndpointUnchanged", {"changed": serializers.BooleanField(), "endpoint": EndpointSerializer()}
            ),
            202: inline_serializer(
                "EndpointScaling", {"changed": serializers.BooleanField(), "operation": OperationSerializer()}
            ),
        },
    )
    def partial_update(self, request, cluster_pk=None, name=None):
        """Scale: {"replicas": N}. When the cluster already runs N, 200 changed:false and nothing is applied."""
        endpoint = self.get_object()
        serializer = EndpointScaleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        operation = scale_endpoint(
            access=self.access,
            endpoint=endpoint,
            replicas=serializer.validated_data["replicas"],
            idempotency_key=self.idempotency_key,
        )
        if operation is None:
            return Response({"changed": False, "endpoint": EndpointSerializer(endpoint_view(endpoint)).data})
        return Response({"changed": True, "operation": self.operation_data(operation)}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={202: OperationSerializer})
    def destroy(self, request, cluster_pk=None, name=None):
        """Delete the endpoint and everything its deploy created (202); a repeat returns the deletion running."""
        operation = delete_endpoint(
            access=self.access, endpoint=self.get_object(), idempotency_key=self.idempotency_key
        )
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=InvokeSerializer, responses={200: CHAT_ANSWER})
    def invoke(self, request, cluster_pk=None, name=None):
        """An OpenAI chat completion from the endpoint itself (text/event-stream when stream is true)."""
        endpoint = self.get_object()
        serializer = InvokeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        body = {k: v for k, v in serializer.validated_data.items() if k != "stream"}
        # An agent's tool call needs one answer; REST and the portal's chat stream when asked.
        stream = serializer.validated_data["stream"] and self.access.via != Via.MCP
        upstream = invoke(endpoint, body, stream=stream)
        if not stream:
            return Response(upstream.json(), status=upstream.status)
        response = StreamingHttpResponse(upstream.chunks(), content_type=upstream.content_type, status=upstream.status)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        response.data = {"streamed": True}  # what an Idempotency-Key replay answers
        return response

    @extend_schema(request=AssignWorkerSerializer, responses={200: ASSIGNED})
    def assign(self, request, cluster_pk=None, name=None, pod=None):
        """Point a pool worker at another model: a label change on the pod, no restart."""
        endpoint = self.get_object()
        serializer = AssignWorkerSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(
            assign_worker(access=self.access, endpoint=endpoint, pod=pod, model=serializer.validated_data["model"])
        )
