"""Every answer under /api/ that is an error is JSON in the error shape (instantstart.api.errors),
whatever the mode: an unknown URL (Django's 404 page, its debug page under DEBUG), a method no
view serves, a body Django refuses (RequestDataTooBig, a 413 here) and an unexpected exception (a
500, logged with its traceback; never Django's HTML or debug page). DRF views already answer in
the shape; this covers what happens before and around them."""

from __future__ import annotations

import json
import logging

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse

from .errors import error_body

logger = logging.getLogger("instantstart.api")

API_PREFIX = "/api/"
_CODES = {
    400: ("invalid", "The request is invalid."),
    401: ("not_authenticated", "Authentication credentials were not provided."),
    403: ("permission_denied", "You do not have permission to perform this action."),
    404: ("not_found", "Not found."),
    405: ("method_not_allowed", "Method not allowed."),
    413: ("request_too_large", "The request body is too large."),
    415: ("unsupported_media_type", "Unsupported media type; send application/json."),
    500: ("server_error", "Internal server error; the error was logged."),
}


def _json_error(status: int) -> JsonResponse:
    code, message = _CODES.get(status, ("error", f"HTTP {status}."))
    return JsonResponse(error_body(code, message), status=status)


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


class ApiErrorMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400 or _is_json(response):
            return response
        answer = _json_error(response.status_code)
        for header in ("Allow", "WWW-Authenticate", "Retry-After"):
            if header in response:
                answer[header] = response[header]
        return answer

    def process_exception(self, request, exception):
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, RequestDataTooBig):
            return _json_error(413)
        logger.exception("Unhandled error answering %s %s", request.method, request.path)
        return _json_error(500)


def is_error_shape(body: bytes) -> bool:
    """The body is the API's error shape (for tests and checks)."""
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(error, dict) and {"code", "message"} <= error.keys()
