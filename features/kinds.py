"""The one operation kind of the features app: `features.update`.

Its steps cover every (action, feature) pair; an operation stores only the phases its plan needs,
in plan order (dependencies first on enable, dependents first on disable).
"""

from __future__ import annotations

from instantstart.operations.registry import OperationKind, Step, register
from instantstart.tenancy.roles import Role

from .catalog import CATALOG
from .steps import groups
from .steps.actions import disable, enable, step_name, update

_TITLES = {"enable": "Install {title}", "disable": "Remove {title}", "update": "Change the settings of {title}"}
_BUILDERS = {"enable": enable, "disable": disable, "update": update}

FEATURES_UPDATE = register(
    OperationKind(
        name="features.update",
        title="Update features",
        role=Role.ADMIN,
        steps=tuple(
            Step(step_name(action, f.name), _BUILDERS[action](f.name), title=_TITLES[action].format(title=f.title))
            for f in CATALOG.values()
            for action in ("enable", "disable", "update")
            if action != "update" or f.settings
        ),
    )
)

GROUP_AUTOSCALING = register(
    OperationKind(
        name="instance_group.autoscaling",
        title="Set instance group autoscaling",
        role=Role.ADMIN,
        steps=(
            Step("minimum", groups.minimum, title="The group's minimum in HyperPod (MinInstanceCount)"),
            Step("pool", groups.pool, title="HyperpodNodeClass and NodePool (maximum nodes)"),
        ),
    )
)
