"""Workers say they are alive by touching a row; /healthz reads it.

A row in the database works in every mode, including standalone's file-system broker, which
cannot carry Celery's broadcast pings.
"""

from __future__ import annotations

import logging
import socket
import threading
from datetime import timedelta

from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)
INTERVAL_SECONDS = 10.0
STALE_AFTER = timedelta(seconds=45)


def beat(hostname: str) -> None:
    from .models_health import WorkerHeartbeat

    WorkerHeartbeat.objects.update_or_create(hostname=hostname, defaults={"last_seen": timezone.now()})


def start_heartbeat_thread(hostname: str | None = None) -> threading.Thread:
    name = hostname or socket.gethostname()
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                beat(name)
            except Exception:  # noqa: BLE001 - a missed beat must not kill the worker
                log.warning("worker heartbeat failed", exc_info=True)
            finally:
                close_old_connections()
            if stop.wait(INTERVAL_SECONDS):
                return

    thread = threading.Thread(target=loop, name="worker-heartbeat", daemon=True)
    thread.stop = stop  # type: ignore[attr-defined]
    thread.start()
    return thread


def live_workers() -> list[str]:
    from .models_health import WorkerHeartbeat

    since = timezone.now() - STALE_AFTER
    return list(WorkerHeartbeat.objects.filter(last_seen__gte=since).values_list("hostname", flat=True))
