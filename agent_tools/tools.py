"""The core's tools: who am I, and the team's operations.

Domain apps register their own tools in their ``tools.py`` (clusters/tools.py, training/tools.py…);
these live here because the core (instantstart/) has no MCP knowledge of its own.
"""

from __future__ import annotations

from instantstart.operations.api import OperationViewSet
from instantstart.operations.serializers import STATUS_TOOL
from instantstart.tenancy.api import WhoAmIView

from .registry import Tool, register

_OPERATION_SHAPE = (
    "An operation is {id, kind, status (pending|running|succeeded|failed|cancelled), target, phases "
    "[{name, title, status, message…}], error {code, message, hint} when it failed, can_retry, can_cancel}."
)

register(
    Tool(
        name="whoami",
        title="Who am I",
        description=(
            "Show who this token acts as: username, team (slug and name), role in the team (viewer, member or "
            "admin) and the token's name. Call it first to learn what you may do: viewers only read; members "
            "also retry and cancel operations and manage workloads; admins also manage clusters and the team."
        ),
        view=WhoAmIView,
        read_only=True,
    ),
    Tool(
        name="list_operations",
        title="List operations",
        description=(
            "List the team's long-running operations (cluster creation, scaling, job submission…), newest "
            "first, optionally filtered by status, kind or target id. Use it to find what is running or what "
            "failed. Returns {count, next, previous, results: [operation]}; page with limit/offset. "
            + _OPERATION_SHAPE
            + " Next: get_operation for one operation's details, retry_operation for a failed one."
        ),
        view=OperationViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name=STATUS_TOOL,
        title="Get an operation",
        description=(
            "Get one operation by id with its phases, the current phase's message and, if it failed, the error "
            "and a hint. This is the status tool of every mutating tool: after a change returns an operation, "
            "call get_operation with its id every few seconds until status is succeeded, failed or cancelled. "
            + _OPERATION_SHAPE
        ),
        view=OperationViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="retry_operation",
        title="Retry an operation",
        description=(
            "Resume a failed or cancelled operation at the phase that stopped; phases that already succeeded "
            "are not redone. Use it after fixing the cause named in the operation's error hint. Needs the "
            "member role. Returns the operation (status pending or running). Next: poll get_operation until "
            "it is terminal. An operation that is not failed or cancelled answers a conflict error."
        ),
        view=OperationViewSet,
        action="retry",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="cancel_operation",
        title="Cancel an operation",
        description=(
            "Ask an active (pending or running) operation to stop after its current step. Cloud resources it "
            "already created stay and remain recorded on its phases. Repeatable; cancelling an operation that "
            "already ended answers a conflict error. Needs the member role. Returns the operation with "
            "cancel_requested true. Next: poll get_operation until status is cancelled; retry_operation resumes it."
        ),
        view=OperationViewSet,
        action="cancel",
        status_tool=STATUS_TOOL,
        destructive=True,  # it stops work part-way
        idempotent=True,  # repeatable: a second cancel answers the same operation
    ),
)
