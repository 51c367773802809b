"""/mcp/ when Django itself gets the request: only under WSGI or `runserver`.

The MCP server lives in the ASGI application (agent_tools.asgi.mount_mcp answers /mcp before
Django sees it). A server that loads Django alone gets an explanation instead of a 404 page.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.urls import re_path
from django.views.decorators.csrf import csrf_exempt

from instantstart.api.errors import error_body

MESSAGE = (
    "The MCP server is served by the ASGI application (uvicorn instantstart.asgi:application) "
    "or over stdio (python manage.py mcp); this server runs Django without it."
)


@csrf_exempt
def mcp_unavailable(request):
    return JsonResponse(error_body("mcp_unavailable", MESSAGE), status=503)


urlpatterns = [re_path(r"^.*$", mcp_unavailable, name="mcp-unavailable")]
