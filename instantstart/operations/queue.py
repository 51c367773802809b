"""Sending `advance` messages to the broker.

The task is sent by its registered name, so this module needs neither the task module nor the
engine (the engine imports this one: no cycle).
"""

from __future__ import annotations

import logging
import uuid

log = logging.getLogger(__name__)

ADVANCE_TASK = "instantstart.operations.tasks.advance"
SWEEP_TASK = "instantstart.operations.tasks.sweep"


def enqueue_advance(operation_id: str | uuid.UUID, *, countdown: float = 0) -> None:
    """Ask a worker to advance the operation after ``countdown`` seconds.

    A broker failure is logged, not raised: the operation's wake-up time is already saved and the
    sweep re-enqueues it.
    """
    from django.conf import settings

    from instantstart.celery import app

    try:
        app.send_task(
            ADVANCE_TASK,
            args=[str(operation_id)],
            countdown=max(countdown, 0),
            queue=settings.CELERY_TASK_DEFAULT_QUEUE,
        )
    except Exception:  # noqa: BLE001
        log.warning("could not enqueue advance(%s); the sweep will retry", operation_id, exc_info=True)
