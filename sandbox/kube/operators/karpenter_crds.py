"""The CRDs HyperPod's managed Karpenter serves while the cluster's AutoScaling is InService:
`nodepools.karpenter.sh`, `nodeclaims.karpenter.sh` (v1) and
`hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com` (v1).

Written after the upstream kubernetes-sigs/karpenter v1.6 CRDs (names, scope, printer columns,
types, enums, patterns, required fields, defaults), narrowed as HyperPod narrows them: a NodePool's
`spec.template.spec` takes only expireAfter, nodeClassRef, requirements, taints and startupTaints.
The CEL rules upstream carries are not evaluated by the sandbox (none of its CRDs are); the rules a
user most often trips over are checked by the Karpenter controller instead (see controllers/karpenter.py).
The HyperpodNodeClass has no public CRD file: `spec.instanceGroups` (1-10 HyperPod instance group
names) as documented, `status.conditions` with Ready.
"""

from __future__ import annotations

from typing import Any

from .crds import crd, root_schema

Obj = dict[str, Any]

KARPENTER_GROUP = "karpenter.sh"
NODECLASS_GROUP = "karpenter.sagemaker.amazonaws.com"
NODEPOOL_GR = f"{KARPENTER_GROUP}/nodepools"
NODECLAIM_GR = f"{KARPENTER_GROUP}/nodeclaims"
NODECLASS_GR = f"{NODECLASS_GROUP}/hyperpodnodeclasses"

_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
_RESOURCE_LIST = {"type": "object", "additionalProperties": _QUANTITY}
_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_LABEL_VALUE = {"type": "string", "maxLength": 63, "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}
_DURATION = {"type": "string", "pattern": r"^(([0-9]+(s|m|h))+|Never)$"}
_TAINT = {
    "type": "object",
    "required": ["effect", "key"],
    "properties": {
        "effect": {"type": "string", "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
        "key": {"type": "string", "minLength": 1, "pattern": _KEY},
        "timeAdded": {"type": "string", "format": "date-time"},
        "value": {"type": "string", "pattern": _KEY},
    },
}
_REQUIREMENTS = {
    "type": "array",
    "maxItems": 100,
    "items": {
        "type": "object",
        "required": ["key", "operator"],
        "properties": {
            "key": {"type": "string", "maxLength": 316, "pattern": _KEY},
            "minValues": {"type": "integer", "minimum": 1, "maximum": 50},
            "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]},
            "values": {"type": "array", "items": dict(_LABEL_VALUE)},
        },
    },
}
_NODECLASS_REF = {
    "type": "object",
    "required": ["group", "kind", "name"],
    "properties": {
        "group": {"type": "string", "pattern": r"^[^/]*$", "minLength": 1},
        "kind": {"type": "string", "minLength": 1},
        "name": {"type": "string", "minLength": 1},
    },
}
_CONDITIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["lastTransitionTime", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": {"type": "string", "maxLength": 1024, "pattern": r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string", "maxLength": 316},
        },
    },
}
_NODEPOOL_SCHEMA: Obj = root_schema(
    required=("spec",),
    spec={
        "type": "object",
        "required": ["template"],
        "properties": {
            "disruption": {
                "type": "object",
                "default": {"consolidateAfter": "0s"},
                "required": ["consolidateAfter"],
                "properties": {
                    "budgets": {
                        "type": "array",
                        "maxItems": 50,
                        "default": [{"nodes": "10%"}],
                        "items": {
                            "type": "object",
                            "required": ["nodes"],
                            "properties": {
                                "duration": {
                                    "type": "string",
                                    "pattern": r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$",
                                },
                                "nodes": {
                                    "type": "string",
                                    "default": "10%",
                                    "pattern": r"^((100|[0-9]{1,2})%|[0-9]+)$",
                                },
                                "reasons": {
                                    "type": "array",
                                    "items": {"type": "string", "enum": ["Underutilized", "Empty", "Drifted"]},
                                },
                                "schedule": {"type": "string"},
                            },
                        },
                    },
                    "consolidateAfter": dict(_DURATION, default="0s"),
                    "consolidationPolicy": {
                        "type": "string",
                        "default": "WhenEmptyOrUnderutilized",
                        "enum": ["WhenEmpty", "WhenEmptyOrUnderutilized"],
                    },
                },
            },
            "limits": _RESOURCE_LIST,
            "template": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {
                            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                            "labels": {
                                "type": "object",
                                "maxProperties": 100,
                                "additionalProperties": dict(_LABEL_VALUE),
                            },
                        },
                    },
                    "spec": {
                        "type": "object",
                        "required": ["nodeClassRef", "requirements"],
                        "properties": {
                            "expireAfter": dict(_DURATION, default="720h"),
                            "nodeClassRef": _NODECLASS_REF,
                            "requirements": _REQUIREMENTS,
                            "startupTaints": {"type": "array", "items": _TAINT},
                            "taints": {"type": "array", "items": _TAINT},
                        },
                    },
                },
            },
            "weight": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 100},
        },
    },
    status={
        "type": "object",
        "properties": {
            "conditions": _CONDITIONS,
            "nodeClassObservedGeneration": {"type": "integer", "format": "int64"},
            "nodes": {"type": "integer", "format": "int64"},
            "resources": _RESOURCE_LIST,
        },
    },
)
_NODECLAIM_SCHEMA: Obj = root_schema(
    required=("spec",),
    spec={
        "type": "object",
        "required": ["nodeClassRef", "requirements"],
        "properties": {
            "expireAfter": dict(_DURATION, default="720h"),
            "nodeClassRef": _NODECLASS_REF,
            "requirements": _REQUIREMENTS,
            "resources": {"type": "object", "properties": {"requests": _RESOURCE_LIST}},
            "startupTaints": {"type": "array", "items": _TAINT},
            "taints": {"type": "array", "items": _TAINT},
        },
    },
    status={
        "type": "object",
        "properties": {
            "allocatable": _RESOURCE_LIST,
            "capacity": _RESOURCE_LIST,
            "conditions": _CONDITIONS,
            "imageID": {"type": "string"},
            "lastPodEventTime": {"type": "string", "format": "date-time"},
            "nodeName": {"type": "string"},
            "providerID": {"type": "string"},
        },
    },
)
_NODECLASS_SCHEMA: Obj = root_schema(
    required=("spec",),
    spec={
        "type": "object",
        "required": ["instanceGroups"],
        "properties": {
            "instanceGroups": {
                "type": "array",
                "minItems": 1,
                "maxItems": 10,
                "items": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 63,
                    "pattern": r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$",
                },
            }
        },
    },
    status={"type": "object", "properties": {"conditions": _CONDITIONS}},
)


