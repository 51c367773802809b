"""`celery -A bench.legacy_worker worker`: the product's worker running bench/legacy_engine.py.

bench/engine.py starts it for its `legacy` rows, with WORKER_DB_CONN_MAX_AGE=0 (a connection per
task, as Celery's Django fixup opened before issue 16). Only the engine is swapped: the task, the
queue, the settings and the step code are the product's.
"""

from __future__ import annotations

import django

from instantstart.celery import app

django.setup()  # the engine modules import models

from bench import legacy_engine  # noqa: E402
from instantstart.operations import engine  # noqa: E402

# The advance task calls engine.advance at run time, so this takes effect however the task
# module is imported.
engine.advance = legacy_engine.advance

__all__ = ["app"]
