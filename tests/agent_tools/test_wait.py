"""wait_for_operation: returns when the operation moves or at its timeout, scoped like get_operation,
and many waits hold no thread each (issue 12 item 2)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from mcp import Client

from instantstart.operations.models import Operation, OperationStatus
from tests.mcp_client import MCP, body

WAIT = "wait_for_operation"


@pytest.fixture
def fast_polls(settings):
    settings.MCP_WAIT_POLL_SECONDS = 0.05


def later(seconds: float, change) -> threading.Thread:
    def run():
        time.sleep(seconds)
        change()
        connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_returns_when_the_status_changes(member_token, operation_of, fast_polls):
    operation = operation_of(OperationStatus.RUNNING)
    thread = later(0.3, lambda: Operation.objects.filter(pk=operation.pk).update(status=OperationStatus.SUCCEEDED))
    result = MCP(member_token).call(WAIT, {"id": str(operation.pk), "timeout_seconds": 30})
    thread.join()
    answer = body(result)
    assert not result.is_error, answer
    assert (answer["changed"], answer["timed_out"], answer["terminal"]) == (True, False, True)
    assert answer["operation"]["status"] == "succeeded"
    assert answer["waited_seconds"] < 30
    assert "next" not in answer


@pytest.mark.django_db
def test_times_out_and_says_to_wait_again(member_token, operation_of, fast_polls):
    operation = operation_of(OperationStatus.RUNNING)
    answer = body(MCP(member_token).call(WAIT, {"id": str(operation.pk), "timeout_seconds": 1}))
    assert (answer["changed"], answer["timed_out"], answer["terminal"]) == (False, True, False)
    assert (answer["next"], answer["operation_id"]) == (WAIT, str(operation.pk))
    assert answer["operation"]["status"] == "running"


@pytest.mark.django_db
def test_a_finished_operation_answers_at_once(member_token, operation_of):
    operation = operation_of(OperationStatus.FAILED)
    answer = body(MCP(member_token).call(WAIT, {"id": str(operation.pk), "timeout_seconds": 60}))
    assert (answer["changed"], answer["terminal"]) == (False, True)
    assert answer["operation"]["error"]["code"] == "SimulatedFailure"


@pytest.mark.django_db
def test_another_teams_operation_is_not_found(member_token, operation_of, other_team, outsider_user):
    theirs = operation_of(OperationStatus.RUNNING, of_team=other_team, by=outsider_user)
    mcp = MCP(member_token)
    result = mcp.call(WAIT, {"id": str(theirs.pk), "timeout_seconds": 1})
    assert result.is_error
    assert body(result) == body(mcp.call("get_operation", {"id": str(theirs.pk)}))
    assert body(result)["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_many_waits_share_one_thread(member_token, operation_of, fast_polls):
    """20 concurrent waits run on the event loop: the thread count does not grow with them."""
    operations = [operation_of(OperationStatus.RUNNING) for _ in range(20)]
    server = MCP(member_token).server
    peak = []

    async def run():
        async with Client(server) as client:

            async def watch():
                while True:
                    peak.append(threading.active_count())
                    await asyncio.sleep(0.05)

            watcher = asyncio.ensure_future(watch())
            results = await asyncio.gather(
                *(client.call_tool(WAIT, {"id": str(op.pk), "timeout_seconds": 1}) for op in operations)
            )
            watcher.cancel()
            return results

    before = threading.active_count()
    results = async_to_sync(run)()
    assert all(body(result)["timed_out"] for result in results)
    assert max(peak) - before <= 3  # the event loop's thread and Django's one sync thread, not one per wait
