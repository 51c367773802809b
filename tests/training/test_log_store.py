"""Overlapping reads of one pod's log (a followed stream, the poll, a second worker's stream) store each
line once and in order, lines that share a kubelet timestamp included."""

from __future__ import annotations

import pytest

from tests.factories import ClusterFactory
from training.models import Job, LogLine
from training.steps.log_store import Numberer, since_of, stamp_key, store

# What the pod printed: several lines share a timestamp (a program prints a burst in one write).
PRINTED = [
    ("2026-12-01T10:00:00.5Z", "a"),
    ("2026-12-01T10:00:01.25Z", "b"),
    ("2026-12-01T10:00:01.25Z", "c"),
    ("2026-12-01T10:00:01.25Z", "d"),
    ("2026-12-01T10:00:01.75Z", "e"),
    ("2026-12-01T10:00:02Z", "f"),
    ("2026-12-01T10:00:02Z", "f"),  # the same text twice is two lines
]


def _read(since: str | None) -> list:
    """A read from ``since`` (the start of a second), numbered as a reader numbers it."""
    whole = [line for line in PRINTED if since is None or stamp_key(line[0]) >= stamp_key(since)]
    return list(Numberer().number(whole))


@pytest.fixture
def job(team):
    cluster = ClusterFactory(team=team, name="logs")
    return Job.objects.create(
        cluster=cluster, name="j", recipe="pytorch", kind="HyperPodPyTorchJob", namespace="acme", k8s_name="j-1"
    )


def _stored(job) -> list[tuple[int, str, str]]:
    return list(LogLine.objects.filter(job=job).order_by("seq").values_list("seq", "pod", "text"))


def test_a_stream_cut_in_a_burst_and_a_poll_from_the_cursor_store_each_line_once(job):
    stream = Numberer()
    assert store(job.pk, [("p0", list(stream.number(PRINTED[:3])))]) == 3  # a, b, c: cut inside the burst
    job.refresh_from_db()
    assert job.log_cursors["p0"] == {"ts": "2026-12-01T10:00:01.25Z", "n": 2}
    # The poll reads from the cursor's second: b and c again, then what the stream has not sent yet.
    poll = _read(since_of(job.log_cursors["p0"]))
    assert [text for _, text, _ in poll] == ["b", "c", "d", "e", "f", "f"]
    assert store(job.pk, [("p0", poll)]) == 4
    # The stream goes on with what it had not stored: already there, nothing twice.
    assert store(job.pk, [("p0", list(stream.number(PRINTED[3:])))]) == 0
    assert _stored(job) == [(i + 1, "p0", text) for i, (_, text) in enumerate(PRINTED)]


def test_two_streams_of_one_pod_and_another_pod_in_one_batch(job):
    old, new = Numberer(), Numberer()
    first = list(old.number(PRINTED[:4]))
    again = list(new.number(PRINTED[1:]))  # a second worker's stream from the second of b
    other = list(Numberer().number([("2026-12-01T10:00:01.5Z", "rank1")]))
    assert store(job.pk, [("p0", first), ("p1", other), ("p0", again)]) == len(PRINTED) + 1
    # ordered by timestamp across the pods, each line once
    assert [text for _, _, text in _stored(job)] == ["a", "b", "c", "d", "rank1", "e", "f", "f"]
    job.refresh_from_db()
    assert job.last_seq == 8 and job.log_cursors["p0"] == {"ts": "2026-12-01T10:00:02Z", "n": 2}
