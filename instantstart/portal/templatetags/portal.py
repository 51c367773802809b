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


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''} ago"
    return "just now" if seconds < 10 else f"{seconds} s ago"


@register.filter
def human_time(value) -> str:
    """A time as "3 min ago", the full time on hover (an ISO string or a datetime; blank: "—")."""
    from datetime import UTC, datetime

    from django.utils import timezone
    from django.utils.html import format_html

    if not value:
        return "—"
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    full = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    ago = _ago((timezone.now() - moment).total_seconds())
    return format_html('<time datetime="{}" title="{}">{}</time>', moment.isoformat(), full, ago)


@register.inclusion_tag("portal/_badge.html")
def status_badge(status: str, label: str | None = None) -> dict:
    return {"status": status, "label": label or status.capitalize()}


@register.inclusion_tag("portal/_errors.html")
def field_errors(errors: dict | None, field: str) -> dict:
    """The serializer errors of one field (``errors`` is ``serializer.errors``)."""
    return {"messages": (errors or {}).get(field, [])}
