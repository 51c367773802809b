"""OPTIONS on every REST endpoint (settings: DEFAULT_METADATA_CLASS): the view's name, description,
what it renders and parses, and the allowed methods. DRF's default also describes a POST's fields
from the view's serializer, which fails (a 500) on views that name no serializer, such as node
actions; the fields are the OpenAPI document's job (/api/v1/schema/)."""

from __future__ import annotations

from rest_framework.metadata import SimpleMetadata


class ApiMetadata(SimpleMetadata):
    def determine_metadata(self, request, view):
        metadata = super().determine_metadata(request, view)
        metadata["allowed_methods"] = sorted(view.allowed_methods)
        metadata["schema"] = "/api/v1/schema/"
        return metadata

    def determine_actions(self, request, view):
        return {}
