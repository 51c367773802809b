"""Where a DRF view's action is routed in the URLconf: its URL name, HTTP method and URL keywords.

A tool names a view and an action; everything about the HTTP call it makes comes from here, so a
tool follows its REST route when the route changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    """One (view, action) as the URLconf routes it."""

    name: str  # the qualified URL name, for reverse()
    method: str  # lower case: get, post, patch, delete
    kwargs: tuple[str, ...]  # the URL's keywords in path order
    callback: Callable  # the view function the URLconf calls (as_view() of the view)


class RouteError(LookupError):
    """A view action that no URL routes, or routes under more than one method."""


def route_for(view: type, action: str | None) -> Route:
    """The one route of ``view``'s ``action`` (for an APIView, ``action`` is None)."""
    found = [route for cls, name, route in _routes(get_resolver()) if cls is view and name == action]
    label = view.__name__ + (f".{action}" if action else "")
    if not found:
        raise RouteError(f"No URL routes {label}.")
    if len({route.method for route in found}) > 1:
        methods = ", ".join(sorted({route.method.upper() for route in found}))
        raise RouteError(f"{label} is routed under several methods ({methods}): a tool needs one.")
    return found[0]


@lru_cache(maxsize=4)
def _routes(resolver: URLResolver) -> tuple[tuple[type, str | None, Route], ...]:
    """(view class, action, route) for every routed method of every DRF view, in URLconf order."""
    routes: list[tuple[type, str | None, Route]] = []

    def walk(patterns: list, namespace: str, kwargs: tuple[str, ...]) -> None:
        for pattern in patterns:
            here = kwargs + _keywords(pattern)
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, inner, here)
            elif isinstance(pattern, URLPattern) and pattern.name:
                cls = getattr(pattern.callback, "cls", None)
                if cls is None:
                    continue
                actions = getattr(pattern.callback, "actions", None)
                if actions:  # a viewset route: {method: action}
                    entries = [(action, method) for method, action in actions.items()]
                else:  # an APIView: every method it implements
                    entries = [(None, method) for method in cls.http_method_names if hasattr(cls, method)]
                for action, method in entries:
                    if method not in ("head", "options"):
                        routes.append((cls, action, Route(namespace + pattern.name, method, here, pattern.callback)))

    walk(resolver.url_patterns, "", ())
    # The first route of a (view, action, method) wins: DRF's format-suffix duplicates come after.
    first: dict[tuple, tuple[type, str | None, Route]] = {}
    for cls, action, route in routes:
        first.setdefault((cls, action, route.method), (cls, action, route))
    return tuple(first.values())


def _keywords(pattern) -> tuple[str, ...]:
    """The named groups of a URL pattern, in the order they appear."""
    groups = pattern.pattern.regex.groupindex
    return tuple(sorted(groups, key=groups.get))
