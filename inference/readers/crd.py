"""Validate a custom object against the schema the cluster's API server serves for its kind.

The schema is read from the CRD itself (apiextensions), so what is checked is exactly what the
installed operator registered; JSON Schema keywords are checked by ``jsonschema`` and Kubernetes'
``x-kubernetes-*`` extensions are ignored (the API server applies those).
"""

from __future__ import annotations

import jsonschema
from kubernetes import client as k8s

from instantstart.errors import DomainError, cloud_read


class InvalidManifest(DomainError):
    """A manifest the cluster would refuse (400 ``invalid_manifest``); nothing was applied."""

    default_code = "invalid_manifest"


def _schema(api: k8s.ApiClient, crd: str, version: str) -> dict:
    found = k8s.ApiextensionsV1Api(api).read_custom_resource_definition(crd)
    served = next(v for v in found.spec.versions if v.name == version)
    return api.sanitize_for_serialization(served.schema.open_apiv3_schema)


def _openapi(schema: dict) -> dict:
    """The CRD's OpenAPI v3 schema as plain JSON Schema (camelCase keys the client renamed)."""
    renamed = {"x_kubernetes_preserve_unknown_fields": "x-kubernetes-preserve-unknown-fields"}
    if isinstance(schema, dict):
        return {renamed.get(k, k): _openapi(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_openapi(v) for v in schema]
    return schema


@cloud_read()
def validate_custom_object(api: k8s.ApiClient, crd: str, manifest: dict) -> None:
    """Raise :class:`InvalidManifest` naming the first field the CRD's schema refuses."""
    version = manifest["apiVersion"].rsplit("/", 1)[-1]
    schema = _openapi(_schema(api, crd, version))
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(manifest), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "(root)"
        raise InvalidManifest(f"{manifest['kind']} {where}: {first.message}")
