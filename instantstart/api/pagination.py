"""The pagination of every REST list (settings: DEFAULT_PAGINATION_CLASS): limit and offset are
bounded and checked — a limit or offset that is not a number in range is a 400 naming it, never a
silent default or a database overflow (a 500)."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 500
MAX_OFFSET = 1_000_000


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT
    max_offset = MAX_OFFSET

    def _bounded(self, request, name: str, minimum: int, maximum: int, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise exceptions.ValidationError({name: ["A whole number."]}) from None
        if not minimum <= value <= maximum:
            raise exceptions.ValidationError({name: [f"Between {minimum} and {maximum}."]})
        return value

    def get_limit(self, request) -> int:
        return self._bounded(request, self.limit_query_param, 1, self.max_limit, self.default_limit)

    def get_offset(self, request) -> int:
        return self._bounded(request, self.offset_query_param, 0, self.max_offset, 0)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": self.max_limit, "default": self.default_limit},
            self.offset_query_param: {"minimum": 0, "maximum": self.max_offset, "default": 0},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
