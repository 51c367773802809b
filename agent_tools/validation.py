"""Tool arguments checked against the tool"s declared input schema before anything is dispatched.

The schema (``Tool.input_schema``) is what ``tools/list`` shows the agent; a call that does not fit
it — a wrong type, an argument the tool does not take, a missing required one, a number out of
range — is refused here with the REST error shape (``invalid``, naming each field), so an agent
gets "id: must be a string" instead of whatever the endpoint makes of ``123``. The serializer
behind the endpoint stays the validator of values the schema lets through.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from instantstart.api.errors import error_body

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


# Value constraints (not shape): the serializer behind the endpoint checks these itself, with the
# REST API's own messages, so they are left to it — except for arguments no serializer sees.
_VALUE_CHECKS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "required",
    }
)


def argument_errors(schema: dict[str, Any], arguments: Any, *, strict: frozenset[str] | None = None) -> dict | None:
    """The ``invalid`` error body for ``arguments`` that do not fit ``schema``, or None when they do.

    Always refused: an argument the schema does not declare (at any depth) and a value of the wrong
    JSON type. Value constraints (bounds, choices, lengths, required fields) are refused here only
    for the top-level arguments in ``strict`` (all of them when None) — the ones no serializer
    checks, such as path ids and page bounds; for the others the endpoint's serializer answers, so
    REST and the tool give the same 400.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return error_body("invalid", "Arguments must be a JSON object.", {"non_field_errors": ["Not an object."]})
    fields: dict[str, list[str]] = {}
    properties = schema.get("properties", {})
    for name in arguments:
        if name not in properties:
            takes = ", ".join(properties) or "no arguments"
            fields.setdefault(name, []).append(f"Unknown argument: this tool takes {takes}.")
    known = {name: value for name, value in arguments.items() if name in properties}
    for error in _validator(schema).iter_errors(known):
        for field, message in _describe(error):
            if _leaf(error).validator in _VALUE_CHECKS and strict is not None and field.split(".")[0] not in strict:
                continue
            fields.setdefault(field, []).append(message)
    if not fields:
        return None
    first = next(iter(fields))
    return error_body("invalid", f"{first}: {fields[first][0]}", fields)


_validators: dict[int, tuple[dict, Draft202012Validator]] = {}


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    """One validator per schema object (a tool's schema is built once and kept)."""
    cached = _validators.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = _validators[id(schema)] = (schema, Draft202012Validator(schema))
    return cached[1]


def _describe(error: ValidationError) -> list[tuple[str, str]]:
    if error.validator == "required" and not error.path:
        present = error.instance if isinstance(error.instance, dict) else {}
        return [(name, "This field is required.") for name in error.validator_value if name not in present]
    if error.validator == "additionalProperties":  # inside a nested object argument
        return [(_field(error), error.message)]
    return [(_field(error), _message(error))]


def _leaf(error: ValidationError) -> ValidationError:
    """The error that decides: for a nullable field (anyOf [schema, null]), its non-null branch's."""
    if error.validator == "anyOf":
        branches = [sub for sub in error.context or [] if sub.validator != "type" or sub.validator_value != "null"]
        if branches:
            return _leaf(branches[0])
    return error


def _field(error: ValidationError) -> str:
    path = [str(part) for part in error.absolute_path]
    return ".".join(path) if path else "non_field_errors"


def _message(error: ValidationError) -> str:
    if error.validator == "type":
        expected = error.validator_value
        names = [_TYPE_NAMES.get(t, t) for t in (expected if isinstance(expected, list) else [expected])]
        return f"Must be {' or '.join(names)}, not {_json_type(error.instance)}."
    if error.validator == "anyOf":
        # Nullable fields are anyOf [schema, null]: report what the non-null branch says.
        best = [sub for sub in error.context or [] if sub.validator != "type" or sub.validator_value != "null"]
        if best:
            return _message(best[0])
    if error.validator == "enum":  # DRF's words for a ChoiceField, so REST and the tool say the same
        return f'"{error.instance}" is not a valid choice.'
    if error.validator == "maximum":
        return f"Ensure this value is less than or equal to {error.validator_value}."
    if error.validator == "minimum":
        return f"Ensure this value is greater than or equal to {error.validator_value}."
    if error.validator == "maxLength":
        return f"Ensure this field has no more than {error.validator_value} characters."
    if error.validator == "minLength":
        return f"Ensure this field has at least {error.validator_value} characters."
    return error.message


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
