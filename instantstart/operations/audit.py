"""Writing the audit trail. Secrets never reach it."""

from __future__ import annotations

from typing import Any

from instantstart.tenancy.access import Access

from .models import AuditEvent, Operation

_SECRET_MARKERS = ("token", "secret", "password", "external_id", "credential", "private_key", "authorization")
REDACTED = "[redacted]"


def scrub(value: Any) -> Any:
    """A copy of a request summary with every secret-looking field redacted."""
    if isinstance(value, dict):
        return {
            key: REDACTED if any(marker in str(key).lower() for marker in _SECRET_MARKERS) else scrub(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [scrub(item) for item in value]
    return value


def record_audit(
    *,
    access: Access,
    action: str,
    target: Any = None,
    summary: dict | None = None,
    operation: Operation | None = None,
) -> AuditEvent:
    """Record one mutation: who, which team, through which face, on what, with what result."""
    return AuditEvent.objects.create(
        team=access.team,
        actor=access.user if getattr(access.user, "pk", None) else None,
        token=access.token,
        via=access.via,
        action=action,
        target_type=type(target).__name__.lower() if target is not None else "",
        target_id=str(getattr(target, "pk", "") or "") if target is not None else "",
        target_repr=str(target)[:200] if target is not None else "",
        summary=scrub(summary or {}),
        operation=operation,
    )
