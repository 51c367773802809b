"""wait_for_operation: block the agent, not the server, until an operation moves.

The one tool that is not a REST endpoint: REST clients poll ``GET /operations/{id}/``, an agent
calls this and gets an answer as soon as the operation's status or one of its phases' status
changes, or at its timeout (≤ 60 s). The wait itself is an ``asyncio.sleep`` on the event loop: no
worker thread is held while waiting, and no database connection either — each check is one small
query (the operation's status and its phases' statuses) run on Django's sync thread, after which
the connection is released as at the end of a request (CONN_MAX_AGE decides, as for REST).

The answer before and after the wait is ``get_operation``'s (dispatched into its REST endpoint), so
team scoping and roles are the REST API's: another team's operation is the same not_found. An id
that is an approval (``agent_tools.approvals``) is waited on the same way until it is decided.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings

from . import dispatch
from .db import release_stale_connections
from .results import WAIT_TOOL, error_result, result_of
from .validation import argument_errors

log = logging.getLogger(__name__)

TOOL_NAME = WAIT_TOOL
MAX_TIMEOUT_SECONDS = 60
DEFAULT_TIMEOUT_SECONDS = 30

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {
            "type": "string",
            "description": "The operation's id (operation_id of a mutating tool's result), or an approval's id.",
        },
        "timeout_seconds": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TIMEOUT_SECONDS,
            "description": f"Longest wait in seconds (1-{MAX_TIMEOUT_SECONDS}, default {DEFAULT_TIMEOUT_SECONDS}).",
        },
    },
    "required": ["id"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Wait until an operation changes: returns as soon as its status or a phase's status changes, or after "
    f"timeout_seconds (at most {MAX_TIMEOUT_SECONDS}). Use it after every mutating tool whose result says "
    "next: wait_for_operation, with its operation_id, and call it again while terminal is false. Read-only; "
    "costs the server nothing while it waits. Returns {operation, changed, timed_out, terminal} (operation as "
    "get_operation answers it), plus next: wait_for_operation while it is not terminal. For an approval id "
    "returns {approval, …} the same way until an admin approves or rejects it; an approved approval names "
    "the operation it started."
)


def listing() -> list[types.Tool]:
    return [
        types.Tool(
            name=TOOL_NAME,
            title="Wait for an operation",
            description=DESCRIPTION,
            input_schema=INPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title="Wait for an operation",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
    ]


async def call(arguments: dict[str, Any] | None, caller: dispatch.Caller) -> types.CallToolResult:
    invalid = argument_errors(INPUT_SCHEMA, arguments)
    if invalid is not None:
        return error_result(invalid)
    ident = arguments["id"]
    timeout = arguments.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    kind, answer = await sync_to_async(_read, thread_sensitive=True)(ident, caller)
    if not answer.ok:
        return result_of(answer)
    if kind == "approval" and _runnable(answer.data):
        kind, answer = await sync_to_async(_run_and_read, thread_sensitive=True)(ident, caller)
    started = time.monotonic()
    before = _fingerprint(kind, answer.data)
    changed = False
    if not _terminal(kind, answer.data):
        changed = await _poller().wait((kind, str(ident)), before, timeout)
        _, answer = await sync_to_async(_read, thread_sensitive=True)(ident, caller)
        if not answer.ok:
            return result_of(answer)
        if kind == "approval" and _runnable(answer.data):
            _, answer = await sync_to_async(_run_and_read, thread_sensitive=True)(ident, caller)
        changed = changed or _fingerprint(kind, answer.data) != before
    terminal = _terminal(kind, answer.data)
    data: dict[str, Any] = {
        kind: answer.data,
        "changed": changed,
        "timed_out": not changed and not terminal,
        "terminal": terminal,
        "waited_seconds": round(time.monotonic() - started, 3),
    }
    if not terminal:
        data.update({"next": TOOL_NAME, "operation_id": str(ident)})
    elif kind == "approval" and answer.data.get("operation"):
        data.update({"next": TOOL_NAME, "operation_id": str(answer.data["operation"]["id"])})
    text = json.dumps(data, separators=(",", ":"), default=str)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)


def _runnable(approval: dict) -> bool:
    return approval.get("status") == "approved" and not approval.get("executed_at")


def _run_and_read(ident: str, caller: dispatch.Caller) -> tuple[str, dispatch.Answer]:
    """Start the approved call (once, for the token that asked), then read the approval again."""
    from .approvals import run_if_approved

    release_stale_connections()
    try:
        run_if_approved(ident, caller)
    finally:
        release_stale_connections()
    return _read(ident, caller)


def _read(ident: str, caller: dispatch.Caller) -> tuple[str, dispatch.Answer]:
    """The operation (or approval) as its REST endpoint answers the caller."""
    from .registry import registry

    release_stale_connections()
    try:
        answer = dispatch.call(registry.get("get_operation"), {"id": ident}, caller)
        if answer.status == 404 and registry.get("get_approval") is not None:
            approval = dispatch.call(registry.get("get_approval"), {"id": ident}, caller)
            if approval.status != 404:
                return "approval", approval
        return "operation", answer
    finally:
        release_stale_connections()


class _Poller:
    """One per event loop: every wait of the process is checked by one query per interval.

    A wait registers (what it waits on, the fingerprint it saw) and a future; one task polls the
    fingerprints of all registered operations and approvals together and resolves each future
    whose fingerprint moved. The task stops when nobody waits. So 100 waits cost the server what
    one does: one small query every MCP_WAIT_POLL_SECONDS on Django's sync thread, no thread and no
    connection of their own.
    """

    def __init__(self) -> None:
        self.waits: dict[tuple[str, str], list[tuple[tuple, asyncio.Future]]] = {}
        self.task: asyncio.Task | None = None

    async def wait(self, key: tuple[str, str], before: tuple, timeout: float) -> bool:
        """True when the fingerprint of ``key`` moved from ``before`` within ``timeout`` seconds."""
        future = asyncio.get_running_loop().create_future()
        entry = (before, future)
        self.waits.setdefault(key, []).append(entry)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._run())
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            entries = self.waits.get(key, [])
            if entry in entries:
                entries.remove(entry)
            if not entries:
                self.waits.pop(key, None)

    async def _run(self) -> None:
        while self.waits:
            await asyncio.sleep(settings.MCP_WAIT_POLL_SECONDS)
            keys = list(self.waits)
            if not keys:
                break
            try:
                now = await sync_to_async(_poll, thread_sensitive=True)(keys)
            except Exception:  # noqa: BLE001 - a failed poll (database restart) is retried next interval
                log.warning("wait_for_operation: poll failed", exc_info=True)
                continue
            for key in keys:
                for before, future in list(self.waits.get(key, [])):
                    if now.get(key) != before and not future.done():
                        future.set_result(True)


_pollers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _poller() -> _Poller:
    loop = asyncio.get_running_loop()
    poller = _pollers.get(loop)
    if poller is None:
        poller = _pollers[loop] = _Poller()
    return poller


def _poll(keys: list[tuple[str, str]]) -> dict[tuple[str, str], tuple]:
    """The fingerprints of these operations and approvals: at most one small query per kind.

    The callers' access was checked by ``_read`` before they started waiting.
    """
    release_stale_connections()
    try:
        found: dict[tuple[str, str], list] = {}
        operations = [ident for kind, ident in keys if kind == "operation"]
        approvals = [ident for kind, ident in keys if kind == "approval"]
        if operations:
            from instantstart.operations.models import Operation

            rows = (
                Operation.objects.filter(pk__in=operations)
                .order_by("pk", "phases__index")
                .values_list("pk", "status", "phases__status")
            )
            for pk, status, phase in rows:
                found.setdefault(("operation", str(pk)), []).append((status, phase))
        if approvals:
            from .models import Approval

            for pk, status, result in Approval.objects.filter(pk__in=approvals).values_list(
                "pk", "status", "result_status"
            ):
                found[("approval", str(pk))] = [(status, result)]
        return {key: tuple(value) for key, value in found.items()}
    finally:
        release_stale_connections()


def _fingerprint(kind: str, data: dict) -> tuple:
    if kind == "approval":
        return ((data.get("status"), data.get("result_status")),)
    phases = data.get("phases") or [{}]
    return tuple((data.get("status"), phase.get("status")) for phase in phases)


def _terminal(kind: str, data: dict) -> bool:
    if kind == "approval":  # decided, and when approved, run (its operation is then what to wait on)
        return data.get("status") == "rejected" or data.get("result_status") is not None
    return data.get("status") in ("succeeded", "failed", "cancelled")
