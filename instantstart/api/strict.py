"""Unknown fields of a request body are a 400 on every REST endpoint, whatever serializer it uses;
so is a value of another JSON type than the schema says (``"count": "2"``, ``"name": 0``).

The request serializer of a view is the one its ``@extend_schema(request=…)`` declares — read
through drf-spectacular exactly as /api/v1/schema/ (and the MCP tools) read it, once per view and
method. The parser (instantstart.api.parsers) checks each body against it, objects nested in
lists and serializers included, before the view sees the body: a field the API does not
document never passes silently, and a new app's endpoints get the check without doing anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from rest_framework import serializers

from .serializers import UNKNOWN_FIELD, unknown_fields

NO_BODY = "This endpoint takes no body fields."


@cache
def _declared(view_class: type, actions: tuple, method: str):
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.settings import spectacular_settings

    callback = view_class.as_view(dict(actions)) if actions else view_class.as_view()
    generator = SchemaGenerator()  # the schema refers to its view weakly: keep both while reading
    view = generator.create_view(callback, method)
    view.request = spectacular_settings.GET_MOCK_REQUEST(method, "/", view, None)
    view.schema.method = method
    serializer = view.schema.get_request_serializer()
    return serializer() if isinstance(serializer, type) else serializer


def declared_request_serializer(view, method: str) -> serializers.Serializer | None:
    """The body serializer ``view`` documents for ``method`` (None: the endpoint takes no body)."""
    actions = tuple(sorted((getattr(view, "action_map", None) or {}).items()))
    try:
        return _declared(type(view), actions, method.lower())
    except Exception:  # noqa: BLE001 - a view spectacular cannot read is not checked here, never a 500
        return None


# JSON types as the schema documents them: DRF would turn 0 into "0" or "yes" into True silently.
_JSON_TYPES: list[tuple[tuple[type, ...], tuple[type, ...], str]] = [
    ((serializers.BooleanField,), (bool,), "Must be a boolean (true or false)."),
    ((serializers.IntegerField,), (int,), "Must be an integer."),
    ((serializers.FloatField,), (int, float), "Must be a number."),
    (
        (serializers.CharField, serializers.UUIDField, serializers.DateTimeField, serializers.DateField),
        (str,),
        "Must be a string.",
    ),
    ((serializers.ListField, serializers.ListSerializer, serializers.MultipleChoiceField), (list,), "Must be a list."),
    ((serializers.DictField, serializers.Serializer), (dict,), "Must be an object."),
]


def type_error(field, value) -> str:
    """Why ``value`` is not of the JSON type ``field`` documents ("" when it is, or when unsure)."""
    if value is None:
        return ""  # the field's own check says whether null is allowed
    if isinstance(field, serializers.ChoiceField) and not isinstance(field, serializers.MultipleChoiceField):
        if all(isinstance(choice, str) for choice in field.choices) and not isinstance(value, str):
            return "Must be a string."
        return ""
    for classes, types, message in _JSON_TYPES:
        if isinstance(field, classes):
            if isinstance(value, bool) and bool not in types:
                return message
            return "" if isinstance(value, types) else message
    return ""


def unknown_field_errors(serializer, data) -> dict:
    """Field errors for every key of ``data`` (and of the objects nested in it) not declared, or not
    of the JSON type the schema documents."""
    if isinstance(serializer, serializers.ListSerializer):
        if not isinstance(data, list):
            return {}
        found = {str(i): unknown_field_errors(serializer.child, item) for i, item in enumerate(data)}
        return {i: errors for i, errors in found.items() if errors}
    if not isinstance(serializer, serializers.Serializer) or not isinstance(data, Mapping):
        return {}
    errors: dict = {name: [UNKNOWN_FIELD] for name in unknown_fields(serializer, data)}
    for name, field in serializer.fields.items():
        if name in data and not field.read_only:
            if mistyped := type_error(field, data[name]):
                errors[name] = [mistyped]
            elif nested := unknown_field_errors(field, data[name]):
                errors[name] = nested
            elif isinstance(field, serializers.ListField) and isinstance(data[name], list):
                found = {str(i): [m] for i, item in enumerate(data[name]) if (m := type_error(field.child, item))}
                if found:
                    errors[name] = found
    return errors


def check_body(view, method: str, data) -> None:
    """Raise a 400 naming each undeclared (or mistyped) field of the body. A method the view does
    not serve is left to its 405."""
    if not isinstance(data, Mapping) or not data or getattr(view, method.lower(), None) is None:
        return
    serializer = declared_request_serializer(view, method)
    if serializer is None:
        errors = {name: [NO_BODY] for name in data}
    else:
        errors = unknown_field_errors(serializer, data)
    if errors:
        raise serializers.ValidationError(errors)
