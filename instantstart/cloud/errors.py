"""Classify errors from AWS and Kubernetes: retry (transient) or tell the user (permanent)."""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

_THROTTLING_CODES = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "ProvisionedThroughputExceededException",
    "SlowDown",
    "PriorRequestNotComplete",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "InternalFailure",
    "InternalError",
    "InternalServerError",
    "InternalServerException",
}


@dataclass(frozen=True)
class Classified:
    transient: bool
    code: str
    message: str


def classify(exc: BaseException) -> Classified | None:
    """Classify a cloud error, or None when it is not one (a bug, to be reported as such)."""
    # A domain error raised from a cloud error (instantstart.errors.CloudError) carries its class.
    carried = getattr(exc, "classified", None)
    if isinstance(carried, Classified):
        return carried
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "ClientError")
        message = error.get("Message") or str(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return Classified(code in _THROTTLING_CODES or status >= 500, code, message)
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)):
        return Classified(True, "ConnectionError", str(exc))
    try:
        from kubernetes.client.exceptions import ApiException
    except ImportError:  # pragma: no cover - kubernetes is a hard dependency
        ApiException = ()  # type: ignore[assignment]
    if ApiException and isinstance(exc, ApiException):
        status = exc.status or 0
        return Classified(status in (0, 429) or status >= 500, f"Kubernetes{status}", exc.reason or str(exc))
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return Classified(True, type(exc).__name__, str(exc))
    return None
