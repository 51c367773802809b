"""`make run` as a user meets it: one command, a portal on a port, a working worker, a resumable state."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def standalone_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(
        INSTANTSTART_MODE="standalone",
        INSTANTSTART_VAR_DIR=str(var_dir),
        SANDBOX_SPEEDUP="1000",
        OPERATION_SWEEP_INTERVAL="0.5",
        OPERATION_POLL_SECONDS="0.2",
    )
    return env


def get_json(url: str, token: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


class Run:
    def __init__(self, var_dir: Path, port: int) -> None:
        self.var_dir, self.port = var_dir, port
        self.log = var_dir / f"run-{time.monotonic_ns()}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "instantstart.standalone", "--port", str(port)],
            cwd=ROOT,
            env=standalone_env(var_dir),
            stdout=open(self.log, "w"),
            stderr=subprocess.STDOUT,  # noqa: SIM115
            start_new_session=True,
        )

    def wait_healthy(self, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(self.log.read_text())
            try:
                status, body = get_json(f"http://127.0.0.1:{self.port}/healthz")
                if status == 200:
                    return body
            except OSError:
                pass
            time.sleep(0.3)
        raise AssertionError("not healthy in time:\n" + self.log.read_text()[-4000:])

    def interrupt(self) -> None:
        """Ctrl-C, as a user stops it: SIGINT to the whole process group."""
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError("did not stop on Ctrl-C:\n" + self.log.read_text()[-4000:])


def manage(var_dir: Path, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=standalone_env(var_dir),
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


def start_selftest(var_dir: Path, waits: int) -> str:
    code = (
        "from instantstart.operations.services import start_operation;"
        "from instantstart.tenancy.models import Team;"
        "from instantstart.tenancy.services import system_access;"
        "op,_=start_operation(access=system_access(Team.objects.get(slug='demo')), kind='engine.selftest',"
        f"params={{'waits': {waits}, 'interval': 0.3}});print(op.pk)"
    )
    return manage(var_dir, "shell", "-c", code).strip().splitlines()[-1]


@pytest.mark.timeout(240)
def test_make_run_serves_the_portal_runs_operations_and_resumes_after_ctrl_c(tmp_path):
    port = free_port()
    run = Run(tmp_path, port)
    try:
        health = run.wait_healthy()
        assert health["checks"]["database"]["vendor"] == "sqlite"
        assert health["checks"]["broker"]["transport"] == "filesystem"
        printed = run.log.read_text()
        match = re.search(r"Admin login: admin / (\S+)", printed)
        assert match, printed
        assert (tmp_path / "admin-credentials.txt").read_text().count(match.group(1)) == 1

        token = manage(tmp_path, "create_token", "--team", "demo", "--user", "admin").strip()
        status, me = get_json(f"http://127.0.0.1:{port}/api/v1/whoami/", token)
        assert status == 200 and me["team"] == "demo" and me["role"] == "admin"

        op_id = start_selftest(tmp_path, waits=2)
        deadline = time.monotonic() + 60
        while get_json(f"http://127.0.0.1:{port}/api/v1/operations/{op_id}/", token)[1]["status"] != "succeeded":
            assert time.monotonic() < deadline, "operation did not finish"
            time.sleep(0.3)
    finally:
        run.interrupt()

    # Stopped: an operation started now waits; the next `make run` resumes it and keeps the data.
    pending = start_selftest(tmp_path, waits=1)
    second = Run(tmp_path, port)
    try:
        second.wait_healthy()
        assert "Admin login: admin /" not in second.log.read_text()  # exists already: no new password
        deadline = time.monotonic() + 60
        while get_json(f"http://127.0.0.1:{port}/api/v1/operations/{pending}/", token)[1]["status"] != "succeeded":
            assert time.monotonic() < deadline, "pending operation did not resume"
            time.sleep(0.3)
        assert get_json(f"http://127.0.0.1:{port}/api/v1/operations/{op_id}/", token)[1]["status"] == "succeeded"
    finally:
        second.interrupt()
