"""Validation of storage requests (attach an existing bucket or file system) and their representation."""

from __future__ import annotations

from rest_framework import serializers

from instantstart.api.serializers import InputSerializer

from ..models import NAME_VALIDATOR, Cluster, Storage, StorageKind, StorageStatus
from ..readers.storage import bucket_exists, file_system_exists


class StorageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Storage
        fields = ["id", "name", "kind", "bucket", "file_system_id", "namespace", "claim_name", "status", "managed"]


class StorageAttachSerializer(InputSerializer):
    """Mount an existing S3 bucket or FSx file system into the cluster (context: the cluster)."""

    name = serializers.CharField(max_length=63, validators=[NAME_VALIDATOR])
    kind = serializers.ChoiceField(choices=StorageKind.choices)
    bucket = serializers.CharField(max_length=63, required=False, allow_blank=True)
    file_system_id = serializers.RegexField(r"^fs-[0-9a-f]{8,17}$", required=False, allow_blank=True)

    def validate(self, attrs: dict) -> dict:
        cluster: Cluster = self.context["cluster"]
        if Storage.objects.filter(cluster=cluster, name=attrs["name"]).exclude(status=StorageStatus.DETACHED).exists():
            raise serializers.ValidationError({"name": [f"The cluster already has storage named {attrs['name']}."]})
        if attrs["kind"] == StorageKind.S3:
            if not attrs.get("bucket"):
                raise serializers.ValidationError({"bucket": ["Required for S3 storage."]})
            if not bucket_exists(cluster, attrs["bucket"]):
                raise serializers.ValidationError({"bucket": [f"No bucket {attrs['bucket']} in the team's account."]})
            attrs.pop("file_system_id", None)
        else:
            if not attrs.get("file_system_id"):
                raise serializers.ValidationError({"file_system_id": ["Required for FSx storage."]})
            if not file_system_exists(cluster, attrs["file_system_id"]):
                raise serializers.ValidationError(
                    {"file_system_id": [f"No FSx file system {attrs['file_system_id']} in {cluster.region}."]}
                )
            attrs.pop("bucket", None)
        return attrs
