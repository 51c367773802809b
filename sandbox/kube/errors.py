"""Kubernetes `Status` errors, shaped exactly as kube-apiserver returns them.

Clients branch on `reason`/`code` (the official client raises ApiException with the body,
kubectl prints `message`), so every failure path builds one of these.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _res(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_res(group, plural)} "{name}" not found',
        {"name": name, "group": group, "kind": plural},
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_res(group, plural)} "{name}" already exists',
        {"name": name, "group": group, "kind": plural},
    )


def conflict(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_res(group, plural)} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        {"name": name, "group": group, "kind": plural},
    )


def invalid(group: str, kind: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid; `causes` items are {"field", "message", "reason"}."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    gk = f"{kind}.{group}" if group else kind
    if len(parts) == 1:
        summary = parts[0]
    else:
        summary = "[" + ", ".join(parts) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{gk} "{name}" is invalid: {summary}',
        {"name": name, "group": group, "kind": kind, "causes": causes},
    )


def cause(field: str, message: str, reason: str = "FieldValueInvalid") -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml "
        f"(got {content_type})",
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)
