"""Query parameters of the training endpoints (also parsed by the portal and the socket) and the upload."""

from __future__ import annotations

from rest_framework import serializers

MAX_LOG_LINES = 5000


class LogsQuerySerializer(serializers.Serializer):
    after = serializers.IntegerField(min_value=0, default=0, help_text="Lines with a sequence number above this.")
    pod = serializers.CharField(max_length=253, required=False, allow_blank=True, help_text="Only this pod's lines.")
    limit = serializers.IntegerField(min_value=1, max_value=MAX_LOG_LINES, default=1000)


class FilesQuerySerializer(serializers.Serializer):
    prefix = serializers.CharField(max_length=1024, required=False, allow_blank=True, default="")


class FileUploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    path = serializers.CharField(max_length=1024)

    def validate_path(self, value: str) -> str:
        path = value.strip().lstrip("/")
        if path.startswith("s3/"):
            path = path[3:]
        if not path or path.endswith("/") or any(part in ("", ".", "..") for part in path.split("/")):
            raise serializers.ValidationError("A file path relative to the bucket root, such as scripts/train.py.")
        return path


def parse_query(serializer_class, params) -> dict:
    serializer = serializer_class(data=params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
