"""The Celery application: tasks take primary keys, JSON only, settings under CELERY_*."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")

app = Celery("instantstart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["instantstart.operations"])


@__import__("celery").signals.worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    from instantstart.operations.heartbeat import start_heartbeat_thread

    start_heartbeat_thread(getattr(sender, "hostname", None))
