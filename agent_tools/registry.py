"""The declarative tool registry: every MCP tool is one REST endpoint with a description for agents.

A tool names the DRF view (a viewset and one of its actions, or a plain APIView) it dispatches
into; authentication, team scoping, role checks, validation and error bodies are therefore the
REST endpoint's own. Apps register their tools in a ``tools.py`` module (discovered at startup
like ``admin.py``)::

    from agent_tools.registry import Tool, register

    register(
        Tool(
            name="retry_operation",
            description="Resume a failed or cancelled operation ... Then poll get_operation.",
            view=OperationViewSet,
            action="retry",
            method="post",
            status_tool="get_operation",
        ),
    )

The input schema is derived: path parameters (``id`` for a detail action), the fields of
``input`` (a filter serializer for list tools, the request serializer for writes; for
``create``/``update``/``partial_update`` the viewset's own serializer by default), the fields of
``query`` (query parameters of a tool that is not a GET, such as ``force`` of a DELETE), ``limit``/
``offset`` for paginated lists, and ``idempotency_key`` for mutating tools.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.views import APIView

from .schema import serializer_schema

# Actions of DRF's model mixins that address one object (``{lookup}`` in the URL).
_DETAIL_ACTIONS = frozenset({"retrieve", "update", "partial_update", "destroy"})
# Actions whose request body is the viewset's own serializer unless a tool names another one.
_BODY_ACTIONS = frozenset({"create", "update", "partial_update"})

IDEMPOTENCY_ARGUMENT = "idempotency_key"


class RegistryError(Exception):
    """A tool definition that cannot work: raised at startup, never while serving."""


@dataclass(frozen=True)
class Tool:
    """One MCP tool mapped onto one REST endpoint.

    Attributes:
        name: the tool name agents call (snake_case, verb first: ``list_operations``).
        description: written for an agent: what it does, when to use it, what comes back and
            what to call next.
        view: the DRF viewset (with ``action``) or APIView (``action=None``) to dispatch into.
        action: the viewset action (``list``, ``retrieve``, ``retry``…); None for an APIView.
        method: the HTTP method of the REST call (``get``, ``post``, ``patch``, ``delete``).
        input: the serializer whose fields are the tool's arguments (query parameters for a GET,
            the JSON body otherwise). Defaults to the viewset's serializer for create/update.
        query: for a tool that is not a GET, the serializer of the endpoint's query parameters
            (``force`` of a DELETE): its fields are tool arguments sent in the query string, not
            in the body. A GET tool's ``input`` already travels as query parameters.
        path_params: tool argument → URL keyword. Defaults to ``{"id": <lookup kwarg>}`` for a
            detail action and to nothing otherwise.
        mutating: whether the tool changes state. Defaults to ``method != "get"``. Mutating tools
            take ``idempotency_key`` and are hidden in read-only mode.
        status_tool: for mutating tools, the tool an agent polls to see the change complete.
        title: a short human-readable name shown by MCP clients.
        destructive: the tool may delete or stop things (an MCP annotation for clients).
    """

    name: str
    description: str
    view: type[APIView]
    action: str | None = None
    method: str = "get"
    input: type[serializers.Serializer] | None = None
    query: type[serializers.Serializer] | None = None
    path_params: Mapping[str, str] | None = None
    mutating: bool | None = None
    status_tool: str | None = None
    title: str | None = None
    destructive: bool = False
    _schema: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", self.method.lower())
        if self.mutating is None:
            object.__setattr__(self, "mutating", self.method != "get")
        if self.path_params is None:
            object.__setattr__(self, "path_params", self._default_path_params())
        if self.input is None and self.action in _BODY_ACTIONS:
            object.__setattr__(self, "input", getattr(self.view, "serializer_class", None))
        self._validate()

    @property
    def query_arguments(self) -> frozenset[str]:
        """The arguments sent as query parameters of a tool that is not a GET (the fields of ``query``)."""
        return frozenset(_writable_fields(self.query)) if self.query is not None else frozenset()

    @property
    def is_list(self) -> bool:
        return self.action == "list"

    @property
    def is_detail(self) -> bool:
        if self.action is None:
            return False
        handler = getattr(self.view, self.action, None)
        return bool(getattr(handler, "detail", self.action in _DETAIL_ACTIONS))

    def _default_path_params(self) -> dict[str, str]:
        if not self.is_detail:
            return {}
        lookup = getattr(self.view, "lookup_url_kwarg", None) or getattr(self.view, "lookup_field", "pk")
        return {"id": lookup}

    def _validate(self) -> None:
        if not self.name.isidentifier():
            raise RegistryError(f"Tool name {self.name!r} must be a snake_case identifier.")
        if self.action is not None and not callable(getattr(self.view, self.action, None)):
            raise RegistryError(f"{self.name}: {self.view.__name__} has no action {self.action!r}.")
        if self.mutating and not self.status_tool:
            raise RegistryError(f"{self.name}: a mutating tool names the status tool that tells completion.")
        if not self.description.strip():
            raise RegistryError(f"{self.name}: a tool needs a description written for agents.")
        if self.query is not None:
            if self.method == "get":
                raise RegistryError(f"{self.name}: a GET tool's input is its query parameters; use input, not query.")
            clash = self.query_arguments & (set(_writable_fields(self.input)) | set(self.path_params or {}))
            if clash:
                raise RegistryError(f"{self.name}: {', '.join(sorted(clash))} both in the query and elsewhere.")

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

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments (built once)."""
        if not self._schema:
            self._schema.update(self._build_schema())
        return self._schema

    def _build_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for argument in self.path_params or {}:
            properties[argument] = {"type": "string", "description": self._path_description(argument)}
            required.append(argument)
        if self.input is not None:
            body = serializer_schema(self.input(), partial=self.action == "partial_update")
            properties.update(body["properties"])
            required.extend(body.get("required", []))
        if self.query is not None:
            query = serializer_schema(self.query())
            properties.update(query["properties"])
            required.extend(query.get("required", []))
        if self.is_list and issubclass(getattr(self.view, "pagination_class", None) or object, LimitOffsetPagination):
            properties["limit"] = {"type": "integer", "minimum": 1, "description": "Page size."}
            properties["offset"] = {"type": "integer", "minimum": 0, "description": "Items to skip."}
        if self.mutating:
            properties[IDEMPOTENCY_ARGUMENT] = {
                "type": "string",
                "maxLength": 200,
                "description": "Optional. Reuse the same key when retrying this call after a timeout: the "
                "first answer is returned again and nothing changes twice.",
            }
        schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            schema["required"] = required
        return schema


def _writable_fields(serializer: type[serializers.Serializer] | None) -> list[str]:
    if serializer is None:
        return []
    return [name for name, field in serializer().fields.items() if not field.read_only]


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

    def visible(self, *, read_only: bool) -> list[Tool]:
        """The tools a server lists: all of them, or only the read-only ones."""
        return [tool for tool in self._tools.values() if not (read_only and tool.mutating)]

    def check(self) -> None:
        """Every status tool named by a mutating tool exists and is read-only."""
        for tool in self._tools.values():
            if tool.status_tool is None:
                continue
            status = self._tools.get(tool.status_tool)
            if status is None or status.mutating:
                raise RegistryError(f"{tool.name}: status tool {tool.status_tool!r} is not a registered read tool.")

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())


registry = Registry()


def register(*tools: Tool) -> None:
    """Add tools to the deployment's registry (call it from an app's ``tools.py``)."""
    registry.register(*tools)
