"""Domain errors: what a rule below the faces says when it refuses, defined once for every app.

Services, readers and serializers raise these; each face maps them in exactly one place:

- REST (and MCP, which dispatches into REST): ``instantstart.api.errors.exception_handler``
  answers ``{"error": {"code", "message", "hint"?}}`` with the error's ``status``.
- Portal: ``instantstart.portal.errors.page_errors`` shows the message on the page.

A new rule raises the class that says what happened; it never builds an HTTP answer itself::

    raise StateConflict(f"The cluster is {cluster.status}: groups change only once it is active.")
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ContextDecorator
from typing import TypeVar

from django.http import Http404

from instantstart.cloud.errors import Classified, classify

F = TypeVar("F", bound=Callable)


class DomainError(Exception):
    """A request the domain refuses. ``message`` is written for the user; ``hint`` says what to do."""

    status = 400
    default_code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.hint = hint


class StateConflict(DomainError):
    """The object is not in a state that allows the change (a cluster still creating, a busy group)."""

    status = 409
    default_code = "conflict"


class NotFound(DomainError, Http404):
    """No such object for this caller (another team's object is one too).

    Also Django's Http404, so a page that does not catch it still answers its 404 page.
    """

    status = 404
    default_code = "not_found"

    def __init__(self, message: str = "Not found.", *, code: str | None = None, hint: str = "") -> None:
        super().__init__(message, code=code, hint=hint)


class CloudError(DomainError):
    """AWS or Kubernetes answered with an error; ``classified`` keeps what the call answered.

    The operation engine classifies errors raised in steps; it reads ``classified`` (see
    ``instantstart.cloud.errors.classify``), so a reader used by a step is retried the same way.
    """

    def __init__(self, classified: Classified, message: str, *, hint: str = "") -> None:
        super().__init__(message, code=self.default_code, hint=hint)
        self.classified = classified


class CloudUnavailable(CloudError):
    """A transient cloud error (throttling, 5xx, timeout): the same request may work in a moment."""

    status = 503
    default_code = "cloud_unavailable"


class CloudRefused(CloudError):
    """A permanent cloud error (access denied, an invalid request): retrying does not help."""

    status = 502
    default_code = "cloud_refused"


def cloud_error(exc: BaseException) -> CloudError | None:
    """The domain error for a classified AWS/Kubernetes error, or None when ``exc`` is not one (a bug)."""
    if isinstance(exc, CloudError):
        return exc
    classified = classify(exc)
    if classified is None:
        return None
    if classified.transient:
        return CloudUnavailable(
            classified,
            f"The team's cloud did not answer ({classified.code}): {classified.message}",
            hint="Try again in a moment.",
        )
    return CloudRefused(
        classified,
        f"The team's cloud refused the call ({classified.code}): {classified.message}",
        hint="Check the team's AWS role and settings, then try again.",
    )


class cloud_read(ContextDecorator):
    """Around a read of AWS/Kubernetes: a classified cloud error leaves as a CloudError.

    Domain errors and bugs pass through unchanged. Every public function of an app's ``readers/``
    is decorated with it, so the faces only ever see domain errors.
    """

    def __enter__(self) -> cloud_read:
        return self

    def __exit__(self, exc_type, exc, traceback) -> bool:
        if exc is None or isinstance(exc, DomainError):
            return False
        error = cloud_error(exc)
        if error is None:
            return False
        raise error from exc
