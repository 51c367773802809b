"""Tool results: the REST answer as the tool's result, and what to call after a change."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mcp_types as types

from . import dispatch

if TYPE_CHECKING:
    from .registry import Tool

WAIT_TOOL = "wait_for_operation"
NEXT_META_KEY = "instantstart/next"


def result_of(answer: dispatch.Answer, tool: Tool | None = None) -> types.CallToolResult:
    """A 2xx answer as the tool's result; any other as a tool error with the REST error body.

    The first text block (and the structured result) is the REST body as sent. A mutating tool's
    success that started (or is held for approval as) something to wait for also says what to call
    next, ``{"next": "wait_for_operation", "operation_id": …}``, in a second text block and in the
    result's ``_meta`` — the REST body itself stays the REST API's.
    """
    text = answer.text or json.dumps({"status": answer.status})
    structured = answer.data if isinstance(answer.data, dict) else None
    content = [types.TextContent(type="text", text=text)]
    follow = followup(answer.data) if answer.ok and tool is not None and tool.mutating else None
    meta = None
    if follow is not None:
        content.append(types.TextContent(type="text", text=json.dumps(follow, separators=(",", ":"))))
        meta = {NEXT_META_KEY: follow}
    return types.CallToolResult(content=content, structured_content=structured, is_error=not answer.ok, meta=meta)


def followup(data: Any) -> dict | None:
    """``{"next": "wait_for_operation", "operation_id": …}`` for an answer naming an operation or approval."""
    if not isinstance(data, dict):
        return None
    for key in ("operation", "approval"):
        inner = data.get(key)
        if isinstance(inner, dict) and inner.get("id"):
            return {"next": WAIT_TOOL, "operation_id": str(inner["id"])}
    if data.get("id") and "phases" in data and "kind" in data:  # the answer is the operation itself
        return {"next": WAIT_TOOL, "operation_id": str(data["id"])}
    return None


def error_result(body: dict) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body, separators=(",", ":")))],
        structured_content=body,
        is_error=True,
    )
