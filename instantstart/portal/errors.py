"""The portal's one place for refusals: a domain error (or a classified cloud error) becomes the
page's message; anything else is a bug and propagates (a 500, as it should).

    with page_errors(request) as refused:           # flash: message and hint go to messages.error
        operation = delete_instance_group(access=request.access, group=group, force=force)
    if refused:
        return render(request, "clusters/group_delete.html", context, status=refused.status)

    with page_errors() as failed:                    # inline: the view puts failed.message in its context
        context["zones"] = catalog.availability_zones(team, region)
    context["catalog_error"] = failed.message

``NotFound`` is not caught: it is Django's Http404, so the page answers 404 as REST does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.contrib import messages
from django.http import HttpRequest

from instantstart.errors import DomainError, NotFound, cloud_error


class Refusal:
    """What a ``page_errors`` block caught: falsy while nothing was refused."""

    def __init__(self) -> None:
        self.error: DomainError | None = None

    def __bool__(self) -> bool:
        return self.error is not None

    @property
    def message(self) -> str:
        return self.error.message if self.error is not None else ""

    @property
    def text(self) -> str:
        """The message with what to do about it, as the page shows it."""
        if self.error is None:
            return ""
        return f"{self.error.message} {self.error.hint}".strip()

    @property
    def status(self) -> int:
        """The HTTP status REST answers for the same refusal (the page answers it too)."""
        return self.error.status if self.error is not None else 200


@contextmanager
def page_errors(request: HttpRequest | None = None) -> Iterator[Refusal]:
    """Catch the domain's refusal inside the block; with ``request`` it is also flashed."""
    refusal = Refusal()
    try:
        yield refusal
    except NotFound:
        raise
    except DomainError as exc:
        refusal.error = exc
    except Exception as exc:
        refusal.error = cloud_error(exc)
        if refusal.error is None:
            raise
    if refusal and request is not None:
        messages.error(request, refusal.text)
