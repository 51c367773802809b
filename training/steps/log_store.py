"""Storing a job's pod log lines with the job's sequence numbers, none lost and none twice, whoever reads
them: the running phase's poll (submit.py's `collect_logs`) or a followed stream (log_streams.py).

A pod's cursor (on the Job row, `log_cursors`) is the last stored line's kubelet timestamp and how many
stored lines carry that timestamp. Every read of a pod log starts at the beginning of a second (the
API's sinceTime has second precision), so the reader can number each line it gets by how many lines
before it carry the same timestamp; a line is stored already when its timestamp is older than the
cursor's, or equal with a number below the cursor's count. The cursor is read and moved under the Job
row's lock with the lines it covers: two readers of one pod (a stream and the poll, or two workers
after a lease moved) store each line once, and a crash keeps both or neither.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db import transaction

from ..models import Job, LogLine

# (kubelet timestamp, text, how many lines before it in the same read carry the same timestamp)
Numbered = tuple[str, str, int]


def stamp_key(stamp: str) -> tuple[str, int]:
    """A kubelet timestamp (RFC 3339, up to nanoseconds, trailing zeros trimmed) as a sortable key."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    return head, int((frac + "000000000")[:9] or 0)


def since_of(cursor: dict | None) -> str | None:
    """The sinceTime a read from ``cursor`` asks for: the start of the cursor's second (None: from the start)."""
    if not cursor or not cursor.get("ts"):
        return None
    return cursor["ts"].partition(".")[0].rstrip("Z") + "Z"


class Numberer:
    """Numbers the lines of one read (or one followed stream) as they come, in order."""

    def __init__(self) -> None:
        self.key: tuple[str, int] | None = None
        self.count = 0

    def number(self, lines: Iterable[tuple[str, str]]) -> Iterator[Numbered]:
        for stamp, text in lines:
            key = stamp_key(stamp)
            if key == self.key:
                self.count += 1
            else:
                self.key, self.count = key, 0
            yield stamp, text, self.count


def _fresh(cursor: dict | None, lines: list[Numbered]) -> list[Numbered]:
    if not cursor or not cursor.get("ts"):
        return list(lines)
    at, stored = stamp_key(cursor["ts"]), int(cursor.get("n", 0))
    return [line for line in lines if (key := stamp_key(line[0])) > at or (key == at and line[2] >= stored)]


def store(job_id, reads: Iterable[tuple[str, list[Numbered]]]) -> int:
    """Store what each (pod, lines) read holds that is not stored yet, the reads taken in order (two reads
    of one pod may overlap), with the job's next sequence numbers (ordered by timestamp across pods),
    and move the pods' cursors; how many lines were new."""
    with transaction.atomic():
        locked = Job.objects.select_for_update().only("last_seq", "log_cursors").get(pk=job_id)
        cursors = dict(locked.log_cursors or {})
        new: list[tuple[str, str, str]] = []
        for pod, lines in reads:
            fresh = _fresh(cursors.get(pod), lines)
            if not fresh:
                continue
            stamp, _, number = fresh[-1]
            cursors[pod] = {"ts": stamp, "n": number + 1}
            new.extend((line[0], pod, line[1]) for line in fresh)
        if not new:
            return 0
        new.sort(key=lambda line: stamp_key(line[0]))
        first = locked.last_seq + 1
        LogLine.objects.bulk_create(
            LogLine(job_id=job_id, seq=first + i, pod=pod, ts=_ts(stamp), text=text[:65536])
            for i, (stamp, pod, text) in enumerate(new)
        )
        Job.objects.filter(pk=job_id).update(last_seq=first + len(new) - 1, log_cursors=cursors)
    return len(new)


def _ts(stamp: str):
    try:
        # Python parses at most microseconds: the kubelet gives nanoseconds.
        head, _, frac = stamp.rstrip("Z").partition(".")
        return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}+00:00" if frac else f"{head}+00:00")
    except ValueError:
        return None
