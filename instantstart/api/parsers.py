"""The one request-body parser of the REST API (settings: DEFAULT_PARSER_CLASSES): JSON, an object
at the top, nested at most MAX_DEPTH levels, at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes.

Every body the API takes is a JSON object (nested bodies cannot be form-encoded), so a list, a
number or a string is a 400 before any serializer sees it; a body deeper than any request needs
would otherwise reach Python's recursion limit (a 500), and a body over the limit is a JSON 413.
Fields the endpoint does not declare are a 400 (instantstart.api.strict).
"""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

from .strict import check_body

MAX_DEPTH = 64


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"
    default_detail = "The request body is too large."


def too_large() -> RequestTooLarge:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return RequestTooLarge(f"The request body is larger than {limit} bytes.")


def depth(value) -> int:
    """How deeply ``value`` nests lists and objects (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


class JSONObjectParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if limit is not None and len(raw) > limit:
            raise too_large()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(raw.decode(encoding))
        except RecursionError:
            raise exceptions.ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.") from None
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        if not isinstance(data, dict):
            raise exceptions.ParseError(f"The body must be a JSON object, not {type(data).__name__}.")
        if depth(data) > MAX_DEPTH:
            raise exceptions.ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.")
        context = parser_context or {}
        if context.get("view") is not None and context.get("request") is not None:
            check_body(context["view"], context["request"].method, data)
        return data
