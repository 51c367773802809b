"""The base of every input serializer: a field it does not declare is a 400, and a body's errors
are reported all at once — each field's own, and the cross-field and cloud checks of the fields
that are valid — rather than one layer at a time.

Serializers that derive from ``InputSerializer`` put their cross-object checks (against the
database or the cloud) in ``cross_check(attrs, invalid)``: it runs after the field checks, also
when some fields failed, and checks only what the valid fields allow. Viewsets (instantstart.api.
viewsets) refuse unknown fields of any declared request serializer, InputSerializer or not.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.fields import SkipField, get_error_detail
from rest_framework.settings import api_settings

UNKNOWN_FIELD = "Unknown field."


def unknown_fields(serializer: serializers.Serializer, data) -> list[str]:
    """The keys of ``data`` the serializer does not declare (read-only fields are not inputs).

    A serializer's ``refused_fields`` are known too: it refuses them itself, with a message that
    says why (a field fixed at create), rather than "Unknown field"."""
    if not isinstance(data, Mapping):
        return []
    known = {name for name, field in serializer.fields.items() if not field.read_only}
    known |= set(getattr(serializer, "refused_fields", ()))
    return sorted(str(key) for key in data if key not in known)


def merge_errors(errors: dict, more: dict) -> dict:
    """Field errors of two checks, in one dict (lists concatenated, nested dicts merged)."""
    for key, value in more.items():
        if key not in errors:
            errors[key] = value
        elif isinstance(errors[key], dict) and isinstance(value, dict):
            merge_errors(errors[key], value)
        elif isinstance(errors[key], list) and isinstance(value, list):
            errors[key] = [*errors[key], *value]
    return errors


class InputSerializer(serializers.Serializer):
    """A request body (or one object of it): unknown fields refused, every error at once."""

    def cross_check(self, attrs: dict, invalid: set[str]) -> dict:
        """Errors of checks across fields or against other objects ({} when none).

        ``attrs`` holds the fields that passed their own checks; ``invalid`` names those that did
        not (a check that needs one of them is skipped: its field already carries an error)."""
        return {}

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            message = self.error_messages["invalid"].format(datatype=type(data).__name__)
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]}, code="invalid")
        attrs: dict = {}
        errors: dict = {name: [UNKNOWN_FIELD] for name in unknown_fields(self, data)}
        # DRF's own loop (Serializer.to_internal_value), keeping the valid values when others fail.
        for field in self._writable_fields:
            validate_method = getattr(self, "validate_" + field.field_name, None)
            try:
                value = field.run_validation(field.get_value(data))
                if validate_method is not None:
                    value = validate_method(value)
            except serializers.ValidationError as exc:
                errors[field.field_name] = exc.detail
            except DjangoValidationError as exc:
                errors[field.field_name] = get_error_detail(exc)
            except SkipField:
                pass
            else:
                self.set_value(attrs, field.source_attrs, value)
        merge_errors(errors, self.cross_check(attrs, set(errors)))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs
