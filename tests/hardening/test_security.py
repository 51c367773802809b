"""Login throttling (django-axes), the token-failure limit, and the security headers."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from instantstart.security import PORTAL_CSP
from tests.support import client_with


def test_repeated_failed_logins_are_locked_out_even_with_the_right_password(db, admin_user, settings):
    admin_user.set_password("right-password-123")
    admin_user.save()
    client = Client()
    tries = [client.post("/login/", {"username": "alice", "password": "wrong"}).status_code for _ in range(5)]
    assert tries == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429] * (6 - settings.AXES_FAILURE_LIMIT)
    locked = client.post("/login/", {"username": "alice", "password": "right-password-123"})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_successful_login_is_not_throttled(db, admin_user):
    admin_user.set_password("right-password-123")
    admin_user.save()
    client = Client()
    client.post("/login/", {"username": "alice", "password": "wrong"})
    assert client.post("/login/", {"username": "alice", "password": "right-password-123"}).status_code == 302


def test_failed_token_authentications_are_rate_limited(db, admin_token, settings):
    settings.TOKEN_AUTH_FAILURE_LIMIT = 3
    from django.core.cache import caches

    caches["throttle"].clear()
    bad = client_with("ist_not-a-token")
    assert [bad.get("/api/v1/whoami/").status_code for _ in range(3)] == [401, 401, 401]
    limited = bad.get("/api/v1/whoami/")
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert limited.json()["error"]["code"] == "throttled"
    caches["throttle"].clear()
    assert client_with(admin_token).get("/api/v1/whoami/").status_code == 200


@pytest.mark.parametrize("path", ["/login/", "/api/v1/whoami/"])
def test_pages_carry_the_security_headers(db, path):
    response = Client().get(path)
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Content-Type-Options"] == "nosniff"
    csp = response["Content-Security-Policy"]
    assert csp == PORTAL_CSP
    assert "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp


def test_portal_pages_have_no_inline_script_or_style_the_policy_would_block(admin_client, team):
    html = admin_client.get("/", follow=True).content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "inline <script>"
    assert "<style" not in html and ' style="' not in html
    docs = Client().get("/api/v1/docs/").content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", docs)


def test_admin_and_api_docs_allow_inline_styles_but_never_inline_script(db):
    for path in ("/admin/login/", "/api/v1/docs/"):
        csp = Client().get(path)["Content-Security-Policy"]
        assert "script-src 'self';" in csp and "style-src 'self' 'unsafe-inline'" in csp
