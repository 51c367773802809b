"""Worker liveness, read by /healthz."""

from __future__ import annotations

from django.db import models


class WorkerHeartbeat(models.Model):
    """The last time a worker process said it is alive."""

    hostname = models.CharField(max_length=200, unique=True)
    last_seen = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.last_seen:%H:%M:%S}"
