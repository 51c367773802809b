"""Validation of a job submission — one small serializer per recipe over the common fields — and the
job's representation. REST, MCP and the portal form use the same classes.

Cross-object checks (the instance group exists and has the nodes and GPUs, the storage is attached, a
script or config path exists on the shared bucket) are made here, through the readers, so a bad request
is a 400 naming the field and nothing is submitted.
"""

from __future__ import annotations

import re
import shlex

import yaml
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from clusters.models import CapacityType, Cluster, StorageKind
from clusters.readers import catalog

from ..models import Job, Recipe
from ..readers import files
from ..recipes import (
    DEFAULT_HANG_DETECTION,
    DEFAULT_IMAGE,
    DEFAULT_MAX_RETRIES,
    LLAMA_FACTORY_REQUIRED_KEYS,
    MOUNTS,
    MS_SWIFT_TRAINING,
)

JOB_NAME = re.compile(r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
OPERATORS = ("gt", "lt", "eq", "gteq", "lteq")


class HangRuleSerializer(serializers.Serializer):
    """One rule of the operator's `runPolicy.logMonitoringConfiguration` (its own field names)."""

    name = serializers.RegexField(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$", max_length=63)
    logPattern = serializers.CharField(max_length=1000)  # noqa: N815 - the operator's field name
    expectedStartCutOffInSeconds = serializers.IntegerField(min_value=1, required=False)  # noqa: N815
    expectedRecurringFrequencyInSeconds = serializers.IntegerField(min_value=1, required=False)  # noqa: N815
    metricThreshold = serializers.FloatField(required=False)  # noqa: N815
    operator = serializers.ChoiceField(choices=OPERATORS, required=False)
    metricEvaluationDataPoints = serializers.IntegerField(min_value=1, required=False)  # noqa: N815
    stopPattern = serializers.CharField(max_length=1000, required=False)  # noqa: N815

    def validate_logPattern(self, value: str) -> str:  # noqa: N802
        return _regex(value)

    def validate_stopPattern(self, value: str) -> str:  # noqa: N802
        return _regex(value)

    def validate(self, attrs: dict) -> dict:
        timed = {"expectedStartCutOffInSeconds", "expectedRecurringFrequencyInSeconds"} & attrs.keys()
        metric = {"metricThreshold", "operator"} & attrs.keys()
        if not timed and not metric:
            raise serializers.ValidationError(
                "Give expectedStartCutOffInSeconds / expectedRecurringFrequencyInSeconds (hang) or "
                "metricThreshold with operator (slow)."
            )
        if metric and len(metric) != 2:
            raise serializers.ValidationError({"operator": ["metricThreshold and operator go together."]})
        if metric and not re.compile(attrs["logPattern"]).groups:
            raise serializers.ValidationError(
                {"logPattern": ["A metric rule needs a capture group for the value, e.g. Loss: (\\d+\\.\\d+)."]}
            )
        return attrs


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise serializers.ValidationError(f"Not a valid regular expression: {exc}.") from None
    return value


class ElasticSerializer(serializers.Serializer):
    min_replicas = serializers.IntegerField(min_value=1)
    max_replicas = serializers.IntegerField(min_value=1)

    def validate(self, attrs: dict) -> dict:
        if attrs["min_replicas"] > attrs["max_replicas"]:
            raise serializers.ValidationError({"min_replicas": ["At most max_replicas."]})
        return attrs


def _args(value) -> list[str]:
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise serializers.ValidationError(f"Cannot split into arguments: {exc}.") from None
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return [str(v) for v in value]
    raise serializers.ValidationError("A list of strings, or one string split like a shell would.")


@extend_schema_field({"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]})
class ArgsField(serializers.Field):
    def to_internal_value(self, data):
        return _args(data)

    def to_representation(self, value):
        return value


class JobSubmitSerializer(serializers.Serializer):
    """The fields every recipe shares (context: the cluster). A recipe's serializer adds its own."""

    recipe_name: str = ""

    name = serializers.CharField(max_length=40)
    recipe = serializers.ChoiceField(choices=Recipe.choices)
    instance_group = serializers.CharField(max_length=63)
    nodes = serializers.IntegerField(min_value=1, max_value=1000, default=1)
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=64, required=False)
    image = serializers.CharField(max_length=512, required=False, allow_blank=True)
    env = serializers.DictField(child=serializers.CharField(allow_blank=True, max_length=4096), default=dict)
    storage = serializers.ListField(
        child=serializers.ChoiceField(choices=StorageKind.choices), required=False, max_length=2
    )
    mlflow = serializers.BooleanField(default=True)
    max_retries = serializers.IntegerField(min_value=0, max_value=100, default=DEFAULT_MAX_RETRIES)
    hang_detection = HangRuleSerializer(many=True, required=False, allow_null=True)
    elastic = ElasticSerializer(required=False, allow_null=True)

    def validate_name(self, value: str) -> str:
        if not JOB_NAME.match(value):
            raise serializers.ValidationError(
                "3 to 40 characters: lowercase letters, digits and dashes, starting with a letter."
            )
        return value

    def validate_env(self, value: dict) -> dict:
        bad = [key for key in value if not ENV_NAME.match(key)]
        if bad:
            raise serializers.ValidationError(f"Not an environment variable name: {', '.join(sorted(bad))}.")
        return value

    @property
    def cluster(self) -> Cluster:
        return self.context["cluster"]

    def validate(self, attrs: dict) -> dict:
        cluster = self.cluster
        group = cluster.instance_groups.filter(name=attrs["instance_group"]).first()
        if group is None:
            names = ", ".join(cluster.instance_groups.values_list("name", flat=True)) or "none"
            raise serializers.ValidationError(
                {"instance_group": [f"The cluster has no group {attrs['instance_group']!r} (it has: {names})."]}
            )
        info = catalog.instance_type_info(cluster.team, cluster.region, group.instance_type)
        gpus = info.gpu_count if info is not None else 0
        if attrs["nodes"] > group.count:
            raise serializers.ValidationError(
                {"nodes": [f"The group {group.name} has {group.count} nodes; the job asks for {attrs['nodes']}."]}
            )
        attrs.setdefault("gpus_per_node", gpus)
        if gpus == 0:
            raise serializers.ValidationError({"instance_group": [f"{group.instance_type} has no GPUs."]})
        if attrs["gpus_per_node"] > gpus:
            raise serializers.ValidationError(
                {"gpus_per_node": [f"{group.instance_type} has {gpus} GPUs per node; at most {gpus}."]}
            )
        attrs["efa_per_node"] = info.max_efa_interfaces if info is not None and info.efa_supported else 0
        attrs["instance_type"] = group.instance_type
        attrs["capacity_type"] = group.capacity_type
        if not attrs.get("image"):
            attrs["image"] = DEFAULT_IMAGE[attrs["recipe"]]
        attrs["storage"] = self._storage(attrs.get("storage"))
        if attrs.get("hang_detection") is None:
            attrs["hang_detection"] = [dict(rule) for rule in DEFAULT_HANG_DETECTION[attrs["recipe"]]]
        else:
            attrs["hang_detection"] = [dict(rule) for rule in attrs["hang_detection"]]
        elastic = attrs.get("elastic")
        if elastic:
            if group.capacity_type == CapacityType.SPOT:
                raise serializers.ValidationError(
                    {"elastic": ["Elastic scaling is not available on spot capacity (the operator excludes it)."]}
                )
            if elastic["max_replicas"] > group.count:
                raise serializers.ValidationError(
                    {"elastic": [f"max_replicas is at most the group's {group.count} nodes."]}
                )
            if not elastic["min_replicas"] <= attrs["nodes"] <= elastic["max_replicas"]:
                raise serializers.ValidationError(
                    {"elastic": ["nodes must lie between min_replicas and max_replicas."]}
                )
            attrs["elastic"] = dict(elastic)
        else:
            attrs["elastic"] = None
        return self.check_recipe(attrs)

    def _storage(self, chosen: list[str] | None) -> dict[str, str]:
        """Mount name → claim name, for the storage the job mounts (default: the shared S3 bucket, if any)."""
        cluster = self.cluster
        if chosen is None:
            chosen = [StorageKind.S3] if files.shared_storage(cluster, StorageKind.S3) else []
        claims = {}
        for kind in dict.fromkeys(chosen):
            storage = files.shared_storage(cluster, kind)
            if storage is None:
                raise serializers.ValidationError({"storage": [f"The cluster has no attached {kind} storage."]})
            claims[kind] = storage.claim_name
        return claims

    def check_recipe(self, attrs: dict) -> dict:
        """What the recipe adds (a recipe's serializer overrides it)."""
        return attrs

    # --- paths on the shared storage ---------------------------------------------------------

    def check_path(self, field: str, path: str, attrs: dict, suffixes: tuple[str, ...] = ()) -> None:
        """A path the job reads must be on a mounted storage and, on S3, exist (400 naming the path)."""
        mount = next((kind for kind, root in MOUNTS.items() if path.startswith(root + "/")), None)
        if mount is None:
            raise serializers.ValidationError({field: [f"{path} is not on the shared storage (/s3/… or /fsx/…)."]})
        if suffixes and not path.endswith(suffixes):
            raise serializers.ValidationError({field: [f"{path} should end with {' or '.join(suffixes)}."]})
        if mount not in attrs["storage"]:
            raise serializers.ValidationError({field: [f"{path} is on {mount}, which the job does not mount."]})
        if mount == StorageKind.S3 and not files.file_exists(self.cluster, path.removeprefix("/s3/")):
            raise serializers.ValidationError(
                {field: [f"{path} does not exist on the shared bucket: upload it first (POST …/files/)."]}
            )

    def read_yaml(self, field: str, config: str, attrs: dict) -> dict:
        """A YAML config given inline, or as a path whose file is read from the shared bucket."""
        text = config
        if "\n" not in config and config.strip().startswith(tuple(root + "/" for root in MOUNTS.values())):
            path = config.strip()
            self.check_path(field, path, attrs, (".yaml", ".yml", ".json"))
            attrs[f"{field}_path"] = path
            if not path.startswith("/s3/"):
                return {}
            text = (files.read_file(self.cluster, path.removeprefix("/s3/")) or b"").decode("utf-8", "replace")
        else:
            attrs[f"{field}_inline"] = config
        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise serializers.ValidationError({field: [f"Not valid YAML: {exc}".splitlines()[0]]}) from None
        if not isinstance(parsed, dict):
            raise serializers.ValidationError({field: ["A YAML mapping of options."]})
        return parsed


class PyTorchJobSerializer(JobSubmitSerializer):
    """`pytorch`: a script on the shared storage (e.g. uploaded to /s3/…), run by the HyperPod launcher."""

    script = serializers.CharField(max_length=1024)
    args = ArgsField(required=False, default=list)

    def check_recipe(self, attrs: dict) -> dict:
        self.check_path("script", attrs["script"], attrs, (".py", ".sh"))
        return attrs


class LlamaFactoryJobSerializer(JobSubmitSerializer):
    """`llama_factory`: a LLaMA-Factory training YAML (a path on the storage, or inline)."""

    config = serializers.CharField(max_length=65536)

    def check_recipe(self, attrs: dict) -> dict:
        parsed = self.read_yaml("config", attrs["config"], attrs)
        if "config_path" in attrs and not attrs["config_path"].startswith("/s3/"):
            return attrs
        missing = [key for key in LLAMA_FACTORY_REQUIRED_KEYS if key not in parsed]
        if missing:
            raise serializers.ValidationError({"config": [f"The config lacks {', '.join(missing)}."]})
        return attrs


class MsSwiftJobSerializer(JobSubmitSerializer):
    """`ms_swift`: a swift command (sft, pt, rlhf) with a YAML config and/or arguments."""

    command = serializers.ChoiceField(choices=MS_SWIFT_TRAINING)
    config = serializers.CharField(max_length=65536, required=False, allow_blank=True)
    args = ArgsField(required=False, default=list)

    def check_recipe(self, attrs: dict) -> dict:
        if attrs.get("config"):
            parsed = self.read_yaml("config", attrs["config"], attrs)
            if attrs.get("config_inline") is not None and not parsed:
                raise serializers.ValidationError({"config": ["An empty config."]})
        elif not attrs["args"]:
            raise serializers.ValidationError({"config": ["Give a config (YAML, path or inline) or args."]})
        return attrs


class VerlJobSerializer(JobSubmitSerializer):
    """`verl`: a RayJob whose entrypoint is a script on the storage (or a command), head + workers."""

    entrypoint = serializers.CharField(max_length=4096)
    worker_replicas = serializers.IntegerField(min_value=0, max_value=999, required=False)

    def check_recipe(self, attrs: dict) -> dict:
        if attrs.get("elastic"):
            raise serializers.ValidationError({"elastic": ["Elastic scaling is for HyperPodPyTorchJob recipes."]})
        workers = attrs.get("worker_replicas")
        if workers is None:
            attrs["worker_replicas"] = attrs["nodes"] - 1
        elif "nodes" in self.initial_data and attrs["nodes"] != workers + 1:
            raise serializers.ValidationError(
                {"worker_replicas": [f"With {attrs['nodes']} nodes (one head) there are {attrs['nodes'] - 1} workers."]}
            )
        else:
            attrs["nodes"] = workers + 1
            group = self.cluster.instance_groups.get(name=attrs["instance_group"])
            if attrs["nodes"] > group.count:
                raise serializers.ValidationError(
                    {
                        "worker_replicas": [
                            f"Head + {workers} workers need {workers + 1} nodes; {group.name} has {group.count}."
                        ]
                    }
                )
        entry = attrs["entrypoint"].strip()
        if " " not in entry and entry.startswith(tuple(root + "/" for root in MOUNTS.values())):
            self.check_path("entrypoint", entry, attrs, (".sh", ".py"))
        attrs["entrypoint"] = entry
        return attrs


RECIPE_SERIALIZERS: dict[str, type[JobSubmitSerializer]] = {
    Recipe.PYTORCH: PyTorchJobSerializer,
    Recipe.LLAMA_FACTORY: LlamaFactoryJobSerializer,
    Recipe.MS_SWIFT: MsSwiftJobSerializer,
    Recipe.VERL: VerlJobSerializer,
}


def validated_submission(data, cluster: Cluster) -> dict:
    """The validated spec of a submission, by its recipe's serializer (raises ValidationError, a 400)."""
    recipe = data.get("recipe") if hasattr(data, "get") else None
    serializer_class = RECIPE_SERIALIZERS.get(recipe)
    if serializer_class is None:
        choices = ", ".join(RECIPE_SERIALIZERS)
        raise serializers.ValidationError({"recipe": [f"One of {choices}." if recipe else "This field is required."]})
    serializer = serializer_class(data=data, context={"cluster": cluster})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class JobPodSerializer(serializers.Serializer):
    name = serializers.CharField()
    node = serializers.CharField(allow_null=True)
    phase = serializers.CharField()
    restarts = serializers.IntegerField()


class JobSerializer(serializers.ModelSerializer):
    """A job as every face shows it (the contract's fields)."""

    restarts = serializers.SerializerMethodField()
    pods = JobPodSerializer(many=True, read_only=True)
    kind = serializers.CharField(read_only=True, help_text="HyperPodPyTorchJob or RayJob")
    cluster = serializers.UUIDField(source="cluster_id", read_only=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "cluster",
            "name",
            "recipe",
            "kind",
            "namespace",
            "k8s_name",
            "status",
            "status_message",
            "hang_detected",
            "nodes",
            "gpus",
            "restarts",
            "pods",
            "faulty_nodes",
            "events",
            "created_at",
            "started_at",
            "finished_at",
            "manifest",
        ]
        read_only_fields = fields

    def get_restarts(self, job: Job) -> dict:
        return {"used": job.restarts_used, "max": job.max_retries}


class JobListSerializer(JobSerializer):
    """A job in a list: the manifest and events are left out (GET the job for them)."""

    class Meta(JobSerializer.Meta):
        fields = [f for f in JobSerializer.Meta.fields if f not in ("manifest", "events")]
        read_only_fields = fields


class JobSubmitRequestSerializer(JobSubmitSerializer):
    """The body of a submission as documented (REST schema, MCP input): the common fields and every
    recipe's own, each used only with its recipe. Validation is by the recipe's serializer above."""

    script = serializers.CharField(required=False, help_text="pytorch: the script's path, e.g. /s3/scripts/train.py.")
    args = ArgsField(required=False, help_text="pytorch, ms_swift: arguments (a list, or one string).")
    config = serializers.CharField(
        required=False, help_text="llama_factory, ms_swift: a YAML config, inline or as a path /s3/….yaml."
    )
    command = serializers.ChoiceField(choices=MS_SWIFT_TRAINING, required=False, help_text="ms_swift: sft, pt or rlhf.")
    entrypoint = serializers.CharField(
        required=False,
        help_text="verl: a script on the storage (/s3/….sh) or a command (python3 -m verl.trainer.main_ppo …).",
    )
    worker_replicas = serializers.IntegerField(required=False, min_value=0, help_text="verl: Ray workers (nodes - 1).")


def resubmission(job: Job) -> dict:
    """The validated spec of a job's request submitted again: checked as new (the group, storage and paths
    may have changed since), with the same inputs."""
    inputs = set(RECIPE_SERIALIZERS[job.recipe]().fields)
    body = {key: value for key, value in job.spec.items() if key in inputs and value is not None}
    if isinstance(body.get("storage"), dict):
        body["storage"] = list(body["storage"])
    return validated_submission(body, job.cluster)
