"""The schema check every manifest passes before it is sent: the CRD's openAPIV3Schema as the cluster
serves it (the operator's own CRD, so the check is exactly what the API server will apply), with
jsonschema, plus the unknown-field check the API server makes under `fieldValidation=Strict`."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from kubernetes import client as k8s

from clusters.models import Cluster
from instantstart.errors import cloud_read

from .cluster import kube

CRD_NAMES = {"HyperPodPyTorchJob": "hyperpodpytorchjobs.sagemaker.amazonaws.com", "RayJob": "rayjobs.ray.io"}


@cloud_read()
def crd_schema(cluster: Cluster, kind: str, version: str) -> dict | None:
    """The openAPIV3Schema of ``kind`` at ``version`` served by the cluster (None: no such CRD)."""
    api = k8s.ApiextensionsV1Api(kube(cluster))
    try:
        crd = api.read_custom_resource_definition(CRD_NAMES[kind])
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    raw = api.api_client.sanitize_for_serialization(crd)
    for served in raw["spec"]["versions"]:
        if served["name"] == version:
            return (served.get("schema") or {}).get("openAPIV3Schema") or {}
    return None


def schema_errors(manifest: dict, schema: dict) -> list[str]:
    """Where the manifest breaks the schema, as `path: message` (empty when it validates)."""
    errors = [
        f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in Draft202012Validator(schema).iter_errors(manifest)
    ]
    errors.extend(_unknown_fields(manifest, schema, ""))
    return sorted(set(errors))


def _unknown_fields(value: Any, schema: dict, path: str) -> list[str]:
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        found = []
        for key, item in value.items():
            here = f"{path}.{key}" if path else key
            if props is not None and key in props:
                found.extend(_unknown_fields(item, props[key], here))
            elif isinstance(extra, dict):
                found.extend(_unknown_fields(item, extra, here))
            elif props is not None and extra is not True and not (path == "" and key in ("apiVersion", "kind")):
                if path == "metadata" or path.endswith(".metadata"):
                    continue  # ObjectMeta is not spelled out in CRD schemas
                found.append(f'{here}: unknown field "{key}"')
        return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [e for i, item in enumerate(value) for e in _unknown_fields(item, schema["items"], f"{path}.{i}")]
    return []
