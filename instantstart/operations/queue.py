"""Sending `advance` messages to the broker.

The task is sent by its registered name, so this module needs neither the task module nor the
engine (the engine imports this one: no cycle).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

log = logging.getLogger(__name__)

ADVANCE_TASK = "instantstart.operations.tasks.advance"
SWEEP_TASK = "instantstart.operations.tasks.sweep"

# The first message of a new (or retried) operation waits behind the messages of operations
# already under way: under a backlog, work in progress finishes instead of every operation moving
# in lockstep. Redis takes priority 0 (the default) first; the file-system broker has no priorities.
START_PRIORITY = 6


def enqueue_advance(
    operation_id: str | uuid.UUID,
    *,
    countdown: float = 0,
    stamp: datetime | None = None,
    priority: int | None = None,
    stamp_if_untaken: int | None = None,
) -> bool:
    """Ask a worker to advance the operation after ``countdown`` seconds; False if the broker refused.

    ``stamp`` is the ``enqueued_at`` the caller saved for this message. A broker failure is logged,
    not raised, and clears that stamp: the operation's wake-up time is already saved and the sweep
    sends the message that could not be sent.

    ``stamp_if_untaken`` (the services' messages, sent after their transaction commits): stamp the
    operation once the broker took the message, unless a worker has claimed it since (its
    ``advance_count`` moved). A process that dies before sending leaves no stamp, so the sweep sends
    the message it never sent.
    """
    from django.conf import settings

    from instantstart.celery import app

    try:
        app.send_task(
            ADVANCE_TASK,
            args=[str(operation_id)],
            countdown=max(countdown, 0),
            queue=settings.CELERY_TASK_DEFAULT_QUEUE,
            priority=priority,
        )
    except Exception:  # noqa: BLE001
        log.warning("could not enqueue advance(%s); the sweep will retry", operation_id, exc_info=True)
        if stamp is not None:
            _clear_stamp(operation_id, stamp)
        return False
    if stamp_if_untaken is not None:
        _stamp_sent(operation_id, stamp_if_untaken)
    return True


def _stamp_sent(operation_id: str | uuid.UUID, advance_count: int) -> None:
    from django.utils import timezone

    from .models import Operation

    try:
        Operation.objects.filter(pk=operation_id, advance_count=advance_count, enqueued_at__isnull=True).update(
            enqueued_at=timezone.now()
        )
    except Exception:  # noqa: BLE001 - without the stamp the sweep sends one more message, no more
        log.warning("could not stamp the message of %s", operation_id, exc_info=True)


def _clear_stamp(operation_id: str | uuid.UUID, stamp: datetime) -> None:
    from .models import Operation

    try:
        # Only this message's stamp: a newer message may have been sent meanwhile.
        Operation.objects.filter(pk=operation_id, enqueued_at=stamp).update(enqueued_at=None)
    except Exception:  # noqa: BLE001 - the sweep's lost-message backstop still finds it
        log.warning("could not clear the enqueued stamp of %s", operation_id, exc_info=True)
