"""The MCP face: tools discovered from every project app's ``tools.py`` when Django starts."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from django.apps import AppConfig, apps
from django.conf import settings
from django.utils.module_loading import module_has_submodule

TOOLS_MODULE = "tools"


class AgentToolsConfig(AppConfig):
    name = "agent_tools"
    verbose_name = "Agent tools (MCP)"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system check that binds every tool

        discover_tools()


def discover_tools() -> None:
    """Import ``tools.py`` of each project app (like admin.py), then check the registry is whole.

    Only the project's own apps are searched: a third-party package's ``tools`` module is not ours.
    """
    from .registry import registry

    base = Path(settings.BASE_DIR).resolve()
    for app_config in apps.get_app_configs():
        path = Path(app_config.path).resolve()
        # A virtualenv may live inside the project directory: installed packages are not ours.
        if not path.is_relative_to(base) or {"site-packages", "dist-packages"} & set(path.parts):
            continue
        if module_has_submodule(app_config.module, TOOLS_MODULE):
            import_module(f"{app_config.name}.{TOOLS_MODULE}")
    registry.check()
