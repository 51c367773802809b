"""Faults injected on demand (HTTP /_sandbox/faults or Sandbox.faults), consumed by the AWS and kube halves.

A fault is a dict {"kind": ..., ...}; counted kinds ("count") are consumed one per matching event and
disappear at zero. Unknown keys are kept so that callers can pass messages through.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import threading
from typing import Any

KINDS = {
    "throttle": {"service", "action"},
    "server_error": {"service", "action"},
    "insufficient_capacity": {"instance_type"},
    "create_fails": {"service"},
    "deep_health_fail": set(),
    "pod_crash": {"cluster", "namespace", "name_prefix"},
    # EKS add-ons: the next create of `addon` ends CREATE_FAILED; DEGRADED hits the add-on as soon as
    # it is (or becomes) ACTIVE. Optional: cluster, account, code, message, count (default 1).
    "addon_create_failed": {"addon"},
    "addon_degraded": {"addon"},
    # HyperPod managed autoscaling of `cluster` ends Failed (optional message, count).
    "autoscaling_fails": {"cluster"},
    # a training job's processes stop printing (and logging metrics) without exiting; `count` = how
    # many attempts hang (the current one at once, restarts after `after_steps` steps, default 2)
    "job_hang": {"cluster", "namespace", "job"},
}
# kinds consumed once unless the fault says otherwise ("count")
COUNTED_BY_DEFAULT = (
    "throttle",
    "server_error",
    "deep_health_fail",
    "pod_crash",
    "addon_create_failed",
    "addon_degraded",
    "autoscaling_fails",
    "job_hang",
)


class FaultError(ValueError):
    pass


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        # pod_crash / job_hang faults are forwarded to the kube half as they are added
        self.on_pod_crash: Any = None
        self.on_job_hang: Any = None

    def add(self, kind: str | None = None, **spec: Any) -> dict[str, Any]:
        """Add one fault: add("throttle", service="eks", action="DescribeCluster", count=3)
        or add(**{"kind": "throttle", ...})."""
        spec = dict(spec)
        kind = kind or spec.pop("kind", None)
        if kind not in KINDS:
            raise FaultError(f"unknown fault kind {kind!r}; expected one of {sorted(KINDS)}")
        missing = KINDS[kind] - set(spec)
        if missing:
            raise FaultError(f"fault {kind} needs {sorted(missing)}")
        if spec.get("service"):  # faults name services as boto3 clients do ("service-quotas", not "servicequotas")
            from sandbox.aws.protocol import model_name_for

            spec["service"] = model_name_for(str(spec["service"]))
        if "count" in spec:
            spec["count"] = int(spec["count"])
        elif kind in COUNTED_BY_DEFAULT:
            spec["count"] = 1
        if kind == "job_hang" and int(spec.get("after_steps", 2)) < 0:
            raise FaultError("fault job_hang needs after_steps >= 0")
        fault = {"id": next(self._ids), "kind": kind, **spec}
        forward = {"pod_crash": self.on_pod_crash, "job_hang": self.on_job_hang}.get(kind)
        if forward is not None:
            forward(fault)
            return fault
        with self._lock:
            self._faults.append(fault)
        return copy.deepcopy(fault)

    def add_many(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.add(**s) for s in specs]

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def remove(self, fault_id: int) -> bool:
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if f["id"] != fault_id]
            return len(self._faults) != before

    def take(self, kind: str, consume: bool = True, **match: Any) -> dict[str, Any] | None:
        """First fault of `kind` whose given keys equal `match` (keys absent from the fault match
        anything). Consumes one unit of its count."""
        with self._lock:
            for f in self._faults:
                if f["kind"] != kind:
                    continue
                if any(k in f and f[k] not in (None, "", "*") and str(f[k]) != str(v) for k, v in match.items()):
                    continue
                hit = copy.deepcopy(f)
                if consume and "count" in f:
                    f["count"] -= 1
                    if f["count"] <= 0:
                        self._faults.remove(f)
                return hit
        return None

    def peek(self, kind: str, **match: Any) -> dict[str, Any] | None:
        return self.take(kind, consume=False, **match)

    def load_env(self) -> None:
        raw = os.environ.get("SANDBOX_FAULTS")
        if raw:
            specs = json.loads(raw)
            self.add_many(specs if isinstance(specs, list) else [specs])
