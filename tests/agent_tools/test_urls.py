"""/mcp/ reached through Django alone (WSGI, runserver) explains where MCP is served."""

from __future__ import annotations

from rest_framework.test import APIClient


def test_django_alone_answers_mcp_unavailable(db):
    response = APIClient().post("/mcp/", {}, format="json")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "mcp_unavailable"
    assert "python manage.py mcp" in response.json()["error"]["message"]
