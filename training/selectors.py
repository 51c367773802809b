"""Database reads about jobs that are more than a filter, and the one lookup of a job.

``get_job`` is how every face (viewsets, portal views, the log socket, tools through REST) finds a job
of the caller's team: through ``visible_to``, and NotFound (a 404 everywhere, 4404 on the socket) for
anything else — another team's job included.
"""

from __future__ import annotations

import uuid

from django.contrib.contenttypes.models import ContentType

from clusters.selectors import get_cluster
from instantstart.errors import NotFound
from instantstart.operations.models import Operation
from instantstart.tenancy.access import Access

from .models import Job, LogLine


def get_job(access: Access, cluster_pk, pk) -> Job:
    """A job of one of the caller's clusters."""
    cluster = get_cluster(access, cluster_pk)
    try:
        return (
            Job.objects.visible_to(access).select_related("cluster__team").get(cluster=cluster, pk=uuid.UUID(str(pk)))
        )
    except (ValueError, Job.DoesNotExist):
        raise NotFound() from None


def visible_job_id(access: Access, pk) -> uuid.UUID:
    """The id of a job of the caller's team, by its id alone (the socket's path names no cluster; it
    needs nothing else of the job, so nothing else is read)."""
    try:
        found = Job.objects.visible_to(access).filter(pk=uuid.UUID(str(pk))).values_list("pk", flat=True).first()
    except ValueError:
        found = None
    if found is None:
        raise NotFound()
    return found


def log_lines(job: Job, *, after: int = 0, pod: str = "", limit: int = 1000) -> tuple[list[LogLine], int]:
    """Lines after sequence ``after`` (of one pod, if given), at most ``limit``, and the ``next`` cursor.

    ``next`` is the last sequence number returned — or, when a pod filter skipped lines, the last one
    looked at — so a reader that passes it back as ``after`` neither misses nor repeats a line.
    """
    lines = LogLine.objects.filter(job=job, seq__gt=after)
    if pod:
        lines = lines.filter(pod=pod)
    found = list(lines.order_by("seq")[:limit])
    if found:
        return found, found[-1].seq
    if pod:
        # Nothing of that pod: the reader may skip to what has been collected so far.
        return [], max(after, Job.objects.filter(pk=job.pk).values_list("last_seq", flat=True).first() or 0)
    return [], after


def operations_of(job: Job):
    return Operation.objects.filter(target_type=ContentType.objects.get_for_model(Job), target_id=str(job.pk))


def submit_operation(job: Job) -> Operation | None:
    return operations_of(job).filter(kind="job.submit").order_by("-created_at").first()
