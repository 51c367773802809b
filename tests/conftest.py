"""Shared fixtures: three standing users per team (admin, member, viewer), an outsider team,
token-authenticated API clients, portal clients, a real Celery worker process and the sandbox.

Rows come from tests/factories.py; helpers test modules import (clients, wait_until) live in
tests/support.py."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from instantstart.operations.worker_command import ADVANCE_LOG_LINE, worker_argv
from instantstart.tenancy.models import Team
from instantstart.tenancy.roles import Role
from tests.factories import TeamFactory
from tests.support import ROOT, client_with, logged_in, make_member, token_for, wait_until  # noqa: F401


@pytest.fixture
def team(db) -> Team:
    return TeamFactory(slug="acme", name="Acme ML")


@pytest.fixture
def other_team(db) -> Team:
    return TeamFactory(slug="globex", name="Globex")


@pytest.fixture
def admin_user(team):
    return make_member(team, "alice", Role.ADMIN)


@pytest.fixture
def member_user(team):
    return make_member(team, "bob", Role.MEMBER)


@pytest.fixture
def viewer_user(team):
    return make_member(team, "carol", Role.VIEWER)


@pytest.fixture
def outsider_user(other_team):
    return make_member(other_team, "mallory", Role.ADMIN)


@pytest.fixture
def admin_api(team, admin_user) -> APIClient:
    return client_with(token_for(team, admin_user, Role.ADMIN))


@pytest.fixture
def member_api(team, member_user) -> APIClient:
    return client_with(token_for(team, member_user, Role.MEMBER))


@pytest.fixture
def viewer_api(team, viewer_user) -> APIClient:
    return client_with(token_for(team, viewer_user, Role.VIEWER))


@pytest.fixture
def outsider_api(other_team, outsider_user) -> APIClient:
    return client_with(token_for(other_team, outsider_user, Role.ADMIN))


@pytest.fixture
def anonymous_api() -> APIClient:
    return APIClient()


@pytest.fixture
def admin_token(team, admin_user) -> str:
    return token_for(team, admin_user, Role.ADMIN)


@pytest.fixture
def member_token(team, member_user) -> str:
    return token_for(team, member_user, Role.MEMBER)


@pytest.fixture
def viewer_token(team, viewer_user) -> str:
    return token_for(team, viewer_user, Role.VIEWER)


@pytest.fixture
def rest(admin_token) -> APIClient:
    """REST as the admin whose token the admin_mcp fixture uses."""
    return client_with(admin_token)


@pytest.fixture
def admin_mcp(admin_token):
    from tests.mcp_client import MCP

    return MCP(admin_token)


@pytest.fixture
def member_mcp(member_token):
    from tests.mcp_client import MCP

    return MCP(member_token)


@pytest.fixture
def viewer_mcp(viewer_token):
    from tests.mcp_client import MCP

    return MCP(viewer_token)


# --- portal clients -------------------------------------------------------------------------


@pytest.fixture
def admin_client(admin_user) -> Client:
    return logged_in(admin_user)


@pytest.fixture
def member_client(member_user) -> Client:
    return logged_in(member_user)


@pytest.fixture
def viewer_client(viewer_user) -> Client:
    return logged_in(viewer_user)


@pytest.fixture
def outsider_client(outsider_user) -> Client:
    return logged_in(outsider_user)


@pytest.fixture
def no_enqueue(monkeypatch):
    """Keep services from sending messages to a broker, for tests that run no worker."""
    sent = []
    monkeypatch.setattr("instantstart.operations.services.enqueue_advance", lambda pk, **kw: sent.append(pk))
    return sent


# --- a real Celery worker ------------------------------------------------------------------


_LIVE_WORKERS: set[WorkerProcess] = set()


@atexit.register
def _kill_leftover_workers() -> None:
    # Workers run in sessions of their own; if pytest dies without teardown they must not linger.
    for worker in list(_LIVE_WORKERS):
        worker.kill()


class WorkerProcess:
    """A `celery worker` subprocess on this test database and a queue of its own."""

    def __init__(
        self, queue: str, extra_env: dict[str, str] | None = None, *, pool: str = "solo", concurrency: int = 1
    ) -> None:
        # Solo by default: one step at a time makes a test's worker log easy to read; tests of
        # concurrency ask for threads.
        self.queue, self.pool, self.concurrency = queue, pool, concurrency
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"worker-{queue}-{uuid.uuid4().hex[:6]}.log"

    def env(self) -> dict[str, str]:
        db = settings.DATABASES["default"]
        host, port, user = db["HOST"] or "127.0.0.1", db["PORT"] or 5432, db["USER"] or "postgres"
        operations = settings.OPERATIONS
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "instantstart.test_settings",
            "INSTANTSTART_MODE": "test",
            "DATABASE_URL": f"postgres://{user}@{host}:{port}/{db['NAME']}",
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_QUEUE": self.queue,
            "OPERATION_LEASE_SECONDS": str(operations["LEASE_SECONDS"]),
            "OPERATION_BACKOFF_BASE": str(operations["BACKOFF_BASE_SECONDS"]),
            "OPERATION_BACKOFF_MAX": str(operations["BACKOFF_MAX_SECONDS"]),
            "OPERATION_POLL_SECONDS": str(operations["DEFAULT_POLL_SECONDS"]),
            "OPERATION_POLL_SCALE": str(operations["POLL_SCALE"]),
            "OPERATION_TRANSIENT_RETRIES": str(operations["TRANSIENT_RETRIES"]),
            "OPERATION_HANDOFF_SECONDS": str(operations["HANDOFF_SECONDS"]),
            "OPERATION_MAX_COUNTDOWN": str(operations["MAX_COUNTDOWN_SECONDS"]),
            "OPERATION_MESSAGE_LOST_AFTER": str(operations["MESSAGE_LOST_AFTER_SECONDS"]),
            "OPERATION_HOLD_SECONDS": str(operations["HOLD_SECONDS"]),
            "OPERATION_HOLD_LEASE": str(operations["HOLD_LEASE_SECONDS"]),
            "OPERATION_HOLD_WATCH": str(operations["HOLD_WATCH_SECONDS"]),
            "WORKER_HEARTBEAT_INTERVAL": str(operations["HEARTBEAT_SECONDS"]),
            "CELERY_VISIBILITY_TIMEOUT": str(settings.CELERY_VISIBILITY_TIMEOUT),
            "SANDBOX_AWS_ENDPOINT": settings.SANDBOX_AWS_ENDPOINT or "",
        }
        env.update(self.extra_env)
        return env

    def start(self) -> WorkerProcess:
        log = open(self.log_path, "w")  # noqa: SIM115 - kept open for the process's life
        self.proc = subprocess.Popen(
            worker_argv(
                queue=self.queue, pool=self.pool, concurrency=self.concurrency, hostname=f"test-{self.queue}@%h"
            ),
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _LIVE_WORKERS.add(self)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "ready." in self.log_path.read_text():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log_path.read_text()[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError(f"worker did not start: {self.log_path.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL, like an OOM kill or a lost node: no cleanup runs."""
        _LIVE_WORKERS.discard(self)
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        _LIVE_WORKERS.discard(self)
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text()

    def advance_outcomes(self) -> list[str]:
        """What each advance task this worker ran returned (skipped, wait, succeeded, ...), in order."""
        return [action for _, action in ADVANCE_LOG_LINE.findall(self.log())]


