"""ASGI entry point: Django (portal, REST, admin) plus the MCP streamable-HTTP app at /mcp/."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_app = get_asgi_application()

from agent_tools.asgi import mount_mcp  # noqa: E402

application = mount_mcp(django_app)