def _col(name: str, path: str, type_: str = "string", priority: int = 0) -> Obj:
    col: Obj = {"name": name, "jsonPath": path, "type": type_}
    if priority:
        col["priority"] = priority
    return col


def _crd(group: str, kind: str, plural: str, schema: Obj, columns: list[Obj]) -> Obj:
    return crd(group, kind, plural, schema, "Cluster", columns, categories=["karpenter"])


_READY = '.status.conditions[?(@.type=="Ready")].status'
KARPENTER_CRDS: list[Obj] = [
    _crd(
        KARPENTER_GROUP,
        "NodePool",
        "nodepools",
        _NODEPOOL_SCHEMA,
        [
            _col("NodeClass", ".spec.template.spec.nodeClassRef.name"),
            _col("Nodes", ".status.nodes"),
            _col("Ready", _READY),
            _col("Age", ".metadata.creationTimestamp", "date"),
            _col("Weight", ".spec.weight", "integer", 1),
            _col("CPU", ".status.resources.cpu", priority=1),
            _col("Memory", ".status.resources.memory", priority=1),
        ],
    ),
    _crd(
        KARPENTER_GROUP,
        "NodeClaim",
        "nodeclaims",
        _NODECLAIM_SCHEMA,
        [
            _col("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
            _col("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
            _col("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
            _col("Node", ".status.nodeName"),
            _col("Ready", _READY),
            _col("Age", ".metadata.creationTimestamp", "date"),
            _col("ID", ".status.providerID", priority=1),
            _col("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
            _col("NodeClass", ".spec.nodeClassRef.name", priority=1),
        ],
    ),
    _crd(
        NODECLASS_GROUP,
        "HyperpodNodeClass",
        "hyperpodnodeclasses",
        _NODECLASS_SCHEMA,
        [_col("Ready", _READY), _col("Age", ".metadata.creationTimestamp", "date")],
    ),
]
