"""Partial vs full page: the one place that decides."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def wants_partial(request: HttpRequest) -> bool:
    """True for an htmx request that swaps a fragment (a boosted navigation wants the whole page)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted


def render_page_or_partial(
    request: HttpRequest, page_template: str, partial_template: str, context: dict, status: int = 200
) -> HttpResponse:
    template = partial_template if wants_partial(request) else page_template
    return render(request, template, context, status=status)
