"""The API surface: OpenAPI schema, docs, health, error shape."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from instantstart.tenancy.models import ApiToken, Membership, Team
from tests.support import client_with


def test_openapi_schema_documents_the_endpoints(db):
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in [
        "/api/v1/operations/",
        "/api/v1/operations/{id}/retry/",
        "/api/v1/operations/{id}/cancel/",
        "/api/v1/audit-events/",
        "/api/v1/tokens/",
        "/api/v1/whoami/",
        "/api/v1/team/",
        "/api/v1/clusters/",
        "/api/v1/clusters/{cluster_pk}/instance-groups/{name}/",
    ]:
        assert path in schema["paths"], path
    # Team tokens are bearer tokens; the portal's session is a cookie. Each endpoint names both.
    schemes = schema["components"]["securitySchemes"]
    assert {key: schemes["teamToken"][key] for key in ("type", "scheme")} == {"type": "http", "scheme": "bearer"}
    assert {key: schemes["portalSession"][key] for key in ("type", "in", "name")} == {
        "type": "apiKey",
        "in": "cookie",
        "name": "sessionid",
    }
    assert schema["paths"]["/api/v1/clusters/"]["get"]["security"] == [{"teamToken": []}, {"portalSession": []}]
    # The query parameters of a delete are documented (the MCP tools read them from the same place).
    delete = schema["paths"]["/api/v1/clusters/{id}/"]["delete"]
    assert [(p["name"], p["in"], p["schema"]["type"]) for p in delete["parameters"] if p["in"] == "query"] == [
        ("force", "query", "boolean")
    ]


def test_interactive_docs_use_no_assets_from_the_internet(db):
    html = APIClient().get("/api/v1/docs/").content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower() and "https://" not in html.split("<script")[1]


@pytest.mark.django_db(transaction=True)
def test_healthz_reports_database_broker_and_worker(start_worker):
    client = APIClient()
    body = client.get("/healthz").json()
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is True
    start_worker()
    from tests.support import wait_until

    wait_until(lambda: client.get("/healthz").json()["checks"]["worker"]["ok"], message="worker heartbeat")
    assert client.get("/healthz").status_code == 200


def test_create_token_command_creates_what_is_missing_and_prints_only_the_token(db, capsys):
    call_command("create_token", "--team", "newteam", "--user", "dana", "--role", "member", "--create")
    out = capsys.readouterr().out.strip()
    assert out.startswith("ist_") and "\n" not in out
    assert Membership.objects.get(team__slug="newteam", user__username="dana").role == "member"
    body = client_with(out).get("/api/v1/whoami/").json()
    assert body == {**body, "team": "newteam", "username": "dana", "role": "member"}
    call_command("create_token", "--team", "newteam", "--user", "dana", "--role", "viewer", "--create")
    assert Team.objects.filter(slug="newteam").count() == 1
    assert ApiToken.objects.filter(user__username="dana").count() == 2
    assert Membership.objects.get(user__username="dana").role == "member"  # not demoted


def test_create_token_rejects_a_bad_slug(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_token", "--team", "bad slug!", "--user", "x")
