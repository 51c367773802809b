"""Explicit diff of a features request against the ACTUAL state: which features change, in which
order, and why a request cannot be done. Pure functions (the reads are done before, by readers/).

Enable: the requested features and every requirement not yet enabled, dependencies first.
Disable: the requested features first, then the dependencies InstantStart installed for them that
nothing else still needs (add-ons the cluster create installed always stay).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import CATALOG, NAMES, Feature, association_target, base_dependencies, closure, required_by, role_name
from .readers.state import ClusterState

HYPERPOD_REASON = "needs a HyperPod cluster"


@dataclass
class Plan:
    actions: list[dict] = field(default_factory=list)  # [{feature, action, steps}]
    targets: dict[str, bool] = field(default_factory=dict)  # the enabled state after the plan
    auto_installed: set[str] = field(default_factory=set)
    auto_removed: set[str] = field(default_factory=set)
    settings: dict[str, dict] = field(default_factory=dict)  # settings of the features the plan enables/updates

    @property
    def changed(self) -> bool:
        return bool(self.actions)

    def phase_names(self) -> list[str]:
        return [f"{a['action']}_{a['feature']}" for a in self.actions]


def healthy(state: ClusterState, name: str) -> bool:
    return state.features[name].status == "enabled"


def present(state: ClusterState, name: str) -> bool:
    """Anything of the feature exists (enabled, failed or half-removed)."""
    actual = state.features[name]
    return actual.enabled or actual.status != "disabled" or any(actual.pieces.values())


def unavailable_reason(cluster, f: Feature, state: ClusterState | None = None) -> str:
    """Why the feature cannot be enabled on this cluster ("" when it can)."""
    if f.hyperpod and not cluster.hyperpod_cluster_name:
        return HYPERPOD_REASON
    if f.name == "autoscaling":
        described = (state.hyperpod if state is not None else None) or {}
        if described.get("NodeRecovery") == "None":
            return "needs node recovery Automatic (this HyperPod cluster's is None)"
        on_demand = [g for g in cluster.instance_groups.all() if g.capacity_type == "on_demand"]
        if not on_demand:
            return (
                "needs an on-demand instance group: managed Karpenter scales HyperPod on-demand groups only "
                "(not Spot or training-plan capacity)"
            )
    return ""


def _effective_settings(f: Feature, state: ClusterState, records: dict, requested: dict) -> dict:
    settings = {s.name: s.default for s in f.settings}
    record = records.get(f.name)
    if record is not None:
        settings.update({k: v for k, v in (record.settings or {}).items() if k in settings})
    actual = state.features[f.name]
    if actual.enabled:
        settings.update({k: v for k, v in actual.settings.items() if v is not None})
    settings.update(requested)
    return settings


def resolve(cluster, state: ClusterState, records: dict, request: dict[str, dict]) -> tuple[Plan, dict[str, list[str]]]:
    """The plan for ``request`` ({name: {"enabled": bool | None, "settings": {...}}}), or field errors."""
    errors: dict[str, list[str]] = {}
    targets = {name: state.features[name].enabled for name in NAMES}
    plan = Plan()
    enabling = [n for n, r in request.items() if r.get("enabled") is True]
    disabling = [n for n, r in request.items() if r.get("enabled") is False]
    for name in enabling:
        reason = unavailable_reason(cluster, CATALOG[name], state)
        if reason == HYPERPOD_REASON:
            errors.setdefault(name, []).append(f"{CATALOG[name].title} {reason}; this cluster has none.")
        elif reason:
            errors.setdefault(name, []).append(f"{CATALOG[name].title} cannot be enabled: it {reason}.")
    for name in request:
        if request[name].get("enabled") is None:
            targets_on = targets[name]
            if not targets_on and request[name].get("settings"):
                errors.setdefault(name, []).append(
                    f"{name} is not enabled: send enabled true with its settings to enable it."
                )
        else:
            targets[name] = request[name]["enabled"]
    for name in enabling:
        for dep in closure(name)[:-1]:
            if dep in disabling:
                errors.setdefault(dep, []).append(
                    f"{dep} is required by {name}, which this request enables: keep {dep} or leave {name} off."
                )
            elif not targets[dep]:
                targets[dep] = True
                plan.auto_installed.add(dep)
    for name in disabling:
        for user in required_by(name):
            if targets.get(user):
                errors.setdefault(name, []).append(
                    f"{name} is required by {user}, which stays enabled: disable {user} in the same request "
                    f"(or keep {name})."
                )
    if errors:
        return plan, errors

    # Dependencies InstantStart installed that nothing enabled needs any longer go too.
    base = base_dependencies(cluster)
    for name in reversed(NAMES):
        f = CATALOG[name]
        if f.kind != "dependency" or not targets[name] or name in base or name in request:
            continue
        record = records.get(name)
        if record is None or not record.installed:
            continue
        freed = any(targets_was and not targets[u] for u, targets_was in _users(name, state))
        if freed and not any(targets[u] for u in required_by(name)):
            targets[name] = False
            plan.auto_removed.add(name)

    plan.targets = targets
    touched = set(request) | plan.auto_installed | plan.auto_removed
    for name in reversed(NAMES):  # disable: dependents first
        if name in touched and not targets[name] and present(state, name):
            plan.actions.append({"feature": name, "action": "disable", "steps": _steps(cluster, name, "disable")})
    for name in NAMES:  # enable: dependencies first
        if name not in touched or not targets[name]:
            continue
        f = CATALOG[name]
        settings = _effective_settings(f, state, records, (request.get(name) or {}).get("settings") or {})
        if f.settings:
            plan.settings[name] = settings
        if not healthy(state, name):
            plan.actions.append({"feature": name, "action": "enable", "steps": _steps(cluster, name, "enable")})
        elif f.settings and any(state.features[name].settings.get(k) != v for k, v in settings.items()):
            plan.actions.append(
                {"feature": name, "action": "update", "steps": _steps(cluster, name, "update", settings)}
            )
    return plan, errors


def _users(name: str, state: ClusterState):
    """(feature requiring ``name``, whether it is enabled now)."""
    return [(u, state.features[u].enabled) for u in required_by(name)]


def _steps(cluster, name: str, action: str, settings: dict | None = None) -> list[str]:
    """What the action does, in the order the phase does it (shown in the plan preview)."""
    f = CATALOG[name]
    identity: list[str] = []
    if f.identity is not None:
        identity.append(
            f"IAM role {role_name(cluster, f)} trusted by {', '.join(f.identity.trust)} "
            f"with {', '.join(f.identity.actions[:3])}{'…' if len(f.identity.actions) > 3 else ''}"
        )
        target = association_target(cluster, f)
        if target is not None:
            identity.append(f"pod identity association {target[0]}/{target[1]} → that role")
    if f.addon:
        install = [f"EKS add-on {f.addon}"]
    elif f.helm:
        install = [f"{f.title}: namespace, CRDs, RBAC and operator Deployment"]
    elif name == "autoscaling":
        install = [
            "HyperPod AutoScaling Mode Enable (Karpenter) with that role as ClusterRole, continuous provisioning"
        ]
    elif name == "tiered_checkpointing":
        pct = (settings or {}).get("memory_percent")
        install = [
            "HyperPod TieredStorageConfig Mode Enable" + (f", {pct}% of instance memory" if pct is not None else "")
        ]
    else:
        install = []
    if action == "enable":
        return [f"create {s}" for s in identity] + [f"install {s}" for s in install]
    if action == "disable":
        return [f"remove {s}" for s in install] + [f"delete {s}" for s in reversed(identity)]
    return [f"update {s}" for s in install]


def describe(plan: Plan) -> str:
    """One sentence for the preview: "will install cert-manager, then the HyperPod training operator"."""
    verbs = {"enable": "install", "disable": "remove", "update": "change"}
    parts = [f"{verbs[a['action']]} {CATALOG[a['feature']].title}" for a in plan.actions]
    return "Will " + ", then ".join(parts) + "." if parts else "Nothing to change."
