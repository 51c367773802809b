"""Validation of model download requests and the download's representation (the token is write-only)."""

from __future__ import annotations

from rest_framework import serializers

from clusters.models import Cluster, StorageKind

from ..models import DownloadKind, DownloadTarget, ModelDownload
from .endpoints import HF_ID


class ModelDownloadSerializer(serializers.Serializer):
    """A download request. Needs ``context["cluster"]``; the token is kept as a Secret, never answered."""

    source = serializers.ChoiceField(choices=("huggingface",), default="huggingface")
    id = serializers.RegexField(
        HF_ID.pattern, max_length=200, error_messages={"invalid": "A Hugging Face id such as Qwen/Qwen3-0.6B."}
    )
    kind = serializers.ChoiceField(choices=DownloadKind.choices, default=DownloadKind.MODEL)
    target = serializers.ChoiceField(choices=DownloadTarget.choices, default=DownloadTarget.S3)
    revision = serializers.RegexField(r"^[A-Za-z0-9._/-]{1,100}$", required=False)
    token = serializers.CharField(
        required=False, write_only=True, max_length=300, style={"input_type": "password"}, trim_whitespace=True
    )

    def validate(self, attrs: dict) -> dict:
        cluster: Cluster = self.context["cluster"]
        kind = StorageKind.S3 if attrs["target"] == "s3" else StorageKind.FSX
        storage = cluster.storages.filter(kind=kind, claim_name="shared").first()
        if storage is None:
            raise serializers.ValidationError({"target": [f"The cluster has no shared {kind.label} storage."]})
        if kind == StorageKind.S3:
            attrs["bucket"] = storage.bucket
        return attrs


class ModelSerializer(serializers.ModelSerializer):
    """A downloaded (or downloading) model: ``uri`` is what an endpoint's ``model`` may name."""

    id = serializers.CharField(source="repo_id")
    download_id = serializers.UUIDField(source="pk")

    class Meta:
        model = ModelDownload
        fields = [
            "download_id",
            "id",
            "kind",
            "source",
            "target",
            "status",
            "progress",
            "size_bytes",
            "uri",
            "mount_path",
            "job_name",
            "created_at",
        ]
