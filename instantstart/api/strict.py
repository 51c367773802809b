"""Unknown fields of a request body are a 400 on every REST endpoint, whatever serializer it uses.

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


def unknown_field_errors(serializer, data) -> dict:
    """Field errors for every key of ``data`` (and of the objects nested in it) not declared."""
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
            if nested := unknown_field_errors(field, data[name]):
                errors[name] = nested
    return errors


def check_body(view, method: str, data) -> None:
    """Raise a 400 naming each undeclared field of the body."""
    if not isinstance(data, Mapping) or not data:
        return
    serializer = declared_request_serializer(view, method)
    if serializer is None:
        errors = {name: [NO_BODY] for name in data}
    else:
        errors = unknown_field_errors(serializer, data)
    if errors:
        raise serializers.ValidationError(errors)
