"""Workers say they are alive by touching a row; /healthz and the sweep read it.

A row in the database works in every mode, including standalone's file-system broker, which
cannot carry Celery's broadcast pings. A clean shutdown removes the row; a row left behind means
its worker died, and the messages it may have held are sent again (engine.forget_messages_of): by
the sweep once the row goes stale, or at once by a worker that starts under the same name.
"""

from __future__ import annotations

import logging
import socket
import threading
from datetime import datetime, timedelta

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
    name = hostname or socket.gethostname()
    _take_over(name)
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


def _take_over(name: str) -> None:
    """A row under this name that no clean shutdown removed: the worker before this one died."""
    from .models_health import WorkerHeartbeat

    try:
        previous = WorkerHeartbeat.objects.filter(hostname=name).values_list("last_seen", flat=True).first()
        if previous is not None:
            forget_messages_of(name, previous)
    except Exception:  # noqa: BLE001 - the sweep finds it later all the same
        log.warning("could not take over the heartbeat of %s", name, exc_info=True)
    finally:
        close_old_connections()


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


def forget_messages_of(hostname: str, last_seen: datetime) -> int:
    """The worker ``hostname`` died after its last beat: clear the stamps of the messages it may have
    held (sent before it could have died) and remove its heartbeat; returns how many were cleared.

    Called by the sweep for a worker that stopped beating, and by a worker that starts under the
    name of one that did not shut down cleanly (a clean shutdown removes its row)."""
    from .models import ACTIVE, Operation
    from .models_health import WorkerHeartbeat

    died_by = last_seen + timedelta(seconds=settings.OPERATIONS["HEARTBEAT_SECONDS"])
    cleared = Operation.objects.filter(status__in=ACTIVE, enqueued_at__lte=died_by).update(enqueued_at=None)
    WorkerHeartbeat.objects.filter(hostname=hostname, last_seen=last_seen).delete()
    log.warning("worker %s stopped beating at %s; %d messages will be sent again", hostname, last_seen, cleared)
    return cleared


def live_workers() -> list[str]:
    from .models_health import WorkerHeartbeat

    since = timezone.now() - _stale_after()
    return list(WorkerHeartbeat.objects.filter(last_seen__gte=since).values_list("hostname", flat=True))
