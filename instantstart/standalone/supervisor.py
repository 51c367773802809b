"""Starts and stops the parts of the standalone run: sandbox, worker, sweep, ASGI server."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from pathlib import Path

from instantstart.operations.worker_command import worker_argv

log = logging.getLogger("instantstart.standalone")


class Supervisor:
    def __init__(self, *, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.sandbox = None
        self.worker: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    def start_sandbox(self, state_dir: Path, speedup: float) -> None:
        try:
            from sandbox.server import Sandbox
        except ImportError as exc:
            log.warning("sandbox not available (%s); starting without it", exc)
            return
        state_dir.mkdir(parents=True, exist_ok=True)
        self.sandbox = Sandbox(state_dir=state_dir, port=0, speedup=speedup).start()
        endpoint = self.sandbox.aws_endpoint
        os.environ["SANDBOX_AWS_ENDPOINT"] = endpoint
        from django.conf import settings

        settings.SANDBOX_AWS_ENDPOINT = endpoint
        log.info("sandbox cloud at %s (state in %s, speedup %s)", endpoint, state_dir, speedup)

    def start_worker(self, *, hostname: str = "standalone@%h", log_to_file: bool = True) -> None:
        """The Celery worker child; its output goes to var/worker.log, or (in a container, whose
        log is its standard output) to this process's own output."""
        log_path = self.var_dir / "worker.log"
        output = open(log_path, "a") if log_to_file else None  # noqa: SIM115 - owned by the child for its whole life
        # Pool and concurrency from CELERY_WORKER_POOL / CELERY_WORKER_CONCURRENCY (on SQLite: 4 threads).
        env = {**os.environ}
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # A standalone run as root (a container, a dev VM) is the user's choice; Celery's warning
            # about it on every start says nothing they can act on here.
            quiet = "ignore:You're running the worker with superuser privileges"
            env["PYTHONWARNINGS"] = ",".join(filter(None, [env.get("PYTHONWARNINGS", ""), quiet]))
        self.worker = subprocess.Popen(
            worker_argv(hostname=hostname),
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
        )
        log.info("celery worker started (pid %s, log %s)", self.worker.pid, log_path if output else "stdout")

    def start_sweep(self, interval: float) -> None:
        def loop() -> None:
            from django.db import close_old_connections

            from instantstart.operations.engine import sweep

            while not self._stop.wait(interval):
                try:
                    sweep()
                except Exception:  # noqa: BLE001 - the sweep must outlive a bad moment
                    log.warning("sweep failed", exc_info=True)
                finally:
                    close_old_connections()

        self._sweeper = threading.Thread(target=loop, name="operation-sweep", daemon=True)
        self._sweeper.start()

    def serve(self, host: str, port: int) -> None:
        import uvicorn

        config = uvicorn.Config(
            "instantstart.asgi:application", host=host, port=port, log_level="info", lifespan="auto"
        )
        uvicorn.Server(config).run()

    def stop(self) -> None:
        self._stop.set()
        if self.worker is not None and self.worker.poll() is None:
            self.worker.send_signal(signal.SIGTERM)
            try:
                self.worker.wait(20)
            except subprocess.TimeoutExpired:
                self.worker.kill()
        if self.sandbox is not None:
            self.sandbox.stop()
        log.info("stopped")
