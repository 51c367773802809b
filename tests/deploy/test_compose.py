"""deploy/compose.yaml, the scaled form: its structure, then its services' commands run as processes
with the environment compose gives them (web ×2, worker ×2, beat) against PostgreSQL and Redis."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from instantstart.probe import PROBES
from tests.deploy.processes import COMPOSE, ROOT, Process, container_env, free_port, get, manage, wait_healthy

APP_SERVICES = ("migrate", "web", "worker", "beat")
DOMAIN = "instantstart.example.com"
_VARIABLE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::([-?])([^}]*))?\}")


def interpolate(value, env: dict[str, str]):
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?message}, applied through the whole file."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        name, kind, argument = match.groups()
        if env.get(name):
            return env[name]
        if kind == "?":
            raise KeyError(f"{name} must be set: {argument}")
        return argument if kind == "-" else ""

    return _VARIABLE.sub(one, value)


def compose(env: dict[str, str] | None = None) -> dict:
    return interpolate(yaml.safe_load(COMPOSE.read_text()), env if env is not None else {"INSTANTSTART_DOMAIN": DOMAIN})


def test_the_scaled_form_has_every_service_each_with_a_healthcheck():
    spec = compose()
    services = spec["services"]
    assert set(services) == {"migrate", "web", "worker", "beat", "proxy", "postgres", "redis"}
    for name, service in services.items():
        if name == "migrate":  # one-shot: done is its health, not the image's web probe
            assert service["healthcheck"] == {"disable": True}
            continue
        assert service["healthcheck"]["test"][0] == "CMD", name
        assert service["restart"] == "unless-stopped", name
    for name in ("web", "worker", "beat"):
        probe = services[name]["healthcheck"]["test"][1:]
        assert probe[:3] == ["python", "-m", "instantstart.probe"] and probe[3] in PROBES and probe[3] == name
    assert services["postgres"]["healthcheck"]["test"][1] == "pg_isready"
    assert services["redis"]["healthcheck"]["test"][1:] == ["redis-cli", "ping"]
    assert int(services["web"]["deploy"]["replicas"]) == 2 and int(services["worker"]["deploy"]["replicas"]) == 2
    assert services["beat"]["deploy"]["replicas"] == 1
    scaled = compose({"INSTANTSTART_DOMAIN": DOMAIN, "WEB_REPLICAS": "5"})["services"]
    assert int(scaled["web"]["deploy"]["replicas"]) == 5


def test_app_services_start_in_order_on_the_shared_services():
    services = compose()["services"]
    healthy = {"condition": "service_healthy"}
    assert services["migrate"]["depends_on"] == {"postgres": healthy, "redis": healthy}
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["command"] == ["python", "-m", "instantstart.allinone", "--init-only"]
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"},
            "postgres": healthy,
            "redis": healthy,
        }, name
    assert services["proxy"]["depends_on"] == {"web": healthy}


def test_app_services_are_production_processes_that_never_fall_back_to_local_state():
    spec = compose()
    services, declared_secrets = spec["services"], set(spec["secrets"])
    for name in APP_SERVICES:
        service = services[name]
        env = service["environment"]
        assert env["INSTANTSTART_MODE"] == "production" and env["INSTANTSTART_ALL_IN_ONE"] == "false", name
        assert env["ALLOWED_HOSTS"] == DOMAIN
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert service["init"] is True and service["build"]["dockerfile"] == "deploy/Dockerfile"
        for key, path in env.items():
            if key.endswith("_FILE"):
                assert path.startswith("/run/secrets/") and Path(path).name in service["secrets"], key
        assert set(service["secrets"]) <= declared_secrets
    assert set(spec["volumes"]) >= {v.split(":")[0] for s in services.values() for v in s.get("volumes", [])}
    # Only the TLS proxy publishes ports, and it sends traffic to the web service's port.
    assert [name for name, service in services.items() if service.get("ports")] == ["proxy"]
    command = services["proxy"]["command"]
    assert command[command.index("--to") + 1] == f"web:{services['web']['environment']['PORT']}"
    assert command[command.index("--from") + 1] == DOMAIN
    with pytest.raises(KeyError, match="INSTANTSTART_DOMAIN"):
        compose({})


def _swap_hosts(command: list[str], replacements: dict[str, str]) -> list[str]:
    out = []
    for part in command:
        for old, new in replacements.items():
            part = part.replace(old, new)
        out.append(part)
    return out


@pytest.mark.worker
@pytest.mark.timeout(300)
def test_the_scaled_services_serve_healthz_run_operations_and_beat_sweeps(tmp_path, container_database):
    spec = compose()
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "secret_key").write_text(secrets.token_urlsafe(48))
    (secrets_dir / "database_url").write_text(container_database)
    queue = f"compose-{uuid.uuid4().hex[:8]}"

    def env_of(name: str, **extra: str) -> dict[str, str]:
        # What compose hands the container, with Docker's names resolved the way its DNS would.
        env = {k: str(v) for k, v in spec["services"][name]["environment"].items()}
        for key, path in list(env.items()):
            if key.endswith("_FILE"):
                env[key] = str(secrets_dir / Path(path).name)
        env["REDIS_URL"] = settings.REDIS_URL
        env["INSTANTSTART_BEAT_SCHEDULE"] = str(tmp_path / "beat" / "celerybeat-schedule")
        env.update(
            CELERY_QUEUE=queue,
            INSTANTSTART_VAR_DIR=str(tmp_path / name),
            STATIC_ROOT=str(tmp_path / "static"),
            OPERATION_SWEEP_INTERVAL="1",
        )
        return container_env(**{**env, **extra})

    migrate = subprocess.run(
        [sys.executable, *spec["services"]["migrate"]["command"][1:]],
        cwd=ROOT,
        env=env_of("migrate"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    assert "Admin login: admin / " in migrate.stdout  # the first password, in `docker compose logs migrate`

    (tmp_path / "beat").mkdir()
    started: list[Process] = []
    webs: list[tuple[int, Process]] = []
    try:
        for replica in (1, 2):
            port = free_port()
            command = _swap_hosts(spec["services"]["web"]["command"], {"3099": str(port)})
            web = Process(f"web-{replica}", command, env_of("web", PORT=str(port), HOSTNAME=f"web{replica}"), tmp_path)
            started.append(web)
            webs.append((port, web))
        for replica in (1, 2):
            host = f"worker{replica}"
            command = _swap_hosts(spec["services"]["worker"]["command"], {"%h": host})
            started.append(Process(host, command, env_of("worker", HOSTNAME=host), tmp_path))
        beat_command = _swap_hosts(spec["services"]["beat"]["command"], {"/tmp/beat": str(tmp_path / "beat")})
        started.append(Process("beat", beat_command, env_of("beat", HOSTNAME="beat"), tmp_path))

        for port, web in webs:
            health = wait_healthy(port, web)
            assert health["checks"]["database"]["vendor"] == "postgresql"
            assert health["checks"]["broker"]["transport"] == "redis"
        deadline = time.monotonic() + 60
        while not {"worker@worker1", "worker@worker2"} <= set(health["checks"]["worker"]["live"]):
            assert time.monotonic() < deadline, health
            time.sleep(0.5)
            health = json.loads(get(f"http://127.0.0.1:{webs[0][0]}/healthz")[2])

        # Each service's own healthcheck, run in its "container".
        for name, extra in (
            ("web", {"PORT": str(webs[1][0])}),
            ("worker", {"HOSTNAME": "worker2"}),
            ("beat", {"HOSTNAME": "beat"}),
        ):
            test = spec["services"][name]["healthcheck"]["test"][1:]
            probe = subprocess.run(
                [sys.executable, *test[1:]], cwd=ROOT, env=env_of(name, **extra), capture_output=True, text=True
            )
            assert probe.returncode == 0, f"{name}: {probe.stdout}{probe.stderr}"

        # An operation whose message was lost: only beat's sweep can send it to a worker.
        code = (
            "import instantstart.operations.services as s;"
            "from instantstart.tenancy.models import Team;"
            "from instantstart.tenancy.services import system_access;"
            "s.enqueue_advance = lambda *a, **k: None;"
            "team,_=Team.objects.get_or_create(slug='ops', defaults={'name': 'Ops'});"
            "op,_=s.start_operation(access=system_access(team), kind='engine.selftest',"
            " params={'waits': 1, 'interval': 0.2});print(op.pk)"
        )
        op_id = manage(env_of("web"), "shell", "-c", code).strip().splitlines()[-1]
        status_code = (
            f"from instantstart.operations.models import Operation;print(Operation.objects.get(pk='{op_id}').status)"
        )
        deadline = time.monotonic() + 60
        while (status := manage(env_of("web"), "shell", "-c", status_code).strip().splitlines()[-1]) != "succeeded":
            assert status != "failed" and time.monotonic() < deadline, f"{status}\n" + started[-1].log()[-2000:]
            time.sleep(1)
        assert "Sending due task sweep-operations" in started[-1].log()
    finally:
        codes = {process.name: process.stop() for process in started}
    assert all(code in (0, -15) for code in codes.values()), codes
