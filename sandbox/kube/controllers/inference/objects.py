"""What the inference operator's reconcilers share: the endpoint's labels, create-or-update of an
object the operator owns (compared with what it last wrote), delete-if-present."""

from __future__ import annotations

import json
from typing import Any

from ...store import Cluster
from ...util import clone
from ..base import sim

Obj = dict[str, Any]
SYSTEM_NS = "hyperpod-inference-system"
MANAGED = "inference.sagemaker.aws.amazon.com/endpoint"
SO_GR = "keda.sh/scaledobjects"
OTEL_IMAGE = "public.ecr.aws/aws-observability/aws-otel-collector:v0.43.3"


def labels(name: str) -> dict[str, str]:
    return {"app": name, "deploying-service": "hyperpod-inference"}


def ensure(c: Cluster, gr: str, ns: str, body: Obj) -> Obj:
    """Create when missing; rewrite what the operator owns when its desired state changed (compared
    with what it last wrote, not with the stored object, which carries server defaults)."""
    cur = c.get(gr, ns, body["metadata"]["name"])
    rt = c.type_by_gr(gr)
    assert rt is not None
    keys = [k for k in body if k not in ("metadata", "status", "apiVersion", "kind")]
    want = json.dumps({k: body[k] for k in keys} | {"labels": body["metadata"].get("labels")}, sort_keys=True)
    if cur is None:
        obj = c.create(rt, body, ns)
        sim(c, obj)["operator_applied"] = want
        return obj
    if sim(c, cur).get("operator_applied") == want:
        return cur
    new = clone(cur)
    for k in keys:
        new[k] = clone(body[k])
    new["metadata"].setdefault("labels", {}).update(body["metadata"].get("labels") or {})
    obj = c.put(gr, new)
    sim(c, obj)["operator_applied"] = want
    return obj


def delete(c: Cluster, gr: str, ns: str, name: str) -> None:
    rt = c.type_by_gr(gr)
    if rt is not None and c.get(gr, ns, name) is not None:
        c.delete(rt, ns, name)
