"""autoScalingSpec → the KEDA ScaledObject on the endpoint's Deployment."""

from __future__ import annotations

from typing import Any

from ...store import Cluster
from ..base import owner_ref
from .objects import SO_GR, delete, ensure, labels

Obj = dict[str, Any]


def scaled_object(c: Cluster, iec: Obj, spec: Obj) -> str:
    """autoScalingSpec → ScaledObject; returns a problem message ("" when fine)."""
    name, ns = iec["metadata"]["name"], iec["metadata"]["namespace"]
    so_name = f"{name}-scaled-object"
    auto = spec.get("autoScalingSpec")
    if not auto:
        delete(c, SO_GR, ns, so_name)
        return ""
    if c.type_by_gr(SO_GR) is None:
        return "autoScalingSpec needs KEDA: the ScaledObject CRD (keda.sh/v1alpha1) is not installed"
    triggers = []
    proms = list(auto.get("prometheusTriggerList") or []) or (
        [auto["prometheusTrigger"]] if auto.get("prometheusTrigger") else []
    )
    for t in proms:
        md = {
            "serverAddress": str(t.get("serverAddress", "")),
            "query": str(t.get("query", "")),
            "threshold": str(t.get("targetValue", "")),
            "activationThreshold": str(t.get("activationTargetValue", 0)),
        }
        if t.get("namespace"):
            md["namespace"] = t["namespace"]
        if t.get("customHeaders"):
            md["customHeaders"] = t["customHeaders"]
        trig: Obj = {
            "type": "prometheus",
            "metadata": md,
            "metricType": "Value" if t.get("metricType") == "Value" else "AverageValue",
        }
        if t.get("name"):
            trig["name"] = t["name"]
        triggers.append(trig)
    cws = list(auto.get("cloudWatchTriggerList") or []) or (
        [auto["cloudWatchTrigger"]] if auto.get("cloudWatchTrigger") else []
    )
    for t in cws:
        triggers.append(
            {
                "type": "aws-cloudwatch",
                "metadata": {
                    "namespace": str(t.get("namespace", "")),
                    "metricName": str(t.get("metricName", "")),
                    "targetMetricValue": str(t.get("targetValue", "")),
                    "awsRegion": c.region,
                    "metricStat": str(t.get("metricStat", "Average")),
                },
                "metricType": "Value" if t.get("metricType") == "Value" else "AverageValue",
            }
        )
    body = {
        "metadata": {"name": so_name, "labels": labels(name), "ownerReferences": [owner_ref(iec)]},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicaCount": int(auto.get("minReplicaCount", 1)),
            "maxReplicaCount": int(auto.get("maxReplicaCount", 5)),
            "pollingInterval": int(auto.get("pollingInterval", 30)),
            "cooldownPeriod": int(auto.get("cooldownPeriod", 300)),
            "initialCooldownPeriod": int(auto.get("initialCooldownPeriod", 300)),
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleDown": {"stabilizationWindowSeconds": int(auto.get("scaleDownStabilizationTime", 300))},
                        "scaleUp": {"stabilizationWindowSeconds": int(auto.get("scaleUpStabilizationTime", 0))},
                    }
                }
            },
            "triggers": triggers,
        },
    }
    ensure(c, SO_GR, ns, body)
    return ""
