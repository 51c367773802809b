"""The project's own 404, 403 and 500 pages; Django's debug pages only with an explicit DEBUG=true;
a favicon; the top nav's API link goes to the docs and /api/v1/ is an API root."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.template.loader import render_to_string

from tests.support import ROOT

pytestmark = pytest.mark.django_db


def standalone_debug(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "instantstart.settings", "INSTANTSTART_MODE": "standalone", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_standalone_runs_without_debug_unless_asked(tmp_path):
    assert standalone_debug(INSTANTSTART_VAR_DIR=str(tmp_path)) == "False"
    assert standalone_debug(INSTANTSTART_VAR_DIR=str(tmp_path), DEBUG="true") == "True"


def test_unknown_pages_get_the_projects_404(admin_client, client):
    for who in (admin_client, client):
        response = who.get("/no/such/page/")
        assert response.status_code == 404
        page = response.content.decode()
        assert "<h1>Not found</h1>" in page and "URLconf" not in page and "favicon.svg" in page


def test_a_refused_page_gets_the_projects_403(viewer_client):
    response = viewer_client.get("/clusters/new/")
    assert response.status_code == 403 and "<h1>Not allowed</h1>" in response.content.decode()


def test_the_500_page_renders_without_a_request():
    page = render_to_string("500.html")
    assert "Something went wrong" in page and "Traceback" not in page


def test_favicon_and_api_root(admin_client, anonymous_api):
    assert admin_client.get("/favicon.ico").status_code == 301
    page = admin_client.get("/").content.decode()
    assert 'href="/api/v1/docs/"' in page  # the top nav's API link
    root = anonymous_api.get("/api/v1/")
    assert root.status_code == 200
    body = root.json()
    assert body["docs"].endswith("/api/v1/docs/") and body["schema"].endswith("/api/v1/schema/")
    assert body["resources"]["clusters"].endswith("/api/v1/clusters/")
    assert body["resources"]["operations"].endswith("/api/v1/operations/")
