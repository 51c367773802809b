"""The container image: its recipe, and its default command run as a process exactly as the CMD runs it
(serves /healthz with a worker, on SQLite and the file broker or on PostgreSQL and Redis)."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.deploy.processes import (
    ROOT,
    Process,
    children,
    container_env,
    dockerfile_stages,
    free_port,
    get,
    image_cmd,
    image_env,
    manage,
    request,
    wait_healthy,
)

pytestmark = pytest.mark.worker


def test_the_image_is_multi_stage_non_root_and_checks_its_own_health():
    stages = dockerfile_stages()
    assert len(stages) >= 2, "a build stage and a runtime stage"
    final = stages[-1]
    users = [args for instruction, args in final if instruction == "USER"]
    assert users and users[-1] not in ("root", "0"), "the runtime stage runs as a user of its own"
    runs = " ".join(args for instruction, args in final if instruction == "RUN")
    for tool in ("apt-get install", "gcc", "build-essential", "pip install"):
        assert tool not in runs, f"the runtime stage installs {tool!r}"
    assert "pip uninstall" in runs, "pip itself leaves the runtime stage"
    healthcheck = next(args for instruction, args in final if instruction == "HEALTHCHECK")
    assert json.loads(healthcheck.split("CMD", 1)[1]) == ["python", "-m", "instantstart.probe", "web"]
    assert image_cmd() == ["python", "-m", "instantstart.allinone"]
    assert image_env()["PORT"] == "3099" and ("EXPOSE", "3099") in final
    assert image_env()["INSTANTSTART_MODE"] == "production"
    # Everything the build copies exists (a renamed app would break the build, not just the run).
    for instruction, args in stages[0]:
        if instruction == "COPY" and not args.startswith("--from"):
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    ignored = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", ".git", "var"} <= set(ignored), "the build context leaves out the local state"


@pytest.fixture(scope="module")
def static_root(tmp_path_factory) -> Path:
    """collectstatic as the image's build stage runs it."""
    root = tmp_path_factory.mktemp("static")
    build = next(args for instruction, args in dockerfile_stages()[0] if "collectstatic" in args)
    assert "STATIC_ROOT=/opt/instantstart/static" in build
    env = container_env(
        SECRET_KEY="build-only",
        ALLOWED_HOSTS="build",
        DATABASE_URL="sqlite:////tmp/build.db",
        REDIS_URL="redis://build",
        STATIC_ROOT=str(root),
        INSTANTSTART_ALL_IN_ONE="false",
    )
    manage(env, "collectstatic", "--noinput")
    return root


def _api(port: int, path: str, token: str, headers: dict | None = None) -> dict:
    status, _, body = get(f"http://127.0.0.1:{port}{path}", {"Authorization": f"Bearer {token}", **(headers or {})})
    assert status == 200, (status, body)
    return json.loads(body)


def _start_selftest(env: dict[str, str]) -> str:
    code = (
        "from instantstart.operations.services import start_operation;"
        "from instantstart.tenancy.models import Team;"
        "from instantstart.tenancy.services import system_access;"
        "op,_=start_operation(access=system_access(Team.objects.get(slug='ops')), kind='engine.selftest',"
        "params={'waits': 2, 'interval': 0.3});print(op.pk)"
    )
    return manage(env, "shell", "-c", code).strip().splitlines()[-1]


def _token(env: dict[str, str]) -> str:
    code = (
        "from django.contrib.auth import get_user_model;"
        "from instantstart.tenancy.models import Membership, Team;"
        "team,_=Team.objects.get_or_create(slug='ops', defaults={'name': 'Ops'});"
        "Membership.objects.get_or_create(team=team, user=get_user_model().objects.get(username='admin'),"
        " defaults={'role': 'admin'})"
    )
    manage(env, "shell", "-c", code)
    return manage(env, "create_token", "--team", "ops", "--user", "admin").strip().splitlines()[-1]


