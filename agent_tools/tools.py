"""The core's tools: who am I, the team's operations, audit, settings, members and tokens.

Domain apps register their own tools in their ``tools.py`` (clusters/tools.py, training/tools.py…);
these live here because the core (instantstart/) has no MCP knowledge of its own.
"""

from __future__ import annotations

from instantstart.operations.api import AuditEventViewSet, OperationViewSet
from instantstart.operations.serializers import STATUS_TOOL
from instantstart.tenancy.api import ApiTokenViewSet, MembershipViewSet, TeamSettingsViewSet, WhoAmIView

from .api import ApprovalViewSet
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

_AUDIT_SHAPE = (
    "An audit event is {id, created_at, actor (username), token, via (ui|api|mcp|admin|system), action (such as "
    "cluster.create or approval.approve), target_type, target_id, target_repr, summary, operation}."
)
_TOKEN_SHAPE = (
    "A token is {id, name, prefix, username, role, agent, created_at, expires_at, revoked_at, last_used_at, "
    "is_active}; its secret is never shown again after creation."
)
_MEMBER_SHAPE = "A member is {id, username, role (viewer|member|admin), created_at}."
_TEAM_SHAPE = (
    "The team is {id, slug, name, cloud, aws_role_arn, aws_external_id_set, default_region, sandbox_account_id, "
    "agent_approval_above, price_overrides, created_at}."
)

register(
    Tool(
        name="list_audit_events",
        title="List audit events",
        description=(
            "List the team's audit trail, newest first: every change made on any face (portal, REST, MCP, admin), "
            "who made it, with which token, and the operation it started. Read-only; needs the admin role. Use it "
            "to answer 'who changed this' or to see who approved an agent's request. Returns {count, next, "
            "previous, results: [event]}; page with limit/offset. " + _AUDIT_SHAPE
        ),
        view=AuditEventViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_audit_event",
        title="Get an audit event",
        description="Get one audit event by id. Read-only; needs the admin role. " + _AUDIT_SHAPE,
        view=AuditEventViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="get_team_settings",
        title="Get the team's settings",
        description=(
            "Show the team's settings: its cloud (sandbox or aws), the AWS role InstantStart assumes, whether an "
            "external ID is set, the default region, the agent approval threshold (agent_approval_above, USD per "
            "hour; null: off) and the team's price overrides. Read-only. " + _TEAM_SHAPE
        ),
        view=TeamSettingsViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="update_team_settings",
        title="Change the team's settings",
        description=(
            "Change some of the team's settings (only the fields given): name, aws_role_arn, aws_external_id, "
            "default_region. Needs the admin role; applied at once, no operation. Settings equal to the current "
            "ones change nothing. Returns the team. " + _TEAM_SHAPE + " Next: get_team_settings."
        ),
        view=TeamSettingsViewSet,
        action="partial_update",
        status_tool="get_team_settings",
        idempotent=True,
    ),
    Tool(
        name="list_members",
        title="List team members",
        description=(
            "List the team's members and their roles. Read-only. Returns {count, next, previous, results: "
            "[member]}. " + _MEMBER_SHAPE
        ),
        view=MembershipViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_member",
        title="Get a team member",
        description="Get one membership by id. Read-only. " + _MEMBER_SHAPE,
        view=MembershipViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="add_member",
        title="Add a team member",
        description=(
            "Add an existing user to the team with a role (viewer, member or admin). Needs the admin role; applied "
            "at once. Only when the user asked for it. Returns the member. " + _MEMBER_SHAPE + " Next: list_members."
        ),
        view=MembershipViewSet,
        action="create",
        status_tool="list_members",
    ),
    Tool(
        name="change_member_role",
        title="Change a member's role",
        description=(
            "Change a member's role (viewer, member or admin). Needs the admin role; applied at once; the same role "
            "again changes nothing. The last admin cannot be demoted. Returns the member. " + _MEMBER_SHAPE
        ),
        view=MembershipViewSet,
        action="partial_update",
        status_tool="get_member",
        idempotent=True,
    ),
    Tool(
        name="remove_member",
        title="Remove a team member",
        description=(
            "Remove a member from the team: the user loses access and the tokens they hold for the team stop "
            "working. Needs the admin role. Only when the user asked for it. Answers with no body. Next: list_members."
        ),
        view=MembershipViewSet,
        action="destroy",
        status_tool="list_members",
        destructive=True,
    ),
    Tool(
        name="list_tokens",
        title="List API tokens",
        description=(
            "List the team's API tokens (no secrets). Read-only; needs the admin role. Returns {count, next, "
            "previous, results: [token]}. " + _TOKEN_SHAPE
        ),
        view=ApiTokenViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_token",
        title="Get an API token",
        description="Get one API token by id (no secret). Read-only; needs the admin role. " + _TOKEN_SHAPE,
        view=ApiTokenViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="revoke_token",
        title="Revoke an API token",
        description=(
            "Revoke an API token now: every call with it is refused from then on. Needs the admin role. "
            "Repeatable. Only when the user asked for it (revoking your own token ends this session). Returns the "
            "token with revoked_at set. " + _TOKEN_SHAPE + " Next: get_token."
        ),
        view=ApiTokenViewSet,
        action="revoke",
        status_tool="get_token",
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="delete_token",
        title="Delete an API token",
        description=(
            "Delete an API token: it stops working at once. Needs the admin role. Only when the user asked for it. "
            "Next: list_tokens."
        ),
        view=ApiTokenViewSet,
        action="destroy",
        status_tool="list_tokens",
        destructive=True,
    ),
)

_APPROVAL_SHAPE = (
    "An approval is {id, status (pending|approved|rejected), tool, arguments, estimate {usd_per_hour, threshold, "
    "instances {instance type: count}, unknown_types, source}, requested_by, token, created_at, decided_by, "
    "decided_at, reason, executed_at, result_status, operation {id, kind, status} once the approved change ran}."
)

register(
    Tool(
        name="list_approvals",
        title="List approvals",
        description=(
            "List the changes agents asked for that wait (or waited) for a team admin because their estimated cost "
            "is above the team's agent_approval_above, newest first, optionally by status. Read-only. Returns "
            "{count, next, previous, results: [approval]}. " + _APPROVAL_SHAPE + " Tell the user a pending one "
            "needs a team admin's approval in the portal (Approvals); wait on it with wait_for_operation."
        ),
        view=ApprovalViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_approval",
        title="Get an approval",
        description=(
            "Get one approval by id. Read-only. A mutating tool answers {approval: {id, status: pending, estimate}} "
            "instead of starting when the change costs more per hour than the team allows agents; then call "
            "wait_for_operation with the approval's id: once a team admin approves, that wait starts the change and "
            "answers its operation; a rejected approval started nothing. " + _APPROVAL_SHAPE
        ),
        view=ApprovalViewSet,
        action="retrieve",
        read_only=True,
    ),
)
