"""OpenAPI: our authentication schemes, the region enum, and the error answers of every operation
(drf-spectacular extensions and a postprocessing hook named in settings)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension

from instantstart.tenancy.serializers import known_regions


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "instantstart.tenancy.authentication.BearerTokenAuthentication"
    name = "teamToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A team API token (`ist_…`) from the portal, `POST /api/v1/tokens/` or "
            "`manage.py create_token`.",
        }


class TeamSessionScheme(OpenApiAuthenticationExtension):
    target_class = "instantstart.tenancy.authentication.TeamSessionAuthentication"
    name = "portalSession"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "A portal login; acts for the team chosen in the portal.",
        }


class RegionFieldExtension(OpenApiSerializerFieldExtension):
    """A region is one of those where SageMaker HyperPod is offered: an enum in the schema, so
    clients (and generated tests) pick a real one."""

    target_class = "instantstart.tenancy.serializers.RegionField"

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "enum": REGIONS, "example": "us-west-2"}


# One named enum for every region field (settings: ENUM_NAME_OVERRIDES["RegionEnum"]).
REGIONS = known_regions()


# --- every operation documents its error answers -----------------------------------------------

ERROR_SCHEMA = {
    "type": "object",
    "description": "The one error shape of every API answer that is not a success.",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "example": "invalid"},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "additionalProperties": True,
                    "description": "Validation errors by field (nested objects and list items by index).",
                },
                "hint": {"type": "string", "description": "What to do about it."},
            },
        }
    },
}
ERRORS = {
    "400": "Invalid input: the fields name what is wrong; nothing changed.",
    "401": "No valid token or session.",
    "403": "The token's role may not do this.",
    "404": "No such object in the caller's team (another team's object is a 404 too).",
    "409": "The object's state does not allow this now (e.g. another operation runs).",
    "422": "An Idempotency-Key reused for another request.",
    "429": "Too many requests (failed authentications); retry after Retry-After seconds.",
    "502": "The team's AWS account or cluster refused a call (`cloud_refused`, naming the AWS/Kubernetes code).",
    "503": "The team's cloud is unavailable for now (`cloud_unavailable`: throttling, 5xx); try again.",
}
BODY_ERRORS = {
    "413": "The request body is larger than the limit.",
    "415": "The body is not JSON (application/json is the only type taken).",
}


def _allow_empty(parameter: dict) -> None:
    schema = parameter.get("schema", {})
    schema.pop("minLength", None)
    if "enum" in schema and "" not in schema["enum"]:
        schema["enum"] = [*schema["enum"], ""]
    elif "$ref" in schema:
        parameter["schema"] = {"anyOf": [{"$ref": schema.pop("$ref")}, {"type": "string", "enum": [""]}], **schema}


def add_error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: the Error component, and the error answers of each
    operation (400/401/403/404/409/422/429/502/503; 413/415 where a body is taken) next to its successes;
    request bodies closed to undeclared fields."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, component in schemas.items():
        # Request bodies refuse undeclared fields (instantstart.api.strict): the schema says so.
        if name.endswith("Request") and component.get("type") == "object" and "properties" in component:
            component.setdefault("additionalProperties", False)
    schemas["Error"] = ERROR_SCHEMA
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for methods in result.get("paths", {}).values():
        for method, operation in methods.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for parameter in operation.get("parameters", []):
                # An empty optional query parameter means "not given" (DRF's reading of a query
                # string): document that instead of a minimum length the server does not apply.
                if parameter.get("in") == "query" and not parameter.get("required"):
                    _allow_empty(parameter)
            errors = {**ERRORS, **(BODY_ERRORS if method in ("post", "put", "patch") else {})}
            for code, description in errors.items():
                operation["responses"].setdefault(code, {"description": description, "content": content})
    return result
