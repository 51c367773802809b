"""The `celery worker` command line, built in one place for `make run`, the tests and the benches."""

from __future__ import annotations

import re
import sys

# The INFO line a worker prints for each advance task it ran; the task returns the Outcome's
# action (skipped, done, wait, succeeded, failed, cancelled). Tests and benches read it.
ADVANCE_LOG_LINE = re.compile(
    r"Task instantstart\.operations\.tasks\.advance\[[^\]]+\] succeeded in ([0-9.e-]+)s: '(\w+)'"
)


def worker_argv(
    *,
    hostname: str,
    queue: str | None = None,
    pool: str | None = None,
    concurrency: int | None = None,
    loglevel: str = "INFO",
    app: str = "instantstart",
) -> list[str]:
    """Arguments that start one worker process of ``app`` with this interpreter.

    Pool and concurrency default to CELERY_WORKER_POOL / CELERY_WORKER_CONCURRENCY (the settings a
    plain `celery -A instantstart worker` reads in production). Gossip and mingle are off: workers
    coordinate through the database (leases), not through broadcast messages.
    """
    argv = [sys.executable, "-m", "celery", "-A", app, "worker", "--loglevel", loglevel]
    if queue:
        argv += ["-Q", queue]
    if pool:
        argv += ["--pool", pool]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    return [*argv, "--without-gossip", "--without-mingle", "--hostname", hostname]
