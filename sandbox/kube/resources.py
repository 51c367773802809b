"""The resource types the emulated API server serves: built-ins plus types that CRDs add.

One `ResourceType` per (group, version, plural). Objects are stored per group/plural (all
versions of a CRD share one store, as in etcd; we do not convert between versions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: list[str] = field(default_factory=list)
    singular: str = ""
    subresources: tuple[str, ...] = ()
    categories: list[str] = field(default_factory=list)
    verbs: list[str] = field(default_factory=lambda: list(ALL_VERBS))
    crd: str | None = None  # name of the CRD that serves it

    @property
    def gr(self) -> str:
        """Store key: group/plural ("" group for the core API)."""
        return f"{self.group}/{self.plural}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def discovery(self) -> list[dict[str, Any]]:
        """APIResource entries (the resource itself and its subresources) for discovery."""
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular or self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": self.verbs,
        }
        if self.short_names:
            main["shortNames"] = self.short_names
        if self.categories:
            main["categories"] = self.categories
        out = [main]
        for sub in self.subresources:
            if sub == "status":
                out.append(
                    {
                        "name": f"{self.plural}/status",
                        "singularName": "",
                        "namespaced": self.namespaced,
                        "kind": self.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub == "scale":
                out.append(
                    {
                        "name": f"{self.plural}/scale",
                        "singularName": "",
                        "namespaced": self.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub == "log":
                out.append(
                    {
                        "name": f"{self.plural}/log",
                        "singularName": "",
                        "namespaced": True,
                        "kind": "Pod",
                        "verbs": ["get"],
                    }
                )
            elif sub == "eviction":
                out.append(
                    {
                        "name": f"{self.plural}/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
        return out


def _rt(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short: list[str] | None = None,
    sub: tuple[str, ...] = (),
    categories: list[str] | None = None,
    verbs: list[str] | None = None,
) -> ResourceType:
    return ResourceType(
        group,
        version,
        plural,
        kind,
        namespaced,
        short or [],
        kind.lower(),
        sub,
        categories or [],
        verbs or list(ALL_VERBS),
    )


BUILTIN: list[ResourceType] = [
    _rt(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        ["ns"],
        ("status",),
        verbs=["create", "delete", "get", "list", "patch", "update", "watch"],
    ),
    _rt("", "v1", "nodes", "Node", False, ["no"], ("status",)),
    _rt("", "v1", "pods", "Pod", True, ["po"], ("status", "log", "eviction", "proxy"), ["all"]),
    _rt(
        "",
        "v1",
        "services",
        "Service",
        True,
        ["svc"],
        ("status", "proxy"),
        ["all"],
        verbs=["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    ),
    _rt("", "v1", "endpoints", "Endpoints", True, ["ep"]),
    _rt("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    _rt("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    _rt("", "v1", "secrets", "Secret", True),
    _rt("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
    _rt("", "v1", "events", "Event", True, ["ev"]),
    _rt("", "v1", "persistentvolumes", "PersistentVolume", False, ["pv"], ("status",)),
    _rt("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"], ("status",)),
    _rt("", "v1", "resourcequotas", "ResourceQuota", True, ["quota"], ("status",)),
    _rt("", "v1", "limitranges", "LimitRange", True, ["limits"]),
    _rt("apps", "v1", "deployments", "Deployment", True, ["deploy"], ("status", "scale"), ["all"]),
    _rt("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"], ("status", "scale"), ["all"]),
    _rt("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"], ("status",), ["all"]),
    _rt("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], ("status", "scale"), ["all"]),
    _rt("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _rt("batch", "v1", "jobs", "Job", True, [], ("status",), ["all"]),
    _rt("batch", "v1", "cronjobs", "CronJob", True, ["cj"], ("status",), ["all"]),
    _rt(
        "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ["hpa"], ("status",), ["all"]
    ),
    _rt("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _rt("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _rt("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _rt("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _rt(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ["crd", "crds"],
        ("status",),
    ),
    _rt("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ["sc"]),
    _rt("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _rt("coordination.k8s.io", "v1", "leases", "Lease", True),
    _rt("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"], ("status",)),
    _rt("networking.k8s.io", "v1", "ingresses", "Ingress", True, ["ing"], ("status",)),
    _rt("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ["netpol"]),
    _rt("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    _rt("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
    _rt(
        "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
    ),
]

# Preferred-version order of groups in /apis (core is separate under /api).
BUILTIN_GROUPS: list[str] = []
for _t in BUILTIN:
    if _t.group and _t.group not in BUILTIN_GROUPS:
        BUILTIN_GROUPS.append(_t.group)


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The ResourceTypes one CRD serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        subs: list[str] = []
        sr = v.get("subresources") or {}
        if "status" in sr:
            subs.append("status")
        if "scale" in sr:
            subs.append("scale")
        out.append(
            ResourceType(
                group=spec.get("group", ""),
                version=v["name"],
                plural=names.get("plural", ""),
                kind=names.get("kind", ""),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=list(names.get("shortNames") or []),
                singular=names.get("singular") or names.get("kind", "").lower(),
                subresources=tuple(subs),
                categories=list(names.get("categories") or []),
                crd=crd["metadata"]["name"],
            )
        )
    return out
