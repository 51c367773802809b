"""MCP tools of the features app: each one is the features REST endpoint (same auth, scoping, errors)."""

from __future__ import annotations

from agent_tools.registry import Tool, register
from instantstart.operations.serializers import STATUS_TOOL

from .api.features import FeatureViewSet
from .catalog import CATALOG

_NAMES = ", ".join(f"{f.name} ({f.kind})" for f in CATALOG.values())

register(
    Tool(
        name="get_features",
        title="Get a cluster's features",
        description=(
            "List the managed features of a cluster and the dependencies they install, each as "
            "{name, title, kind (feature|dependency), enabled (the ACTUAL state, read from AWS and Kubernetes now), "
            "desired, status (enabled|disabled|enabling|disabling|failed|degraded), requires, required_by, settings, "
            "drift (desired and actual differ), detail, available}. Names: " + _NAMES + ". Call it before "
            "update_features, and before submitting a training job, inference endpoint, RayJob or ScaledObject, to "
            "see whether the operator it needs is on. A cluster id of another team is a not_found error."
        ),
        view=FeatureViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="update_features",
        title="Enable or disable features",
        description=(
            "Enable, disable or change features of a cluster. Send ONLY the features that change, each as true, "
            'false or {"enabled": bool, settings…}; e.g. {"training_operator": true} or {"tiered_checkpointing": '
            '{"enabled": true, "memory_percent": 20}} (memory_percent 0-100). Dependencies (cert_manager, '
            "pod_identity_agent, s3_csi, fsx_csi, metrics_server) are installed first automatically and removed "
            "on disable only when InstantStart installed them and nothing else needs them. Needs the admin role. "
            "When the cluster already matches, the answer is {changed: false, features} and nothing starts. "
            "Otherwise (HTTP 202) {changed: true, operation, plan: [{feature, action (enable|disable|update), "
            "steps}], summary}: poll get_operation with operation.id until succeeded, failed or cancelled "
            "(retry_operation resumes a failed one). Validation errors name the feature: an unknown feature or "
            "setting, a setting out of range, disabling a dependency another enabled feature requires (disable "
            "both in one call), or a feature the cluster cannot have (e.g. one that needs a HyperPod cluster)."
        ),
        view=FeatureViewSet,
        action="partial_update",
        status_tool=STATUS_TOOL,
        idempotent=True,
    ),
)
