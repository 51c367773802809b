"""Fixtures of the engine's tests: an access, and a real Redis queue whose messages a test counts."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings

from instantstart.tenancy.access import Access, Via


@pytest.fixture
def access(team, member_user):
    return Access(user=member_user, team=team, role="member", via=Via.API)


class Queue:
    """The advance messages waiting in one Redis queue that no worker consumes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.client = redis.Redis.from_url(settings.REDIS_URL)

    def _keys(self) -> list[bytes]:
        # kombu keeps one list per priority step: the queue's name, then name + separator + step.
        return [key for key in self.client.scan_iter(match=f"{self.name}*") if self.client.type(key) == b"list"]

    def __len__(self) -> int:
        return sum(self.client.llen(key) for key in self._keys())

    def clear(self) -> None:
        for key in self.client.scan_iter(match=f"*{self.name}*"):
            self.client.delete(key)


@pytest.fixture
def queue(worker_queue):
    """Messages sent by this test go to a queue of its own; len(queue) counts them."""
    q = Queue(worker_queue)
    yield q
    q.clear()
    q.client.close()


@pytest.fixture
def started(access, queue, django_capture_on_commit_callbacks):
    """Start an engine.selftest operation with its first message really in the queue (no worker takes it)."""
    from instantstart.operations.services import start_operation

    def start(**params):
        with django_capture_on_commit_callbacks(execute=True):
            op, _ = start_operation(access=access, kind="engine.selftest", params=params)
        assert len(queue) == 1
        op.refresh_from_db()
        return op

    return start
