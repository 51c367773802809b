"""Validation of endpoint requests (deploy, scale, invoke, assign) and the endpoint's representation —
for REST, MCP and the portal alike. Cross-object checks (the instance group, its GPUs, the storage)
read the cluster's records and the catalog; feature checks (409) are the service's."""

from __future__ import annotations

import re

from rest_framework import serializers

from clusters.models import Cluster, StorageKind
from clusters.readers import catalog

from ..models import ENDPOINT_NAME, Endpoint, EndpointStatus, Engine, Mode, Routing, ServiceShape

HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
MODEL_SOURCES = ("s3", "fsx", "huggingface")


class ModelSourceSerializer(serializers.Serializer):
    """Where the weights are: {"source": "huggingface", "id"} or {"source": "s3"|"fsx", "uri"}."""

    source = serializers.ChoiceField(choices=MODEL_SOURCES)
    id = serializers.CharField(required=False, max_length=200)
    uri = serializers.CharField(required=False, max_length=512)

    def validate(self, attrs: dict) -> dict:
        if attrs["source"] == "huggingface":
            if not HF_ID.match(attrs.get("id", "")):
                raise serializers.ValidationError({"id": ["A Hugging Face id such as Qwen/Qwen3-0.6B."]})
            return {"source": "huggingface", "id": attrs["id"]}
        uri = attrs.get("uri", "")
        if attrs["source"] == "s3" and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+", uri):
            raise serializers.ValidationError({"uri": ["An S3 URI such as s3://bucket/models/Qwen3-0.6B."]})
        if attrs["source"] == "fsx" and not uri.startswith("/fsx/"):
            raise serializers.ValidationError({"uri": ["A path on the FSx mount such as /fsx/models/Qwen3-0.6B."]})
        return {"source": attrs["source"], "uri": uri.rstrip("/")}


class AutoscalingSerializer(serializers.Serializer):
    min = serializers.IntegerField(min_value=0, max_value=100)
    max = serializers.IntegerField(min_value=1, max_value=100)
    target = serializers.IntegerField(min_value=1, max_value=1000, help_text="Requests in flight per replica.")
    cooldown = serializers.IntegerField(
        min_value=0, max_value=3600, default=300, help_text="Seconds of low load before a replica is removed."
    )
    server_address = serializers.RegexField(
        r"^https://aps-workspaces\.[a-z0-9-]+\.amazonaws\.com/workspaces/ws-[A-Za-z0-9-]+$",
        required=False,
        help_text="Managed only: the Amazon Managed Prometheus workspace the operator's KEDA queries.",
    )

    def validate(self, attrs: dict) -> dict:
        if attrs["min"] > attrs["max"]:
            raise serializers.ValidationError({"min": ["At most max."]})
        return attrs


class KvCacheSerializer(serializers.Serializer):
    l1 = serializers.BooleanField(default=True, help_text="CPU memory offloading of the KV cache.")
    l2 = serializers.BooleanField(default=False, help_text="A second tier (the node's tiered storage or Redis).")
    backend = serializers.ChoiceField(choices=("tieredstorage", "redis"), default="tieredstorage")
    url = serializers.CharField(required=False, max_length=300, help_text="Redis URL (backend redis).")

    def validate(self, attrs: dict) -> dict:
        if attrs.get("backend") == "redis" and attrs.get("l2") and not attrs.get("url"):
            raise serializers.ValidationError({"url": ["The Redis URL of the L2 cache."]})
        return attrs


