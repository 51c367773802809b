"""Celery tasks of the engine. They take primary keys and reload; the engine does the rest.

Workers import this module before they start (autodiscovery), so the signals that make a worker
keep the operations that wait (holding.py) are connected here, next to the engine they run.
"""

from __future__ import annotations

from celery import shared_task, signals

from . import engine, holding
from .queue import ADVANCE_TASK, SWEEP_TASK


@shared_task(name=ADVANCE_TASK, ignore_result=True)
def advance_task(operation_id: str) -> str:
    return engine.advance(operation_id).action


@shared_task(name=SWEEP_TASK, ignore_result=True)
def sweep_task() -> int:
    return engine.sweep()


@signals.worker_init.connect
def _keep_waiting_operations(sender=None, **kwargs) -> None:
    from django.conf import settings

    holding.enable(getattr(sender, "concurrency", None) or settings.CELERY_WORKER_CONCURRENCY)


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _give_back_kept_operations(**kwargs) -> None:
    holding.stop()  # a clean shutdown: what this process kept is given back, not left to run out
