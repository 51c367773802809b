"""JSON Schema of tool arguments and answers, derived from the DRF serializers of the REST call.

Arguments (``serializer_schema``): only the shape is described (types, choices, lengths,
required); the serializer stays the one validator, so a value the schema lets through still gets
the REST endpoint's 400 when it is wrong.

Answers (``answer_schema``): what the response serializer renders — every readable field, always
present, and possibly null (DRF renders a missing value as null whatever the field says).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


def serializer_schema(serializer: serializers.Serializer, *, partial: bool = False) -> dict[str, Any]:
    """An object schema for the writable fields of ``serializer``."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        properties[name] = field_schema(field)
        if field.required and not partial:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def field_schema(field: serializers.Field) -> dict[str, Any]:
    """The schema of one serializer field; unknown field types are described as any value."""
    schema = _type_schema(field)
    if getattr(field, "allow_null", False) and schema:
        schema = {"anyOf": [schema, {"type": "null"}]}
    if field.help_text:
        schema["description"] = str(field.help_text)
    return schema


def _type_schema(field: serializers.Field) -> dict[str, Any]:
    # Order matters: ChoiceField before CharField-like checks, subclasses before their bases.
    if isinstance(field, serializers.MultipleChoiceField):
        return {"type": "array", "items": {"type": "string", "enum": [str(c) for c in field.choices]}}
    if isinstance(field, serializers.ChoiceField):
        return {"type": "string", "enum": [str(c) for c in field.choices]}
    if isinstance(field, serializers.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, serializers.IntegerField):
        return _bounded({"type": "integer"}, field)
    if isinstance(field, (serializers.FloatField, serializers.DecimalField)):
        return _bounded({"type": "number"}, field)
    if isinstance(field, serializers.UUIDField):
        return {"type": "string", "format": "uuid"}
    if isinstance(field, serializers.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if isinstance(field, serializers.DateField):
        return {"type": "string", "format": "date"}
    if isinstance(field, serializers.EmailField):
        return {"type": "string", "format": "email"}
    if isinstance(field, serializers.CharField):
        schema: dict[str, Any] = {"type": "string"}
        if field.max_length is not None:
            schema["maxLength"] = field.max_length
        if field.min_length is not None:
            schema["minLength"] = field.min_length
        return schema
    if isinstance(field, serializers.ListSerializer):
        return {"type": "array", "items": serializer_schema(field.child)}
    if isinstance(field, serializers.ListField):
        return {"type": "array", "items": field_schema(field.child)}
    if isinstance(field, serializers.JSONField):
        return {}  # any JSON value: true, a number, a list or an object
    if isinstance(field, (serializers.DictField, serializers.HStoreField)):
        return {"type": "object"}
    if isinstance(field, serializers.Serializer):
        return serializer_schema(field)
    if isinstance(field, serializers.ManyRelatedField):
        return {"type": "array", "items": {"type": "string"}}
    if isinstance(field, serializers.RelatedField):
        return {"type": "string"}
    return {}


def _bounded(schema: dict[str, Any], field: serializers.Field) -> dict[str, Any]:
    # DecimalField bounds are Decimals, which JSON cannot carry.
    if getattr(field, "min_value", None) is not None:
        schema["minimum"] = float(field.min_value) if schema["type"] == "number" else field.min_value
    if getattr(field, "max_value", None) is not None:
        schema["maximum"] = float(field.max_value) if schema["type"] == "number" else field.max_value
    return schema


def answer_schema(serializer: serializers.BaseSerializer) -> dict[str, Any]:
    """The schema of what ``serializer`` renders (a list of them for a ListSerializer)."""
    if isinstance(serializer, serializers.ListSerializer):
        return {"type": "array", "items": answer_schema(serializer.child)}
    properties = {name: _answer_field(field) for name, field in serializer.fields.items() if not field.write_only}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        schema["required"] = list(properties)
    return schema


# Fields whose rendered value the serializer does not describe: any JSON value.
_ANY_VALUE = (serializers.SerializerMethodField, serializers.JSONField, serializers.ReadOnlyField)


def _answer_field(field: serializers.Field) -> dict[str, Any]:
    if isinstance(field, _ANY_VALUE):
        schema: dict[str, Any] = {}
    elif isinstance(field, serializers.BaseSerializer):
        schema = answer_schema(field)
    elif isinstance(field, serializers.ListField):
        schema = {"type": "array", "items": _answer_field(field.child)}
    elif isinstance(field, serializers.DictField):
        schema = {"type": "object"}
    elif isinstance(field, serializers.ChoiceField) and not isinstance(field, serializers.MultipleChoiceField):
        schema = {"enum": [str(choice) for choice in field.choices] + ([""] if field.allow_blank else [])}
    else:
        schema = _type_schema(field)
    if field.help_text:
        schema["description"] = str(field.help_text)
    return {"anyOf": [schema, {"type": "null"}]} if schema else schema