class EndpointDeploySerializer(serializers.Serializer):
    """A deploy request. Needs ``context["cluster"]``."""

    name = serializers.CharField(max_length=30, validators=[ENDPOINT_NAME])
    mode = serializers.ChoiceField(choices=Mode.choices, default=Mode.SELF_MANAGED)
    engine = serializers.ChoiceField(choices=Engine.choices, default=Engine.VLLM)
    model = ModelSourceSerializer()
    instance_group = serializers.CharField(max_length=63)
    replicas = serializers.IntegerField(min_value=0, max_value=100, default=1)
    gpus = serializers.IntegerField(min_value=1, max_value=64, default=1, help_text="GPUs per replica.")
    service = serializers.ChoiceField(choices=ServiceShape.choices, default=ServiceShape.INTERNAL)
    router = serializers.BooleanField(default=False)
    autoscaling = AutoscalingSerializer(required=False, allow_null=True, default=None)
    kv_cache = KvCacheSerializer(required=False, allow_null=True, default=None)
    routing = serializers.ChoiceField(choices=Routing.choices, required=False, allow_blank=True, default="")
    args = serializers.ListField(child=serializers.CharField(max_length=500), max_length=50, default=list)

    @property
    def cluster(self) -> Cluster:
        return self.context["cluster"]

    def validate_name(self, name: str) -> str:
        if Endpoint.objects.filter(cluster=self.cluster, name=name).exclude(status=EndpointStatus.DELETED).exists():
            raise serializers.ValidationError("An endpoint with this name already exists on the cluster.")
        return name

    def validate(self, attrs: dict) -> dict:
        errors: dict[str, list[str]] = {}
        managed = attrs["mode"] == Mode.MANAGED
        if attrs["router"] and attrs["engine"] != Engine.SGLANG:
            errors["router"] = ["The router fronts SGLang replicas: set engine to sglang."]
        if attrs["router"] and managed:
            errors["router"] = ["Managed endpoints route with the operator: use routing instead."]
        if attrs["routing"] and not managed:
            errors["routing"] = ["Intelligent routing is part of the managed path (mode managed)."]
        if attrs["kv_cache"] and not managed:
            errors["kv_cache"] = ["The tiered KV cache is part of the managed path (mode managed)."]
        if managed and attrs["engine"] != Engine.VLLM:
            errors["engine"] = ["The managed path serves with the operator's vLLM worker image."]
        if managed and attrs["service"] == ServiceShape.POOL:
            errors["service"] = ["A pool is self-managed (mode self_managed)."]
        scaling = attrs["autoscaling"]
        if scaling and not managed and not attrs["router"]:
            errors["autoscaling"] = ["Autoscaling reads the router's requests in flight: set router true (SGLang)."]
        if scaling and managed and not scaling.get("server_address"):
            errors["autoscaling"] = ["Managed autoscaling needs server_address (an Amazon Managed Prometheus URL)."]
        group = self.cluster.instance_groups.filter(name=attrs["instance_group"]).first()
        if group is None:
            names = ", ".join(self.cluster.instance_groups.values_list("name", flat=True)) or "none"
            errors["instance_group"] = [
                f"No instance group {attrs['instance_group']!r} in the cluster (groups: {names})."
            ]
        else:
            attrs["instance_type"] = group.instance_type
            info = catalog.instance_type_info(self.cluster.team, self.cluster.region, group.instance_type)
            gpus = info.gpu_count if info is not None else 0
            if attrs["gpus"] > gpus:
                errors["gpus"] = [f"{group.instance_type} has {gpus} GPU(s); a replica cannot use {attrs['gpus']}."]
        errors.update(self._model_errors(attrs["model"]))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def _model_errors(self, model: dict) -> dict:
        if model["source"] == "huggingface":
            return {}
        kind = StorageKind.S3 if model["source"] == "s3" else StorageKind.FSX
        storage = self.cluster.storages.filter(kind=kind, claim_name="shared").first()
        if storage is None:
            return {"model": [f"The cluster has no shared {kind.label} storage to read {model['uri']} from."]}
        if kind == StorageKind.S3 and not model["uri"].startswith(f"s3://{storage.bucket}/"):
            return {"model": [f"The model must be in the cluster's bucket s3://{storage.bucket}/."]}
        return {}


class EndpointScaleSerializer(serializers.Serializer):
    replicas = serializers.IntegerField(min_value=0, max_value=100)


class InvokeSerializer(serializers.Serializer):
    """An OpenAI chat completions body. ``model`` is optional (the endpoint's own model by default);
    there is no address or URL field: the answer always comes from the endpoint itself."""

    messages = serializers.ListField(child=serializers.DictField(), min_length=1, max_length=200)
    model = serializers.CharField(required=False, max_length=200)
    stream = serializers.BooleanField(default=False)
    max_tokens = serializers.IntegerField(required=False, min_value=1, max_value=32768)
    temperature = serializers.FloatField(required=False, min_value=0, max_value=2)
    top_p = serializers.FloatField(required=False, min_value=0, max_value=1)

    def validate_messages(self, messages: list[dict]) -> list[dict]:
        for message in messages:
            if message.get("role") not in ("system", "user", "assistant") or not isinstance(
                message.get("content"), str
            ):
                raise serializers.ValidationError("Each message is {role: system|user|assistant, content: text}.")
        return messages


class AssignWorkerSerializer(serializers.Serializer):
    model = serializers.CharField(max_length=200, help_text="The model the worker serves from now on.")


class EndpointSerializer(serializers.Serializer):
    """An endpoint as every face shows it: the request, the status and replicas read live, events."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    mode = serializers.CharField()
    engine = serializers.CharField()
    model = serializers.DictField()
    served_model = serializers.CharField()
    instance_group = serializers.CharField()
    instance_type = serializers.CharField()
    gpus = serializers.IntegerField()
    status = serializers.CharField()
    replicas = serializers.DictField(child=serializers.IntegerField())
    url = serializers.CharField(allow_blank=True)
    service = serializers.CharField()
    router = serializers.BooleanField()
    autoscaling = serializers.DictField(allow_null=True)
    kv_cache = serializers.DictField(allow_null=True)
    routing = serializers.CharField(allow_blank=True)
    args = serializers.ListField(child=serializers.CharField())
    namespace = serializers.CharField()
    pods = serializers.ListField(child=serializers.DictField())
    events = serializers.ListField(child=serializers.DictField())
    router_metrics = serializers.DictField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="With a router (detail only): requests_total, requests_in_flight, active_workers, errors_total, "
        "cache_hits_total, cache_misses_total.",
    )
    manifest = serializers.ListField(child=serializers.DictField())
    created_at = serializers.DateTimeField()