def _wait_succeeded(port: int, token: str, op_id: str, headers: dict | None = None, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while (status := _api(port, f"/api/v1/operations/{op_id}/", token, headers)["status"]) != "succeeded":
        assert status not in ("failed", "cancelled") and time.monotonic() < deadline, f"operation {op_id}: {status}"
        time.sleep(0.5)


@pytest.mark.timeout(300)
def test_default_command_on_its_volume_serves_healthz_runs_operations_and_survives_a_worker_kill(tmp_path, static_root):
    # `docker run -p 127.0.0.1:3099:3099 -e SECURE_SSL_REDIRECT=false -v data:/data instantstart`
    port, volume = free_port(), tmp_path / "data"
    volume.mkdir()
    env = container_env(
        INSTANTSTART_VAR_DIR=str(volume),
        STATIC_ROOT=str(static_root),
        PORT=str(port),
        HOST="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        OPERATION_SWEEP_INTERVAL="0.5",
    )
    app = Process("allinone", image_cmd(), env, tmp_path)
    try:
        health = wait_healthy(port, app)
        assert health["checks"]["database"]["vendor"] == "sqlite"
        assert health["checks"]["broker"]["transport"] == "filesystem"
        assert any(name.startswith("allinone@") for name in health["checks"]["worker"]["live"])
        # Everything it keeps is on the volume: database, broker, secret key, first admin password.
        assert (volume / "instantstart.sqlite3").exists() and (volume / "broker" / "queue").is_dir()
        assert (volume / "secret_key").stat().st_mode & 0o077 == 0
        credentials = volume / "admin-credentials.txt"
        assert credentials.stat().st_mode & 0o077 == 0 and "username: admin" in credentials.read_text()
        assert "sandbox: off" in app.log() and "sandbox cloud at" not in app.log()
        assert get(f"http://127.0.0.1:{port}/static/instantstart/portal.css")[0] == 200

        token = _token(env)
        _wait_succeeded(port, token, _start_selftest(env))

        # An OOM kill of the worker: another one starts, and work sent meanwhile is not lost.
        (worker,) = children(app.proc.pid)
        os.kill(worker, signal.SIGKILL)
        pending = _start_selftest(env)
        deadline = time.monotonic() + 30
        while not [pid for pid in children(app.proc.pid) if pid != worker]:
            assert time.monotonic() < deadline, "no new worker:\n" + app.log()[-3000:]
            time.sleep(0.2)
        _wait_succeeded(port, token, pending)
        assert "celery worker exited with -9; starting another" in app.log()
    finally:
        code = app.stop()
    assert code == 0, app.log()[-3000:]  # docker stop: a clean exit, the worker stopped with it
    assert not Path(f"/proc/{worker}").exists()


@pytest.mark.timeout(180)
def test_the_sandbox_starts_only_when_asked(tmp_path):
    # `docker run -e INSTANTSTART_SANDBOX=true …`: trying InstantStart out with no AWS account.
    port, volume = free_port(), tmp_path / "data"
    env = container_env(INSTANTSTART_VAR_DIR=str(volume), PORT=str(port), HOST="127.0.0.1", INSTANTSTART_SANDBOX="true")
    app = Process("allinone-sandbox", image_cmd(), env, tmp_path)
    try:
        wait_healthy(port, app)
        endpoint = re.search(r"sandbox cloud at (http://127\.0\.0\.1:\d+)", app.log()).group(1)
        status, _, body = get(f"{endpoint}/_sandbox/health")
        assert status == 200 and json.loads(body)["ok"]
        assert (volume / "sandbox").is_dir()  # its state lives on the volume too
    finally:
        assert app.stop() == 0, app.log()[-3000:]


@pytest.mark.timeout(300)
def test_default_command_uses_postgresql_and_redis_and_is_https_only_behind_the_proxy(
    tmp_path, static_root, container_database
):
    port, host = free_port(), "instantstart.example.com"
    password_file = tmp_path / "admin_password"
    password_file.write_text("first-login-" + secrets.token_hex(8))
    env = container_env(
        DATABASE_URL=container_database,
        REDIS_URL=settings.REDIS_URL,
        CELERY_QUEUE=f"deploy-{uuid.uuid4().hex[:8]}",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS=host,
        INSTANTSTART_ADMIN_PASSWORD_FILE=str(password_file),
        INSTANTSTART_VAR_DIR=str(tmp_path / "data"),
        STATIC_ROOT=str(static_root),
        PORT=str(port),
        HOST="127.0.0.1",
    )
    app = Process("allinone-pg", image_cmd(), env, tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        health = wait_healthy(port, app)
        assert health["checks"]["database"]["vendor"] == "postgresql"
        assert health["checks"]["broker"]["transport"] == "redis"
        assert health["checks"]["worker"]["ok"]
        assert not (tmp_path / "data" / "instantstart.sqlite3").exists()

        # Plain HTTP is sent to HTTPS; probes on /healthz are not; an unknown Host is refused.
        status, headers, _ = get(f"{base}/login/", {"Host": host})
        assert status == 301 and headers["Location"] == f"https://{host}/login/"
        assert get(f"{base}/login/", {"Host": "evil.example.net", "X-Forwarded-Proto": "https"})[0] == 400

        # Behind the TLS proxy: HSTS, secure cookies, and the first admin's password from its file.
        proxied = {"Host": host, "X-Forwarded-Proto": "https"}
        status, headers, page = get(f"{base}/login/", proxied)
        assert status == 200
        assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
        csrf_cookie = next(c for c in headers.get_all("Set-Cookie") if c.startswith("csrftoken="))
        assert "Secure" in csrf_cookie
        csrf = re.search(r"csrftoken=([^;]+)", csrf_cookie).group(1)
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = {"username": "admin", "password": password_file.read_text(), "csrfmiddlewaretoken": form_token}
        status, headers, body = request(
            f"{base}/login/",
            {
                **proxied,
                "Cookie": f"csrftoken={csrf}",
                "Origin": f"https://{host}",
                "Referer": f"https://{host}/login/",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            data=urllib.parse.urlencode(form).encode(),
        )
        assert status == 302, body[:500]
        session = next(c for c in headers.get_all("Set-Cookie") if c.startswith("sessionid="))
        assert "Secure" in session and "HttpOnly" in session

        token = _token(env)
        _wait_succeeded(port, token, _start_selftest(env), headers=proxied)
    finally:
        code = app.stop()
    assert code == 0, app.log()[-3000:]
