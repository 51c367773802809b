"""One error shape for every REST answer (and, through the MCP server, every tool error).

{"error": {"code": "invalid", "message": "…", "fields": {"name": ["…"]}, "hint": "…"}}

``fields`` comes with validation errors, ``hint`` with domain errors that say what to do. Domain
errors (``instantstart.errors``) are mapped here and nowhere else: a viewset lets them propagate.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from instantstart.errors import DomainError, cloud_error


def _flatten_message(detail) -> str:
    if isinstance(detail, dict):
        for field, value in detail.items():
            inner = _flatten_message(value)
            return inner if field == "non_field_errors" else f"{field}: {inner}"
        return "Invalid input."
    if isinstance(detail, list):
        return _flatten_message(detail[0]) if detail else "Invalid input."
    return str(detail)


def error_body(code: str, message: str, fields: dict | None = None, hint: str = "") -> dict:
    body: dict = {"error": {"code": code, "message": message}}
    if fields:
        body["error"]["fields"] = fields
    if hint:
        body["error"]["hint"] = hint
    return body


def domain_error_response(exc: DomainError) -> Response:
    return Response(error_body(exc.code, exc.message, hint=exc.hint), status=exc.status)


def exception_handler(exc, context):
    if isinstance(exc, DomainError):  # before Http404: NotFound is one, and carries its own message
        return domain_error_response(exc)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        # A cloud error no reader classified still gets its answer; anything else is a bug (500).
        error = cloud_error(exc)
        return domain_error_response(error) if error is not None else None
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body("invalid", _flatten_message(detail), detail)
    else:
        codes = exc.get_codes() if hasattr(exc, "get_codes") else "error"
        code = codes if isinstance(codes, str) else "error"
        response.data = error_body(code, _flatten_message(getattr(exc, "detail", str(exc))))
    return response
