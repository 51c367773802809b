"""Production mode is safe by default: `manage.py check --deploy` finds nothing, and the settings a
deployment may not forget are refused when missing."""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest

from tests.deploy.processes import ROOT, container_env


def production_env(**overrides: str) -> dict[str, str]:
    env = container_env(
        INSTANTSTART_MODE="production",
        INSTANTSTART_ALL_IN_ONE="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="instantstart.example.com",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres",
        REDIS_URL="redis://127.0.0.1:6379/0",
        STATIC_ROOT="/tmp/instantstart-static",
    )
    env.update(overrides)
    return {k: v for k, v in env.items() if v != ""}


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_in_production_mode():
    result = check_deploy(production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_check_deploy_is_clean_for_the_all_in_one_container_on_its_volume(tmp_path):
    env = production_env(INSTANTSTART_ALL_IN_ONE="true", SECRET_KEY="", ALLOWED_HOSTS="", DATABASE_URL="", REDIS_URL="")
    env["INSTANTSTART_VAR_DIR"] = str(tmp_path)
    result = check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "secret_key").exists()  # generated into the volume, kept for the next start


def test_turning_the_https_redirect_off_is_reported():
    # The stack does it on purpose (the SSM session is the encrypted transport): the check says so.
    result = check_deploy(production_env(SECURE_SSL_REDIRECT="false"))
    assert result.returncode != 0 and "security.W008" in result.stdout + result.stderr


@pytest.mark.parametrize(
    "missing, message",
    [
        ("SECRET_KEY", "SECRET_KEY must be set"),
        ("ALLOWED_HOSTS", "ALLOWED_HOSTS must be set in production mode"),
        ("DATABASE_URL", "DATABASE_URL must be set"),
        ("REDIS_URL", "REDIS_URL must be set"),
    ],
)
def test_scaled_processes_refuse_to_start_without_their_services(missing, message):
    # Only the all-in-one tree may fall back to local state; a web or worker container never does.
    result = check_deploy(production_env(**{missing: ""}))
    assert result.returncode != 0 and message in result.stderr


def test_the_web_server_pools_its_connections_and_a_worker_keeps_its_own():
    """Django keeps no connection under ASGI: production's web server takes them from a pool, and a
    Celery worker (whose threads each keep one for WORKER_DB_CONN_MAX_AGE) turns the pool off."""
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "from instantstart.celery import _reuse_database_connections as w; db = settings.DATABASES['default']; "
        "print(db['OPTIONS'].get('pool', {}).get('max_size'), db['CONN_MAX_AGE']); w(); "
        "print(db['OPTIONS'].get('pool'), db['CONN_MAX_AGE'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**production_env(), "DJANGO_SETTINGS_MODULE": "instantstart.settings", "DB_POOL_MAX_SIZE": "9"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["9 0", "None 600"]
