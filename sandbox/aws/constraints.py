"""Server-side input constraints of an AWS operation, from its botocore service model.

botocore checks types, required members and minimums before sending; the service checks the rest
(maximum lengths, patterns, enums, ranges) and answers ValidationException in the framework's
words: `2 validation errors detected: Value 'bad key!' at 'instanceGroups.1.member.kubernetesConfig.
labels' failed to satisfy constraint: Map keys must satisfy constraint: [...]; Value ...`.
Member paths are lower-camel, list items `.N.member` (1-based), as AWS prints them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from sandbox.aws.protocol import AwsError, service_model


@lru_cache(maxsize=256)
def _pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:  # Java-only syntax (e.g. \p{...}): not checked here
        return None


def _show(value: Any) -> str:
    """A value as the Java framework prints it: lists [a, b], maps {k=v}."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_show(k)}={_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _scalar_failures(shape: Any, value: Any) -> list[str]:
    meta = shape.metadata
    out = []
    if shape.type_name == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            out.append(f"Member must have length less than or equal to {meta['max']}")
        if "min" in meta and len(value) < meta["min"]:
            out.append(f"Member must have length greater than or equal to {meta['min']}")
        rx = _pattern(meta["pattern"]) if "pattern" in meta else None
        if rx is not None and not rx.fullmatch(value):
            out.append(f"Member must satisfy regular expression pattern: {meta['pattern']}")
        if shape.enum and value not in shape.enum:
            out.append(f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
    elif shape.type_name in ("integer", "long") and isinstance(value, int) and not isinstance(value, bool):
        if "max" in meta and value > meta["max"]:
            out.append(f"Member must have value less than or equal to {meta['max']}")
        if "min" in meta and value < meta["min"]:
            out.append(f"Member must have value greater than or equal to {meta['min']}")
    return out


def _all_constraints(shape: Any) -> list[str]:
    """Every constraint of a shape, as listed for map keys and values."""
    meta, out = shape.metadata, []
    if "max" in meta:
        out.append(f"Member must have length less than or equal to {meta['max']}")
    if "min" in meta:
        out.append(f"Member must have length greater than or equal to {meta['min']}")
    if "pattern" in meta:
        out.append(f"Member must satisfy regular expression pattern: {meta['pattern']}")
    if getattr(shape, "enum", None):
        out.append(f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
    return out


def _walk(shape: Any, value: Any, path: str, errors: list[str]) -> None:
    t = shape.type_name
    if t == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():
            if name in value and value[name] is not None:
                child = name[:1].lower() + name[1:]
                _walk(member, value[name], f"{path}.{child}" if path else child, errors)
    elif t == "list" and isinstance(value, list):
        if "max" in shape.metadata and len(value) > shape.metadata["max"]:
            errors.append(
                f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: "
                f"Member must have length less than or equal to {shape.metadata['max']}"
            )
        for i, item in enumerate(value, start=1):
            _walk(shape.member, item, f"{path}.{i}.member", errors)
    elif t == "map" and isinstance(value, dict):
        if "max" in shape.metadata and len(value) > shape.metadata["max"]:
            errors.append(
                f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: "
                f"Member must have length less than or equal to {shape.metadata['max']}"
            )
        if any(_scalar_failures(shape.key, k) for k in value):
            errors.append(
                f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: Map keys must satisfy "
                f"constraint: [{', '.join(_all_constraints(shape.key))}]"
            )
        if shape.value.type_name == "string" and any(_scalar_failures(shape.value, v) for v in value.values()):
            errors.append(
                f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: Map value must satisfy "
                f"constraint: [{', '.join(_all_constraints(shape.value))}]"
            )
    else:
        for failure in _scalar_failures(shape, value):
            errors.append(f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: {failure}")


def validate_input(model_name: str, operation: str, params: dict[str, Any]) -> None:
    """Raise the service's ValidationException when params break the operation's constraints."""
    model = service_model(model_name)
    if model is None:
        return
    shape = model.operation_model(operation).input_shape
    if shape is None:
        return
    errors: list[str] = []
    _walk(shape, params, "", errors)
    if errors:
        n = len(errors)
        raise AwsError(
            "ValidationException",
            f"{n} validation error{'s' if n > 1 else ''} detected: " + "; ".join(errors),
            400,
        )
