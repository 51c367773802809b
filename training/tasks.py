"""Worker-side set-up of the training app (Celery autodiscovers this module): workers follow the logs of
the pods whose jobs they run (steps/log_streams.py)."""

from __future__ import annotations

from celery import signals


@signals.worker_init.connect
def _follow_pod_logs(**kwargs) -> None:
    from .steps import log_streams

    log_streams.enable()
