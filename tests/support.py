"""Helpers every test package uses (not fixtures): API and portal clients, waiting for a condition.

Test modules import these from here — never from another test module or from a conftest.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.test import Client
from rest_framework.test import APIClient

from tests.factories import member as make_member  # noqa: F401 - re-exported: a user of a team with a role
from tests.factories import token as token_for  # noqa: F401 - re-exported: a raw API token

ROOT = Path(__file__).resolve().parent.parent  # the repository


def client_with(token: str | None) -> APIClient:
    """A REST client sending ``Authorization: Bearer <token>`` (none: anonymous)."""
    client = APIClient()
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def logged_in(user) -> Client:
    """A portal test client with the user's session, as after the login form."""
    client = Client()
    client.force_login(user)
    return client


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.1, message: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
