"""One error shape for every REST answer (and, through the MCP server, every tool error).

{"error": {"code": "invalid", "message": "…", "fields": {"name": ["…"]}}}
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


def _flatten_message(detail) -> str:
    if isinstance(detail, dict):
        for field, value in detail.items():
            inner = _flatten_message(value)
            return inner if field == "non_field_errors" else f"{field}: {inner}"
        return "Invalid input."
    if isinstance(detail, list):
        return _flatten_message(detail[0]) if detail else "Invalid input."
    return str(detail)


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    body: dict = {"error": {"code": code, "message": message}}
    if fields:
        body["error"]["fields"] = fields
    return body


def exception_handler(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body("invalid", _flatten_message(detail), detail)
    else:
        codes = exc.get_codes() if hasattr(exc, "get_codes") else "error"
        code = codes if isinstance(codes, str) else "error"
        response.data = error_body(code, _flatten_message(getattr(exc, "detail", str(exc))))
    return response


def not_found_response() -> Response:
    return Response(error_body("not_found", "Not found."), status=status.HTTP_404_NOT_FOUND)
