"""The Celery application: tasks take primary keys, JSON only, settings under CELERY_*."""

from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")

app = Celery("instantstart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["instantstart.operations", "training"])


@signals.worker_init.connect
def _reuse_database_connections(**kwargs) -> None:
    # Workers keep their connections for WORKER_DB_CONN_MAX_AGE (Celery's fixup would open one per
    # task: CELERY_DB_REUSE_MAX keeps it from closing them; the hooks below close what is obsolete).
    from django.conf import settings

    # A worker's threads each keep one connection: the web server's pool is off here (Django refuses a
    # pool with persistent connections).
    for database in settings.DATABASES.values():
        database.get("OPTIONS", {}).pop("pool", None)
        database["CONN_MAX_AGE"] = settings.WORKER_DB_CONN_MAX_AGE


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_obsolete_connections(**kwargs) -> None:
    # As Django does around a request: drop connections that broke or outlived CONN_MAX_AGE.
    from django.db import close_old_connections

    close_old_connections()


@signals.worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    from instantstart.operations.heartbeat import start_heartbeat_thread

    start_heartbeat_thread(getattr(sender, "hostname", None))


@signals.worker_shutdown.connect
def _stop_heartbeat(**kwargs) -> None:
    from instantstart.operations.heartbeat import stop_heartbeat_thread

    stop_heartbeat_thread()
