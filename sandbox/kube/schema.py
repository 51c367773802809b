"""Validation of custom objects against a CRD's `openAPIV3Schema` (structural schema subset).

The OpenAPI subset is turned into JSON Schema once per CRD version (cached) and checked with
jsonschema. Formats are not enforced (kube-apiserver is lenient on most of them too).
Unknown fields are pruned the way the apiserver prunes them (unless
`x-kubernetes-preserve-unknown-fields`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import jsonschema

from .errors import cause

_DROP = {"format", "default", "example", "externalDocs", "x-kubernetes-validations"}


def to_json_schema(s: Any) -> Any:
    if isinstance(s, list):
        return [to_json_schema(x) for x in s]
    if not isinstance(s, dict):
        return s
    out: dict[str, Any] = {}
    for k, v in s.items():
        if k in _DROP:
            continue
        if k in ("properties", "patternProperties", "definitions"):
            out[k] = {pk: to_json_schema(pv) for pk, pv in v.items()}
        elif k in ("items", "additionalProperties", "not"):
            out[k] = to_json_schema(v)
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [to_json_schema(x) for x in v]
        else:
            out[k] = v
    if s.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.pop("anyOf", None)
        out["type"] = ["integer", "string"]
    if s.get("nullable") and "type" in out:
        t = out["type"]
        out["type"] = (t if isinstance(t, list) else [t]) + ["null"]
    return out


def _fmt_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def _value_repr(v: Any) -> str:
    if isinstance(v, dict):
        return '"object"'
    if isinstance(v, list):
        return '"array"'
    return json.dumps(v)


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


class SchemaValidator:
    def __init__(self, openapi: dict[str, Any]) -> None:
        self.openapi = openapi
        schema = to_json_schema(openapi)
        # metadata is validated by the apiserver itself, never by the CRD schema
        if isinstance(schema.get("properties"), dict):
            schema["properties"].pop("metadata", None)
        self._v = jsonschema.Draft7Validator(schema)

    def errors(self, obj: dict[str, Any]) -> list[dict[str, str]]:
        causes = []
        for e in sorted(self._v.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
            path = _fmt_path(e.absolute_path)
            if e.validator == "required":
                missing = e.message.split("'")[1] if "'" in e.message else str(e.validator_value)
                fld = f"{path}.{missing}" if path else missing
                causes.append(cause(fld, "Required value", "FieldValueRequired"))
            elif e.validator == "type":
                want = e.validator_value
                want_s = want if isinstance(want, str) else " or ".join(want)
                got = _json_type(e.instance)
                causes.append(
                    cause(
                        path,
                        f'Invalid value: "{got}": {path} in body must be of type {want_s}: "{got}"',
                        "FieldValueTypeInvalid",
                    )
                )
            elif e.validator == "enum":
                vals = ", ".join(json.dumps(x) for x in e.validator_value)
                causes.append(
                    cause(
                        path,
                        f"Unsupported value: {_value_repr(e.instance)}: supported values: {vals}",
                        "FieldValueNotSupported",
                    )
                )
            else:
                causes.append(cause(path, f"Invalid value: {_value_repr(e.instance)}: {path} in body {e.message}"))
        return causes


def prune(
    obj: Any, schema: dict[str, Any] | None, root: bool = False, path: str = "", removed: list[str] | None = None
) -> Any:
    """Drop fields the schema does not know (apiserver pruning), in place; returns obj.
    The dropped fields' paths are appended to `removed` (for fieldValidation=Strict)."""
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return obj
    if isinstance(obj, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        if props is not None:
            for k in list(obj):
                if root and k in ("apiVersion", "kind", "metadata"):
                    continue
                sub = f"{path}.{k}" if path else k
                if k in props:
                    prune(obj[k], props[k], path=sub, removed=removed)
                elif isinstance(addl, dict):
                    prune(obj[k], addl, path=sub, removed=removed)
                elif addl is not True:
                    del obj[k]
                    if removed is not None:
                        removed.append(sub)
        elif isinstance(addl, dict):
            for k in obj:
                prune(obj[k], addl, path=f"{path}.{k}" if path else k, removed=removed)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            prune(item, schema["items"], path=f"{path}[{i}]", removed=removed)
    return obj


def apply_defaults(obj: Any, schema: dict[str, Any] | None) -> Any:
    """Fill `default`s of properties that are absent (structural defaulting), in place."""
    if not isinstance(schema, dict):
        return obj
    if isinstance(obj, dict):
        for k, sub in (schema.get("properties") or {}).items():
            if k not in obj and isinstance(sub, dict) and "default" in sub:
                obj[k] = json.loads(json.dumps(sub["default"]))
            if k in obj:
                apply_defaults(obj[k], sub)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(item, schema["items"])
    return obj
