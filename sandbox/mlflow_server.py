"""Real MLflow tracking servers for the sandbox's SageMaker MLflow resources.

Each SageMaker tracking server (and MLflow App) the sandbox holds is backed by the `mlflow` package's
own server (`mlflow server`, SQLite backend, artifacts on disk) listening on 127.0.0.1, so that the
product, pods and tests talk to a real MLflow REST API. Starting one takes a few seconds, so the
processes are started and stopped by a supervisor thread in the background and the SageMaker
status goes Created/Started only once the process answers `/health`.

Processes never outlive the sandbox: each `mlflow server` gets SIGTERM when the supervisor thread
dies (PR_SET_PDEATHSIG; the signal is tied to the forking *thread*, hence one long-lived thread), and
`close()` terminates their process groups.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("sandbox.mlflow")

HEALTH_EVERY = 0.25  # seconds between /health probes of a starting server
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
RESTART_BACKOFF = 2.0  # a server that died on its own is started again after this


def _libc_prctl():  # noqa: ANN202 - a ctypes function
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM the child when the thread that forked it dies (only a prctl call, which is
    safe between fork and exec)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port(preferred: int | None = None) -> int:
    """`preferred` when it can be bound on 127.0.0.1, else a fresh ephemeral port. SO_REUSEADDR as the
    server will use it: connections of the previous server in TIME_WAIT do not make the port busy."""
    for candidate in ([preferred] if preferred else []) + [0]:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", candidate))
            return int(s.getsockname()[1])
        except OSError:
            continue
        finally:
            s.close()
    raise OSError("no free port on 127.0.0.1")


@dataclass
class _Server:
    key: str
    data_dir: Path
    port: int
    want: bool = True  # desired: running
    proc: subprocess.Popen[bytes] | None = None
    healthy: bool = False
    started_at: float = 0.0
    died_at: float = 0.0
    log_file: object | None = field(default=None, repr=False)


class MlflowServers:
    """The MLflow processes of the sandbox, keyed by the SageMaker resource ("{account}/{region}/{name}").

    All calls return at once; the supervisor thread does the starting, probing and stopping."""

    def __init__(self, root: Path | None) -> None:
        self._tmp = None if root else tempfile.mkdtemp(prefix="sandbox-mlflow-")
        self.root = Path(root) if root else Path(self._tmp or "")
        self._servers: dict[str, _Server] = {}
        self._lock = threading.Lock()
        self._commands: queue.Queue[tuple[str, str]] = queue.Queue()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="sandbox-mlflow", daemon=True)
        self._thread.start()

    # ---- requests (any thread) --------------------------------------------------------------
    def ensure(self, key: str, port: int | None = None) -> int:
        """Have a server for `key` running (started in the background); returns its port."""
        with self._lock:
            srv = self._servers.get(key)
            if srv is None:
                srv = _Server(key, self.root / key.replace("/", "_"), free_port(port))
                self._servers[key] = srv
            srv.want = True
            port = srv.port
        self._commands.put(("start", key))
        return port

    def stop(self, key: str) -> None:
        with self._lock:
            srv = self._servers.get(key)
            if srv is None:
                return
            srv.want = False
        self._commands.put(("stop", key))

    def remove(self, key: str) -> None:
        """Stop the server and delete its data (DeleteMlflowTrackingServer)."""
        self.stop(key)
        self._commands.put(("remove", key))

    def healthy(self, key: str) -> bool:
        with self._lock:
            srv = self._servers.get(key)
            return bool(srv and srv.want and srv.healthy)

    def stopped(self, key: str) -> bool:
        with self._lock:
            srv = self._servers.get(key)
            return srv is None or (not srv.want and srv.proc is None)

    def url(self, key: str) -> str | None:
        with self._lock:
            srv = self._servers.get(key)
            return f"http://127.0.0.1:{srv.port}" if srv else None

    def pids(self) -> list[int]:
        with self._lock:
            return [s.proc.pid for s in self._servers.values() if s.proc is not None]

    def close(self, timeout: float = 15.0) -> None:
        """Stop every server and the supervisor (sandbox stop)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._commands.put(("close", ""))
        self._thread.join(timeout)
        with self._lock:
            leftovers = [s for s in self._servers.values() if s.proc is not None]
        for srv in leftovers:  # the supervisor did not finish in time
            self._kill(srv)
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    # ---- the supervisor thread ------------------------------------------------------------
    def _supervise(self) -> None:
        while True:
            try:
                cmd, key = self._commands.get(timeout=HEALTH_EVERY)
            except queue.Empty:
                cmd, key = "", ""
            if cmd == "close":
                with self._lock:
                    servers = list(self._servers.values())
                for srv in servers:
                    self._terminate(srv)
                return
            try:
                if cmd == "start":
                    self._start(key)
                elif cmd == "stop":
                    self._stop(key)
                elif cmd == "remove":
                    self._remove(key)
                self._probe()
            except Exception:  # noqa: BLE001 - one broken server must not stop the others
                log.exception("mlflow supervisor: %s %s failed", cmd, key)

    def _start(self, key: str) -> None:
        with self._lock:
            srv = self._servers.get(key)
        if srv is None or not srv.want or (srv.proc is not None and srv.proc.poll() is None):
            return
        srv.data_dir.mkdir(parents=True, exist_ok=True)
        _reap_stale(srv.data_dir)
        if srv.log_file is not None:
            srv.log_file.close()  # type: ignore[attr-defined]
        srv.log_file = open(srv.data_dir / "server.log", "ab")  # noqa: SIM115 - owned by the child
        cmd = [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{srv.data_dir / 'mlflow.db'}",
            "--artifacts-destination",
            str(srv.data_dir / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(srv.port),
            "--workers",
            "1",
        ]
        env = {
            **os.environ,
            # no job-runner side process: the sandbox needs tracking only
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "DO_NOT_TRACK": "true",
        }
        srv.proc = subprocess.Popen(  # noqa: S603 - our own interpreter, fixed arguments
            cmd,
            cwd=srv.data_dir,
            env=env,
            stdout=srv.log_file,  # type: ignore[arg-type]
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopped as a whole
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl runs before exec
        )
        srv.healthy = False
        srv.started_at = time.monotonic()
        (srv.data_dir / "server.pid").write_text(str(srv.proc.pid))
        log.info("mlflow server %s starting on 127.0.0.1:%s (pid %s)", key, srv.port, srv.proc.pid)

    def _stop(self, key: str) -> None:
        with self._lock:
            srv = self._servers.get(key)
        if srv is not None and not srv.want:
            self._terminate(srv)

    def _remove(self, key: str) -> None:
        with self._lock:
            srv = self._servers.get(key)
            if srv is None or srv.want:  # re-created meanwhile
                return
            del self._servers[key]
        self._terminate(srv)
        shutil.rmtree(srv.data_dir, ignore_errors=True)

    def _probe(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
        for srv in servers:
            if srv.proc is None:
                if srv.want and srv.died_at and time.monotonic() - srv.died_at >= RESTART_BACKOFF:
                    srv.died_at = 0.0
                    self._start(srv.key)
                continue
            if srv.proc.poll() is not None:  # died on its own: SageMaker would bring it back
                log.warning("mlflow server %s exited with %s", srv.key, srv.proc.returncode)
                srv.proc, srv.healthy, srv.died_at = None, False, time.monotonic()
                continue
            if not srv.healthy:
                srv.healthy = _answers(srv.port)

    def _terminate(self, srv: _Server) -> None:
        proc = srv.proc
        srv.healthy = False
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            self._kill(srv)
        srv.proc = None
        if srv.log_file is not None:
            srv.log_file.close()  # type: ignore[attr-defined]
            srv.log_file = None
        (srv.data_dir / "server.pid").unlink(missing_ok=True)

    @staticmethod
    def _kill(srv: _Server) -> None:
        if srv.proc is None:
            return
        try:
            os.killpg(srv.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            srv.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        srv.proc = None


def _reap_stale(data_dir: Path) -> None:
    """A server a killed sandbox left behind (its pid file survived): end it before starting anew."""
    pid_file = data_dir / "server.pid"
    try:
        pid = int(pid_file.read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    if "mlflow" in cmdline and str(data_dir) in cmdline:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    pid_file.unlink(missing_ok=True)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=0.5) as r:  # noqa: S310
            return r.status == 200
    except OSError:
        return False
