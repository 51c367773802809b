"""Workers say they are alive by touching a row; /healthz and the sweep read it.

A row in the database works in every mode, including standalone's file-system broker, which
cannot carry Celery's broadcast pings. Each worker process has its own row (name and pid), so a
worker restarted under the same name does not hide the death of the one before it: the sweep
sends again the messages a dead worker may have held (engine.sweep).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)

_current: threading.Thread | None = None


def _stale_after() -> timedelta:
    return timedelta(seconds=settings.OPERATIONS["WORKER_STALE_SECONDS"])


def beat(name: str) -> None:
    from .models_health import WorkerHeartbeat

    WorkerHeartbeat.objects.update_or_create(hostname=name, defaults={"last_seen": timezone.now()})


def start_heartbeat_thread(hostname: str | None = None) -> threading.Thread:
    global _current
    name = f"{hostname or socket.gethostname()} pid {os.getpid()}"
    stop = threading.Event()
    interval = settings.OPERATIONS["HEARTBEAT_SECONDS"]

    def loop() -> None:
        while True:
            try:
                beat(name)
            except Exception:  # noqa: BLE001 - a missed beat must not kill the worker
                log.warning("worker heartbeat failed", exc_info=True)
            finally:
                close_old_connections()
            if stop.wait(interval):
                return

    thread = threading.Thread(target=loop, name="worker-heartbeat", daemon=True)
    thread.stop = stop  # type: ignore[attr-defined]
    thread.worker_name = name  # type: ignore[attr-defined]
    thread.start()
    _current = thread
    return thread


def stop_heartbeat_thread() -> None:
    """A clean shutdown: stop beating and remove the row (the broker got this worker's messages back)."""
    from .models_health import WorkerHeartbeat

    thread = _current
    if thread is None:
        return
    thread.stop.set()  # type: ignore[attr-defined]
    thread.join(5)
    try:
        WorkerHeartbeat.objects.filter(hostname=thread.worker_name).delete()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the sweep then treats it as dead: one duplicate per message
        log.warning("could not remove the heartbeat of %s", thread.worker_name, exc_info=True)  # type: ignore[attr-defined]
    finally:
        close_old_connections()


def live_workers() -> list[str]:
    from .models_health import WorkerHeartbeat

    since = timezone.now() - _stale_after()
    return list(WorkerHeartbeat.objects.filter(last_seen__gte=since).values_list("hostname", flat=True))
