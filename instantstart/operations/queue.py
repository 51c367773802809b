"""Sending `advance` messages to the broker."""

from __future__ import annotations

import logging
import uuid

log = logging.getLogger(__name__)


def enqueue_advance(operation_id: str | uuid.UUID, *, countdown: float = 0) -> None:
    """Ask a worker to advance the operation after ``countdown`` seconds.

    A broker failure is logged, not raised: the operation's wake-up time is already saved and the
    sweep re-enqueues it.
    """
    from django.conf import settings

    from .tasks import advance_task

    try:
        advance_task.apply_async(
            args=[str(operation_id)], countdown=max(countdown, 0), queue=settings.CELERY_TASK_DEFAULT_QUEUE
        )
    except Exception:  # noqa: BLE001
        log.warning("could not enqueue advance(%s); the sweep will retry", operation_id, exc_info=True)