@pytest.fixture
def worker_queue(settings) -> str:
    """A queue of this test's own, so no other run's messages reach its worker."""
    queue = f"test-{uuid.uuid4().hex[:10]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    yield queue


@pytest.fixture
def start_worker(transactional_db, worker_queue):
    """Start real worker processes (call it; it returns the WorkerProcess). Stopped afterwards."""
    workers: list[WorkerProcess] = []

    def start(pool: str = "solo", concurrency: int = 1, **extra_env: str) -> WorkerProcess:
        worker = WorkerProcess(worker_queue, extra_env, pool=pool, concurrency=concurrency).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


# --- the sandbox cloud ---------------------------------------------------------------------

SANDBOX_SPEEDUP = 1000.0


@pytest.fixture(scope="session")
def sandbox_server(tmp_path_factory):
    """One sandbox per test run (moto's state is process-global); teams are isolated as accounts."""
    from sandbox.server import Sandbox

    server = Sandbox(tmp_path_factory.mktemp("sandbox"), port=0, speedup=SANDBOX_SPEEDUP, snapshots=False).start()
    yield server
    server.stop()


@pytest.fixture
def sandbox(sandbox_server, settings):
    """The sandbox, with this test's settings pointing at it and polls scaled to its speed."""
    from instantstart.cloud.aws import forget_credentials

    settings.SANDBOX_AWS_ENDPOINT = sandbox_server.aws_endpoint
    settings.OPERATIONS = {
        **settings.OPERATIONS,
        "POLL_SCALE": 1.0 / SANDBOX_SPEEDUP * 5,
        "BACKOFF_BASE_SECONDS": 0.05,
        "BACKOFF_MAX_SECONDS": 0.5,
        "LEASE_SECONDS": 20,
    }
    forget_credentials()
    yield sandbox_server
    sandbox_server.faults.clear() if hasattr(sandbox_server.faults, "clear") else None
