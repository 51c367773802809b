"""What a tool's REST call is, read from the code that serves it — never written twice.

From the route (``routes.route_for``): the HTTP method, the URL name and the path parameters.
From the view's ``@extend_schema`` (read through drf-spectacular, exactly as the OpenAPI document
at /api/v1/schema/ reads it): the request serializer (the JSON body), the query-parameter
serializers (``parameters=[…]``) and the response serializers (the answer). A tool therefore
cannot drift from its REST endpoint: change the view and the tool follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination

from .routes import route_for
from .schema import answer_schema, serializer_schema

if TYPE_CHECKING:
    from .registry import Tool

_BODY_METHODS = ("post", "put", "patch")
DEFAULT_MAX_LIMIT = 1000


class ContractError(Exception):
    """A tool whose REST call cannot be read from its view (reported when tools are bound)."""


@dataclass(frozen=True)
class Contract:
    """The REST call behind a tool: where it goes and what it takes and answers."""

    route_name: str
    method: str
    path_params: dict[str, str]  # tool argument → URL keyword, in path order
    body: serializers.Serializer | None  # the JSON body (methods with a body)
    query: serializers.Serializer | None  # query parameters (for a GET: all its arguments)
    paginated: bool
    answers: list[dict[str, Any]] = field(default_factory=list)  # schema of each 2xx answer with a body
    max_limit: int = 1000  # the largest page a paginated list serves (its paginator's max_limit)

    @property
    def query_arguments(self) -> frozenset[str]:
        return frozenset(_writable(self.query))

    @property
    def body_arguments(self) -> frozenset[str]:
        return frozenset(_writable(self.body))

    def output_schema(self) -> dict[str, Any] | None:
        """One object schema for every answer the call may give (None when it answers no body)."""
        if not self.answers:
            return None
        if len(self.answers) == 1:
            return self.answers[0]
        return {"type": "object", "anyOf": self.answers}


def bind(tool: Tool) -> Contract:
    """Read the contract of ``tool`` from its route and its view's schema annotations."""
    route = route_for(tool.view, tool.action)
    # The schema refers to its view weakly: generator and view stay referenced while it is read.
    generator = SchemaGenerator()
    view = _schema_view(generator, route)
    schema = view.schema
    body = _instance(schema.get_request_serializer()) if route.method in _BODY_METHODS else None
    query = _query_serializer(tool, schema.get_override_parameters())
    paginated = tool.action == "list" and issubclass(
        getattr(tool.view, "pagination_class", None) or object, LimitOffsetPagination
    )
    contract = Contract(
        route_name=route.name,
        method=route.method,
        path_params={_argument(tool.view, kwarg, route.kwargs): kwarg for kwarg in route.kwargs},
        body=body,
        query=query,
        paginated=paginated,
        answers=_answers(tool, schema, paginated),
        max_limit=_max_limit(tool.view),
    )
    clash = contract.query_arguments & (contract.body_arguments | set(contract.path_params))
    if clash:
        raise ContractError(f"{', '.join(sorted(clash))} both in the query and elsewhere.")
    return contract


def _max_limit(view: type) -> int:
    """The paginator's own bound, or a page size nobody needs more than when it sets none."""
    paginator = getattr(view, "pagination_class", None)
    return getattr(paginator, "max_limit", None) or DEFAULT_MAX_LIMIT


def _schema_view(generator: SchemaGenerator, route):
    """The view with its drf-spectacular schema, set up as the schema generator sets it up for the route."""
    method = route.method.upper()
    view = generator.create_view(route.callback, method)
    # What the generator's parse() and get_operation() set before the annotations are read.
    view.request = spectacular_settings.GET_MOCK_REQUEST(method, "/", view, None)
    view.schema.method = method
    return view


def _instance(serializer) -> serializers.Serializer | None:
    if serializer is None:
        return None
    return serializer() if isinstance(serializer, type) else serializer


def _query_serializer(tool: Tool, parameters: list) -> serializers.Serializer | None:
    found = []
    for parameter in parameters:
        if isinstance(parameter, OpenApiParameter):
            raise ContractError(
                f"describe {tool.view.__name__}'s query parameter {parameter.name!r} with a serializer in "
                "extend_schema(parameters=[…]), so REST and the tool validate it alike."
            )
        found.append(_instance(parameter))
    if len(found) > 1:
        raise ContractError("one query-parameter serializer per endpoint.")
    return found[0] if found else None


def _argument(view: type, kwarg: str, kwargs: tuple[str, ...]) -> str:
    """The tool argument for a URL keyword: cluster_pk → cluster_id; pk → id, or storage_id when nested."""
    if kwarg.endswith("_pk"):
        return kwarg[: -len("_pk")] + "_id"
    if kwarg == "pk":
        if len(kwargs) == 1:
            return "id"
        return f"{view.queryset.model._meta.model_name}_id"
    return kwarg


def _answers(tool: Tool, schema, paginated: bool) -> list[dict[str, Any]]:
    responses = schema.get_response_serializers()
    if not isinstance(responses, dict):
        responses = {200: responses}
    answers = []
    for status, response in responses.items():
        if not str(status).startswith("2"):
            continue
        if isinstance(response, OpenApiResponse):
            response = response.response
        serializer = _instance(response)
        if serializer is None:
            continue
        if not isinstance(serializer, serializers.BaseSerializer):
            raise ContractError(f"the {status} answer of {tool.view.__name__} is not a serializer.")
        item = answer_schema(serializer)
        if (
            tool.action == "list"
            and not isinstance(serializer, serializers.ListSerializer)
            and _is_own(tool, serializer)
        ):
            item = _page(item) if paginated else {"type": "array", "items": item}
        answers.append(item)
    return answers


def _is_own(tool: Tool, serializer: serializers.BaseSerializer) -> bool:
    """A list action answering its view's objects: a list (or page) of those, not an annotated answer.

    Its view's own serializer, or another serializer of the view's model (a list without details).
    """
    own = getattr(tool.view, "serializer_class", None)
    if own is not None and type(serializer) is own:
        return True
    queryset = getattr(tool.view, "queryset", None)
    meta = getattr(serializer, "Meta", None)
    return (
        isinstance(serializer, serializers.ModelSerializer)
        and queryset is not None
        and getattr(meta, "model", None) is queryset.model
    )


def _page(item: dict[str, Any]) -> dict[str, Any]:
    """LimitOffsetPagination's answer around a list of ``item``."""
    link = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    return {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "next": link,
            "previous": link,
            "results": {"type": "array", "items": item},
        },
        "required": ["count", "next", "previous", "results"],
    }


def _writable(serializer: serializers.Serializer | None) -> list[str]:
    if serializer is None:
        return []
    return [name for name, field in serializer.fields.items() if not field.read_only]


def input_schema(contract: Contract, path_description) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: path parameters, then the body's or the query's fields."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument in contract.path_params:
        properties[argument] = {"type": "string", "description": path_description(argument)}
        required.append(argument)
    for serializer in (contract.body, contract.query):
        if serializer is None:
            continue
        part = serializer_schema(serializer, partial=contract.method == "patch" and serializer is contract.body)
        properties.update(part["properties"])
        required.extend(part.get("required", []))
    if contract.paginated:
        properties["limit"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": contract.max_limit,
            "description": f"Page size (at most {contract.max_limit}).",
        }
        properties["offset"] = {"type": "integer", "minimum": 0, "description": "Items to skip."}
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema
