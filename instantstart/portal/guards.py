"""Who may open a portal page: a logged-in user, with a current team, with at least a role."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from instantstart.tenancy.roles import Role
from instantstart.tenancy.services import must_change_password


def team_required(view: Callable | None = None, *, role: str = Role.VIEWER):
    """Require login and a team; a user without a team gets a page that says so.

    ``request.access`` is the lazily resolved current team membership (CurrentTeamMiddleware);
    a role below ``role`` is a 403 that names the role needed.
    """

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                if request.htmx:
                    # A poll after the session ended: the whole page goes to the login form,
                    # rather than the login form into the panel.
                    page = request.htmx.current_url_abs_path or "/"
                    return HttpResponseClientRedirect(redirect_to_login(page).url)
                return redirect_to_login(request.get_full_path())
            if must_change_password(request.user):
                # Invited with a one-time password: their own password first, then the portal.
                page = reverse("portal:password_change")
                return HttpResponseClientRedirect(page) if request.htmx else redirect(page)
            access = request.access
            if not access:
                return render(request, "portal/no_team.html", {"section": None})
            if not access.can(role):
                raise PermissionDenied(
                    f"This needs the {Role(role).label.lower()} role in {access.team.name}; "
                    f"yours is {Role(access.role).label.lower()}."
                )
            return view(request, *args, **kwargs)

        return wrapped

    return decorator(view) if view is not None else decorator
