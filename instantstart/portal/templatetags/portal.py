"""Small display helpers for portal templates."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as a short human duration: 42s, 3m 05s, 2h 07m."""
    if seconds is None:
        return "—"
    total = int(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


@register.inclusion_tag("portal/_badge.html")
def status_badge(status: str, label: str | None = None) -> dict:
    return {"status": status, "label": label or status.capitalize()}


@register.inclusion_tag("portal/_errors.html")
def field_errors(errors: dict | None, field: str) -> dict:
    """The serializer errors of one field (``errors`` is ``serializer.errors``)."""
    return {"messages": (errors or {}).get(field, [])}
