"""The declarative tool registry: every MCP tool is one REST endpoint with a description for agents.

A tool names the DRF view (a viewset and one of its actions, or a plain APIView) it dispatches
into, and declares what only a person can say: its name, a description written for an agent, its
MCP annotations and, when it changes state, the tool that shows the change completing. Apps
register their tools in a ``tools.py`` module (discovered at startup like ``admin.py``)::

    from agent_tools.registry import Tool, register

    register(
        Tool(
            name="retry_operation",
            description="Resume a failed or cancelled operation ... Then poll get_operation.",
            view=OperationViewSet,
            action="retry",
            status_tool="get_operation",
        ),
    )

Everything else is read from the REST endpoint itself (``agent_tools.contract``): the HTTP method
and path parameters from the URLconf, the arguments from the view's ``extend_schema`` (request
serializer for the body, ``parameters=[QuerySerializer]`` for the query string; ``limit``/``offset``
for paginated lists; ``idempotency_key`` for tools that change state) and the answer's schema from
its response serializers. Authentication, team scoping, role checks, validation and error bodies
are the endpoint's own, because the call is dispatched into it (``agent_tools.dispatch``).

Annotations (MCP ``ToolAnnotations``), declared truthfully per tool:

- ``read_only``: the tool only reads (every GET, and a POST that only checks, such as preflight).
- ``destructive``: it deletes, replaces, stops or interrupts something.
- ``idempotent``: repeating the call with the same arguments answers success and changes nothing
  more (an explicit-diff PATCH, a delete that returns the deletion already running, a repeatable
  cancel). Every mutating tool also takes ``idempotency_key``, which makes any repeat safe.
- ``open_world``: it reaches beyond InstantStart's own, closed domain (the team's account and
  clusters). No tool does today.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from rest_framework.views import APIView

from instantstart.tenancy.roles import Role, role_at_least

from .contract import Contract, ContractError, bind, input_schema
from .descriptions import describe_arguments
from .routes import RouteError
from .schema import answer_schema

IDEMPOTENCY_ARGUMENT = "idempotency_key"
# Arguments that name priced capacity (instance type × count): a tool taking one may be held by the
# human gate (agent_tools.approvals). Tools whose cost is read from current state instead:
COST_ARGUMENTS = frozenset({"instance_groups", "instance_type"})
ESTIMATED_FROM_STATE = frozenset({"scale_instance_group"})
_IDEMPOTENCY_SCHEMA = {
    "type": "string",
    "maxLength": 200,
    "description": "Optional. Reuse the same key when retrying this call after a timeout: the "
    "first answer is returned again and nothing changes twice.",
}


class RegistryError(Exception):
    """A tool definition that cannot work: raised at startup (or when the tools are bound), never while serving."""


@dataclass(frozen=True)
class Tool:
    """One MCP tool mapped onto one REST endpoint.

    Attributes:
        name: the tool name agents call (snake_case, verb first: ``list_operations``).
        description: written for an agent: what it does, when to use it, what comes back and
            what to call next.
        view: the DRF viewset (with ``action``) or APIView (``action=None``) to dispatch into.
        action: the viewset action (``list``, ``retrieve``, ``retry``…); None for an APIView.
        status_tool: for tools that change state, the read tool an agent polls to see the change complete.
        title: a short human-readable name shown by MCP clients.
        read_only, destructive, idempotent, open_world: the MCP annotations (see the module docstring).
    """

    name: str
    description: str
    view: type[APIView]
    action: str | None = None
    status_tool: str | None = None
    title: str | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise RegistryError(f"Tool name {self.name!r} must be a snake_case identifier.")
        if self.action is not None and not callable(getattr(self.view, self.action, None)):
            raise RegistryError(f"{self.name}: {self.view.__name__} has no action {self.action!r}.")
        if not self.description.strip():
            raise RegistryError(f"{self.name}: a tool needs a description written for agents.")
        if self.mutating and not self.status_tool:
            raise RegistryError(f"{self.name}: a mutating tool names the status tool that tells completion.")
        if self.read_only and (self.destructive or self.idempotent):
            raise RegistryError(f"{self.name}: destructive and idempotent describe tools that change state.")

    @property
    def mutating(self) -> bool:
        """Changes state: takes ``idempotency_key`` and is hidden in read-only mode."""
        return not self.read_only

    @cached_property
    def contract(self) -> Contract:
        """The REST call behind the tool, read from its route and view (once, on first use)."""
        try:
            contract = bind(self)
        except (ContractError, RouteError) as exc:
            raise RegistryError(f"{self.name}: {exc}") from exc
        if contract.method == "get" and not self.read_only:
            raise RegistryError(f"{self.name}: a GET only reads; declare read_only=True.")
        return contract

    @property
    def path_params(self) -> dict[str, str]:
        return self.contract.path_params

    @property
    def unchecked_arguments(self) -> frozenset[str]:
        """Arguments no serializer of the endpoint validates: path ids, page bounds, the idempotency key."""
        extra = {"limit", "offset"} if self.contract.paginated else set()
        return frozenset({*self.contract.path_params, *extra, IDEMPOTENCY_ARGUMENT})

    @cached_property
    def required_role(self) -> str:
        """The team role the endpoint demands, read as its permission reads it (``required_role``)."""
        roles = getattr(self.view, "action_roles", {})
        if self.action in roles:
            return roles[self.action]
        if self.contract.method == "get":
            return Role.VIEWER
        return getattr(self.view, "default_write_role", Role.MEMBER)

    def allowed_for(self, role: str | None) -> bool:
        """Whether a caller with ``role`` may call the tool at all (None: unknown caller, all tools)."""
        return role is None or role_at_least(role, self.required_role)

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments."""
        schema = describe_arguments(input_schema(self.contract, self._path_description))
        if self.mutating:
            schema["properties"][IDEMPOTENCY_ARGUMENT] = dict(_IDEMPOTENCY_SCHEMA)
        return schema

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of a successful answer (from the endpoint's response serializers).

        A tool the human gate may hold (``gateable``) may also answer ``{"approval": …}``.
        """
        schema = self.contract.output_schema()
        if not self.gateable or schema is None:
            return schema
        from .serializers import ApprovalSerializer

        held = {
            "type": "object",
            "properties": {"approval": answer_schema(ApprovalSerializer())},
            "required": ["approval"],
        }
        answers = schema["anyOf"] if "anyOf" in schema else [schema]
        return {"type": "object", "anyOf": [*answers, held]}

    @cached_property
    def gateable(self) -> bool:
        """Changes state and says in its arguments what capacity it adds: the human gate may hold it."""
        if not self.mutating:
            return False
        return self.name in ESTIMATED_FROM_STATE or bool(COST_ARGUMENTS & self.input_schema["properties"].keys())

    def _object_name(self) -> str:
        queryset = getattr(self.view, "queryset", None)
        return str(queryset.model._meta.verbose_name) if queryset is not None else "object"

    def _path_description(self, argument: str) -> str:
        # Named after the argument (cluster_id → "The cluster's id."); the view's model only names a bare id.
        if argument.endswith("_id"):
            return f"The {argument[:-3].replace('_', ' ')}'s id."
        if argument == "id":
            return f"The {self._object_name()}'s id."
        return f"The {self._object_name()}'s {argument.replace('_', ' ')}."


class Registry:
    """The tools of this deployment, by name, in registration order."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, *tools: Tool) -> None:
        for tool in tools:
            if tool.name in self._tools:
                raise RegistryError(f"Tool {tool.name!r} is registered twice.")
            self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def visible(self, *, read_only: bool, role: str | None = None) -> list[Tool]:
        """The tools a server lists: only read-only ones in read-only mode, only those ``role`` may call."""
        return [tool for tool in self._tools.values() if not (read_only and tool.mutating) and tool.allowed_for(role)]

    def check(self) -> None:
        """Every status tool named by a mutating tool exists and is read-only."""
        for tool in self._tools.values():
            if tool.status_tool is None:
                continue
            status = self._tools.get(tool.status_tool)
            if status is None or status.mutating:
                raise RegistryError(f"{tool.name}: status tool {tool.status_tool!r} is not a registered read tool.")

    def bind(self) -> list[str]:
        """Read every tool's REST call now; the problems found, one line per tool (none: all bound)."""
        problems = []
        for tool in self._tools.values():
            try:
                tool.input_schema  # noqa: B018 - binding reads the route and the view's annotations
                tool.output_schema  # noqa: B018
            except Exception as exc:  # noqa: BLE001 - each broken tool is reported, not only the first
                problems.append(f"{tool.name}: {exc}")
        return problems

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())


registry = Registry()


def register(*tools: Tool) -> None:
    """Add tools to the deployment's registry (call it from an app's ``tools.py``)."""
    registry.register(*tools)
