"""ASGI entry point: Django (portal, REST, admin) plus the MCP streamable-HTTP app at /mcp/, and the
websockets (Channels: session cookie or Bearer token) of the apps that stream."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agent_tools.asgi import mount_mcp  # noqa: E402
from training.routing import websocket_urlpatterns as training_sockets  # noqa: E402

application = mount_mcp(
    ProtocolTypeRouter({"http": django_app, "websocket": AuthMiddlewareStack(URLRouter([*training_sockets]))})
)
