"""Run the image's and the compose file's commands as plain processes, as their containers would.

No Docker engine runs here, so a test reads deploy/Dockerfile (its ENV and CMD) or
deploy/compose.yaml (each service's command and environment) and starts exactly those commands
from the repository root (the image's /app), with only the interpreter, the ports and the volume
paths swapped for this machine's.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"
# All a container shares with this machine's environment: nothing of the test run's own settings.
BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """(instruction, arguments) per stage, continuation lines joined."""
    stages: list[list[tuple[str, str]]] = []
    logical = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        logical = f"{logical} {line[:-1]}" if line.endswith("\\") else f"{logical} {line}"
        if line.endswith("\\"):
            continue
        instruction, _, arguments = logical.strip().partition(" ")
        logical = ""
        if instruction.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((instruction.upper(), arguments.strip()))
    return stages


def image_env() -> dict[str, str]:
    """The final stage's ENV, as the container starts with it."""
    env: dict[str, str] = {}
    for instruction, arguments in dockerfile_stages()[-1]:
        if instruction == "ENV":
            for pair in shlex.split(arguments):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def image_cmd() -> list[str]:
    return next(json.loads(args) for instruction, args in dockerfile_stages()[-1] if instruction == "CMD")


def container_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in BASE_ENV}
    image = image_env()
    image.pop("PATH", None)  # the image's virtualenv is this machine's .venv
    env.update(image)
    env.update(overrides)
    return env


def local_command(command: list[str]) -> list[str]:
    """The command with the image's interpreter and entry points taken from this machine's .venv."""
    head, *rest = command
    if head == "python":
        return [sys.executable, *rest]
    return [str(Path(sys.executable).parent / head), *rest]


class Process:
    """One container's command, in a session of its own (killed with its children at the end)."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}-{time.monotonic_ns()}.log"
        self.proc = subprocess.Popen(
            local_command(command),
            cwd=ROOT,
            env=env,
            stdout=open(self.log_path, "w"),  # noqa: SIM115 - the child's for its whole life
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, timeout: float = 40) -> int | None:
        """SIGTERM to the command alone, as `docker stop` sends it to PID 1; SIGKILL to all if it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._kill_group()
        return self.proc.returncode

    def kill(self) -> None:
        self._kill_group()
        self.proc.wait(10)

    def _kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def request(url: str, headers: dict[str, str] | None = None, data: bytes | None = None, timeout: float = 5):
    """(status, headers, body) of one request, redirects not followed (headers keep every Set-Cookie)."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, data=data, headers=headers or {}), timeout=timeout) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


def get(url: str, headers: dict[str, str] | None = None, timeout: float = 5):
    return request(url, headers, timeout=timeout)


def wait_healthy(port: int, process: Process, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if process.proc.poll() is not None:
            raise AssertionError(f"{process.name} exited with {process.proc.returncode}:\n{process.log()[-4000:]}")
        try:
            status, _, body = get(f"http://127.0.0.1:{port}/healthz")
            last = body
            if status == 200:
                return json.loads(body)
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{process.name} not healthy in {timeout}s ({last}):\n{process.log()[-4000:]}")


def children(pid: int) -> list[int]:
    """Direct child processes (from /proc), e.g. the worker an all-in-one process started."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "children").read_text().split()
        except FileNotFoundError:  # the thread ended between the listing and the read
            continue
        found.extend(int(child) for child in text)
    return found


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=120
    ).stdout
