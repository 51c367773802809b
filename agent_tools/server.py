"""The MCP server: lists the registered tools and runs each call through its REST endpoint.

One ``build_server()`` serves both transports. Over streamable HTTP the caller's ``Authorization``
header comes with each request; over stdio the server is built with the token of its process.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from instantstart.api.errors import error_body
from instantstart.tenancy.access import Via
from instantstart.tenancy.authentication import resolve_token

from . import approvals, dispatch, waiting
from .db import release_stale_connections
from .registry import Registry, Tool, registry
from .results import error_result, result_of
from .validation import argument_errors

log = logging.getLogger(__name__)

SERVER_NAME = "instantstart"
INSTRUCTIONS = (
    "InstantStart runs ML training and inference on Amazon EKS + SageMaker HyperPod for your team. "
    "Every tool acts with the rights of your token and nothing more: call whoami first to see your team "
    "and role. Changes are long-running operations: a mutating tool returns an operation at once with "
    "next: wait_for_operation and its operation_id; call wait_for_operation with that id (it returns when "
    "the status or phase changes) until the status is succeeded, failed or cancelled. Pass an idempotency_key "
    "to a mutating tool when you may repeat the call (after a timeout): the repeat changes nothing twice. "
    "Errors carry {error: {code, message, fields}}, the same as the REST API's."
)
STATUS_TOOL_META_KEY = "instantstart/statusTool"
# Forwarded by a reverse proxy in front of /mcp/; passed on so Django builds links as for REST.
FORWARDED_HEADERS = ("x-forwarded-proto", "x-forwarded-host", "x-forwarded-port", "x-forwarded-for")


def build_server(
    *,
    read_only: bool | None = None,
    authorization: str | None = None,
    site: tuple[str, str] = ("http", "localhost"),
    tools: Registry = registry,
) -> Server:
    """An MCP server over ``tools``.

    Args:
        read_only: hide and refuse mutating tools; defaults to ``settings.MCP_READ_ONLY``.
        authorization: the ``Authorization`` value for calls that carry none (stdio). Over HTTP
            the request's own header is used.
        site: (scheme, host) of absolute links in answers when the call did not come over HTTP.
        tools: the registry to serve (tests may pass their own).
    """
    if read_only is None:
        read_only = settings.MCP_READ_ONLY

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # The server's mode hides mutating tools; the caller's role hides what it may never call.
        caller = _caller(ctx, authorization, site)
        role = await sync_to_async(_role_of, thread_sensitive=True)(caller) if caller else None
        listed = [describe(tool) for tool in tools.visible(read_only=read_only, role=role)]
        return types.ListToolsResult(tools=[*listed, *waiting.listing()])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == waiting.TOOL_NAME:
            caller = _caller(ctx, authorization, site)
            if caller is None:
                return error_result(error_body("not_authenticated", "Authentication credentials were not provided."))
            return await waiting.call(params.arguments, caller)
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        if read_only and tool.mutating:
            return error_result(
                error_body("read_only", f"This MCP server is read-only: {tool.name} changes state and is refused.")
            )
        invalid = argument_errors(tool.input_schema, params.arguments, strict=tool.unchecked_arguments)
        if invalid is not None:
            return error_result(invalid)
        caller = _caller(ctx, authorization, site)
        if caller is None:
            return error_result(error_body("not_authenticated", "Authentication credentials were not provided."))
        # The ORM must not run on the event loop; thread_sensitive keeps every Django call on the
        # one thread Django's own async handler uses for sync code.
        answer = await sync_to_async(_call_in_thread, thread_sensitive=True)(tool, params.arguments, caller)
        return result_of(answer, tool)

    def input_schema_of(name: str) -> dict | None:
        # For the SDK's Mcp-Param header check: without it, every HTTP tools/call would first run
        # the whole tools/list handler (a token lookup and every tool's description) to find one schema.
        if name == waiting.TOOL_NAME:
            return waiting.INPUT_SCHEMA
        tool = tools.get(name)
        return tool.input_schema if tool is not None else None

    return Server(
        SERVER_NAME,
        version=_version(),
        title="InstantStart",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema_of,
    )


def describe(tool: Tool) -> types.Tool:
    """The MCP listing entry of a tool: its arguments, its answer and its annotations."""
    meta = {STATUS_TOOL_META_KEY: tool.status_tool} if tool.status_tool else None
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            # All four hints on every tool, never left to MCP's defaults (a missing destructiveHint
            # reads as true, a missing openWorldHint as true): a read repeats harmlessly.
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.read_only or tool.idempotent,
            open_world_hint=tool.open_world,
        ),
        meta=meta,
    )


def _caller(ctx: ServerRequestContext, authorization: str | None, site: tuple[str, str]) -> dispatch.Caller | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None and headers.get("authorization"):
        # Streamable HTTP: the ASGI mount has already refused requests without a valid token;
        # the endpoint authenticates the same header again, exactly as for REST.
        return dispatch.Caller(
            authorization=headers["authorization"],
            host=headers.get("host") or site[1],
            scheme=request.url.scheme,
            forwarded=tuple((name, headers[name]) for name in FORWARDED_HEADERS if name in headers),
        )
    if authorization:
        return dispatch.Caller(authorization=authorization, scheme=site[0], host=site[1])
    return None


def _role_of(caller: dispatch.Caller) -> str | None:
    """The team role the caller's bearer token grants (None: not a valid token)."""
    parts = caller.authorization.split()
    if len(parts) != 2:
        return None
    release_stale_connections()
    try:
        access = resolve_token(parts[1], Via.MCP)
    finally:
        release_stale_connections()
    return access.role if access is not None else None


def _call_in_thread(tool: Tool, arguments: dict[str, Any] | None, caller: dispatch.Caller) -> dispatch.Answer:
    release_stale_connections()
    try:
        # The human gate first: an agent token's costly change is held, not dispatched.
        held = approvals.gate(tool, arguments, caller)
        return held if held is not None else dispatch.call(tool, arguments, caller)
    finally:
        release_stale_connections()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("instantstart")
    except PackageNotFoundError:
        return "0"
