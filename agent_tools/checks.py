"""A system check (``manage.py check``, ``migrate``, ``runserver``): every tool's REST call can be read.

Binding reads the URLconf, so it cannot run while apps load; this check runs it as soon as Django
is up and names each tool whose route or view annotations do not work.
"""

from __future__ import annotations

from django.core import checks


@checks.register()
def tools_bind(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    from .registry import registry

    return [checks.Error(problem, id="agent_tools.E001") for problem in registry.bind()]
