"""KEDA (ScaledObject → HorizontalPodAutoscaler `keda-hpa-<name>`) and the HPA controller that acts
on it, for `prometheus` triggers.

Every `pollingInterval` KEDA asks each trigger's Prometheus (`serverAddress` + `/api/v1/query`,
reached through the cluster's Services like a real pod would) and decides activity: a value above
`activationThreshold` activates the target (0 → max(min,1) replicas); `cooldownPeriod` after the
last activity it goes back to 0 (only when minReplicaCount is 0, as in KEDA). Between min and
max the HPA decides every 15 s: AverageValue (the default metricType) wants ceil(value/threshold)
replicas, Value wants ceil(current·value/threshold), within the 10% tolerance, then the
behavior's stabilization windows (scale-down 300 s, scale-up 0 s by default) and rate policies.
The query's answer is what KEDA reads: a single-element vector or a scalar; empty is 0
(ignoreNullValues), several elements are an error. Failures count toward `fallback`.
Triggers of other types are accepted and not evaluated. Times are simulated seconds.

Acts while the `keda` add-on is set or a `keda-operator` Deployment exists (operators.py).
"""

from __future__ import annotations

import math
from typing import Any

from ..operators import KEDA, operator_active
from ..store import Cluster, now_iso
from ..util import clone
from .base import Ctx, owner_ref, set_condition, sim

Obj = dict[str, Any]
SO_GR = "keda.sh/scaledobjects"
HPA_GR = "autoscaling/horizontalpodautoscalers"
HPA_SYNC = 15.0  # --horizontal-pod-autoscaler-sync-period
TOLERANCE = 0.1
TARGETS = {"Deployment": "apps/deployments", "StatefulSet": "apps/statefulsets"}


def run(c: Cluster, ctx: Ctx) -> None:
    if c.type_by_gr(SO_GR) is None or not operator_active(c, KEDA):
        return
    keep = set()
    for so in c.list(SO_GR):
        keep.add(so["metadata"]["uid"])
        _scaled_object(c, ctx, so)
    if ctx.serving is not None:
        ctx.serving.forget_polls(c, keep)


def _selector_text(name: str) -> str:
    return (
        "&LabelSelector{MatchLabels:map[string]string{scaledobject.keda.sh/name: "
        f"{name},}},MatchExpressions:[]LabelSelectorRequirement{{}},}}"
    )


def _config_error(triggers: list[Obj]) -> str:
    if not triggers:
        return "no triggers defined in the ScaledObject/ScaledJob"
    for t in triggers:
        if t.get("type") != "prometheus":
            continue
        md = t.get("metadata") or {}
        for key in ("serverAddress", "query", "threshold"):
            if not md.get(key):
                return f'error parsing prometheus metadata: missing required parameter "{key}" in [triggerMetadata]'
        for key in ("threshold", "activationThreshold"):
            if md.get(key) not in (None, ""):
                try:
                    float(md[key])
                except (TypeError, ValueError):
                    return f'error parsing prometheus metadata: unable to set param "{key}" value "{md[key]}"'
    return ""


def _scaled_object(c: Cluster, ctx: Ctx, so: Obj) -> None:
    ns = so["metadata"]["namespace"]
    name = so["metadata"]["name"]
    spec = so.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    kind = ref.get("kind", "Deployment")
    api_version = ref.get("apiVersion", "apps/v1")
    target_gr = TARGETS.get(kind)
    target = c.get(target_gr, ns, ref.get("name", "")) if target_gr else None
    st = clone(so.get("status") or {})
    conds = st.get("conditions") or []
    triggers = spec.get("triggers") or []
    advanced = spec.get("advanced") or {}
    hpa_name = (advanced.get("horizontalPodAutoscalerConfig") or {}).get("name") or f"keda-hpa-{name}"
    problem = (
        ""
        if target is not None
        else (f"ScaledObject doesn't have correct scaleTargetRef specification: {kind} {ref.get('name')} not found")
    )
    problem = problem or _config_error(triggers)
    if problem:
        conds = set_condition(conds, "Ready", "False", "ScaledObjectCheckFailed", problem)
        conds = set_condition(conds, "Active", "False", "ScaledObjectCheckFailed", problem)
        st["conditions"] = conds
        c.put_status(SO_GR, so, st)
        return
    assert target is not None and target_gr is not None
    group, _, version = api_version.rpartition("/")
    names = [t.get("name") or f"s{i}-{t.get('type', '')}" for i, t in enumerate(triggers)]
    st.update(
        {
            "scaleTargetKind": f"{api_version}.{kind}",
            "hpaName": hpa_name,
            "scaleTargetGVKR": {"group": group, "version": version, "kind": kind, "resource": target_gr.split("/")[1]},
            "originalReplicaCount": st.get("originalReplicaCount", (target.get("spec") or {}).get("replicas", 1)),
            "triggersTypes": ",".join(t.get("type", "") for t in triggers),
            "externalMetricNames": names,
        }
    )
    conds = set_condition(
        conds, "Ready", "True", "ScaledObjectReady", "ScaledObject is defined correctly and is ready for scaling"
    )
    hpa = _ensure_hpa(c, so, hpa_name, api_version, kind, ref.get("name", ""), triggers, names)
    s = sim(c, so)
    min_r = int(spec.get("minReplicaCount", 0) or 0)
    max_r = int(spec.get("maxReplicaCount", 100) or 100)
    current = int((target.get("spec") or {}).get("replicas", 1))
    ann = so["metadata"].get("annotations") or {}
    paused = ann.get("autoscaling.keda.sh/paused-replicas")
    if paused is not None or ann.get("autoscaling.keda.sh/paused") == "true":
        if paused is not None and paused.isdigit() and current != int(paused):
            _scale(c, target_gr, target, int(paused))
        conds = set_condition(conds, "Paused", "True", "ScaledObjectPaused", "ScaledObject is paused")
        st["conditions"] = conds
        c.put_status(SO_GR, so, st)
        return
    conds = set_condition(conds, "Paused", "False", "ScaledObjectUnpaused", "ScaledObject is not paused")
    polling = float(spec.get("pollingInterval", 30) or 30)
    values: list[tuple[int, Obj, float | None, str | None]] = []
    for i, t in enumerate(triggers):
        if t.get("type") != "prometheus" or ctx.serving is None:
            continue
        md = t.get("metadata") or {}
        v, err, _t = ctx.serving.prometheus_value(
            c, (so["metadata"]["uid"], i), str(md["serverAddress"]), str(md["query"]), polling, ns
        )
        values.append((i, t, v, err))
    failing = [(names[i], err) for i, _t, v, err in values if err]
    health = {}
    failures = int(s.get("failures", 0))
    for i, _t, _v, err in values:
        key = names[i]
        prev = (st.get("health") or {}).get(key) or {}
        n = int(prev.get("numberOfFailures", 0)) + 1 if err else 0
        health[key] = {"numberOfFailures": n, "status": "Failing" if err else "Happy"}
    if values:
        st["health"] = health
    due = ctx.elapsed(s.get("t_poll")) >= polling or "t_poll" not in s
    if due:
        s["t_poll"] = ctx.now
        failures = failures + 1 if failing else 0
        s["failures"] = failures
        for _metric, err in failing:
            c.record_event(so, "KEDAScalerFailed", err or "", "Warning", component="keda-operator")
    fallback = spec.get("fallback") or {}
    in_fallback = bool(fallback) and failing and failures >= int(fallback.get("failureThreshold", 3))
    conds = set_condition(
        conds,
        "Fallback",
        "True" if in_fallback else "False",
        "FallbackExists" if in_fallback else "NoFallbackFound",
        "At least one trigger is falling back on this scaled object"
        if in_fallback
        else "No fallbacks are active on this scaled object",
    )
    active = any(
        v is not None and v > float((t.get("metadata") or {}).get("activationThreshold") or 0)
        for _i, t, v, _e in values
    )
    if active:
        st["lastActiveTime"] = now_iso()
        s["t_active"] = ctx.now
    conds = set_condition(
        conds,
        "Active",
        "True" if active else "False",
        "ScalerActive" if active else "ScalerNotActive",
        "Scaling is performed because triggers are active"
        if active
        else "Scaling is not performed because triggers are not active",
    )
    st["conditions"] = conds
    c.put_status(SO_GR, so, st)
    if in_fallback:
        want = int(fallback.get("replicas", current))
        if want != current:
            _scale(c, target_gr, target, want)
        return
    initial = float(spec.get("initialCooldownPeriod", 0) or 0)
    if "t_created" not in s:
        s["t_created"] = ctx.now
    if due and current == 0 and active:
        want = max(min_r, 1)
        _scale(c, target_gr, target, want)
        c.record_event(
            so,
            "KEDAScaleTargetActivated",
            f"Scaled {api_version}.{kind} {ns}/{ref.get('name')} from 0 to {want}, triggered by prometheusScaler",
            component="keda-operator",
        )
        return
    cooldown = float(spec.get("cooldownPeriod", 300) if spec.get("cooldownPeriod") is not None else 300)
    idle = spec.get("idleReplicaCount")
    if (
        due
        and min_r == 0
        and current > 0
        and not active
        and values
        and not failing
        and ctx.elapsed(s.get("t_active", s["t_created"])) >= cooldown
        and ctx.elapsed(s["t_created"]) >= initial
    ):
        want = int(idle) if idle is not None else 0
        _scale(c, target_gr, target, want)
        c.record_event(
            so,
            "KEDAScaleTargetDeactivated",
            f"Deactivated {api_version}.{kind} {ns}/{ref.get('name')} from {current} to {want}",
            component="keda-operator",
        )
        return
    if current > 0 and hpa is not None:
        _hpa(c, ctx, so, hpa, target_gr, target, values, names, max(min_r, 1), max_r, advanced)


def _ensure_hpa(
    c: Cluster, so: Obj, hpa_name: str, api_version: str, kind: str, target: str, triggers: list[Obj], names: list[str]
) -> Obj | None:
    rt = c.type_by_gr(HPA_GR)
    if rt is None:
        return None
    spec = so.get("spec") or {}
    ns = so["metadata"]["namespace"]
    behavior = ((spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}).get("behavior")
    metrics = []
    for i, t in enumerate(triggers):
        md = t.get("metadata") or {}
        mtype = t.get("metricType") or "AverageValue"
        threshold = str(md.get("threshold", "1"))
        target_spec = (
            {"type": "Value", "value": threshold}
            if mtype == "Value"
            else {"type": "AverageValue", "averageValue": threshold}
        )
        metrics.append(
            {
                "type": "External",
                "external": {
                    "metric": {
                        "name": names[i],
                        "selector": {"matchLabels": {"scaledobject.keda.sh/name": so["metadata"]["name"]}},
                    },
                    "target": target_spec,
                },
            }
        )
    body_spec: Obj = {
        "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
        "minReplicas": max(int(spec.get("minReplicaCount", 0) or 0), 1),
        "maxReplicas": int(spec.get("maxReplicaCount", 100) or 100),
        "metrics": metrics,
    }
    if behavior:
        body_spec["behavior"] = clone(behavior)
    hpa = c.get(HPA_GR, ns, hpa_name)
    if hpa is None:
        return c.create(
            rt,
            {
                "metadata": {
                    "name": hpa_name,
                    "labels": {
                        "scaledobject.keda.sh/name": so["metadata"]["name"],
                        "app.kubernetes.io/managed-by": "keda-operator",
                        "app.kubernetes.io/name": hpa_name,
                        "app.kubernetes.io/part-of": so["metadata"]["name"],
                    },
                    "ownerReferences": [owner_ref(so)],
                },
                "spec": body_spec,
            },
            ns,
        )
    if hpa.get("spec") != body_spec:
        new = clone(hpa)
        new["spec"] = body_spec
        hpa = c.put(HPA_GR, new)
    return hpa


def _scale(c: Cluster, gr: str, target: Obj, replicas: int) -> None:
    new = clone(target)
    new["spec"]["replicas"] = replicas
    c.put(gr, new)


def _policies(rules: Obj, up: bool) -> tuple[str, list[Obj]]:
    default = (
        [{"type": "Percent", "value": 100, "periodSeconds": 15}, {"type": "Pods", "value": 4, "periodSeconds": 15}]
        if up
        else [{"type": "Percent", "value": 100, "periodSeconds": 15}]
    )
    return str(rules.get("selectPolicy") or "Max"), rules.get("policies") or default


def _limit(current: int, desired: int, rules: Obj, up: bool) -> int:
    select, policies = _policies(rules, up)
    if select == "Disabled":
        return current
    changes = []
    for p in policies:
        v = int(p.get("value", 0))
        step = math.ceil(current * v / 100) if p.get("type") == "Percent" else v
        changes.append(step)
    step = max(changes) if select == "Max" else min(changes)
    return min(desired, current + step) if up else max(desired, current - step)


def _hpa(
    c: Cluster,
    ctx: Ctx,
    so: Obj,
    hpa: Obj,
    target_gr: str,
    target: Obj,
    values: list[tuple[int, Obj, float | None, str | None]],
    names: list[str],
    min_r: int,
    max_r: int,
    advanced: Obj,
) -> None:
    s = sim(c, hpa)
    if "t_sync" in s and ctx.elapsed(s["t_sync"]) < HPA_SYNC:
        return
    s["t_sync"] = ctx.now
    ns = so["metadata"]["namespace"]
    current = int((target.get("spec") or {}).get("replicas", 1))
    st = clone(hpa.get("status") or {})
    conds = st.get("conditions") or []
    sel = _selector_text(so["metadata"]["name"])
    desired_by_metric: list[tuple[int, str, float, float]] = []
    current_metrics = []
    error = None
    for i, t, v, err in values:
        md = t.get("metadata") or {}
        threshold = float(md.get("threshold"))
        if err or v is None:
            error = (
                f"unable to get external metric {ns}/{names[i]}/{sel}: unable to fetch metrics from external "
                f"metrics API: {err}"
            )
            continue
        selector = {"matchLabels": {"scaledobject.keda.sh/name": so["metadata"]["name"]}}
        if (t.get("metricType") or "AverageValue") == "Value":
            ratio = v / threshold if threshold else 0.0
            want = current if abs(ratio - 1) <= TOLERANCE else math.ceil(current * ratio)
            now_value = {"value": _q(v)}
        else:
            per = v / max(current, 1)
            ratio = per / threshold if threshold else 0.0
            want = current if abs(ratio - 1) <= TOLERANCE else math.ceil(v / threshold) if threshold else current
            now_value = {"averageValue": _q(per)}
        current_metrics.append(
            {"type": "External", "external": {"metric": {"name": names[i], "selector": selector}, "current": now_value}}
        )
        desired_by_metric.append((want, names[i], v, threshold))
    if not desired_by_metric:
        if error:
            conds = set_condition(
                conds,
                "AbleToScale",
                "True",
                "SucceededGetScale",
                "the HPA controller was able to get the target's current scale",
            )
            conds = set_condition(
                conds,
                "ScalingActive",
                "False",
                "FailedGetExternalMetric",
                f"the HPA was unable to compute the replica count: {error}",
            )
            c.record_event(hpa, "FailedGetExternalMetric", error, "Warning", component="horizontal-pod-autoscaler")
        st.update({"currentReplicas": current, "desiredReplicas": current, "conditions": conds})
        c.put_status(HPA_GR, hpa, st)
        return
    want, metric, value, threshold = max(desired_by_metric, key=lambda x: x[0])
    limited = want
    if want > max_r:
        limited = max_r
    if want < min_r:
        limited = min_r
    behavior = (advanced.get("horizontalPodAutoscalerConfig") or {}).get("behavior") or {}
    up_rules, down_rules = behavior.get("scaleUp") or {}, behavior.get("scaleDown") or {}
    up_window = float(up_rules.get("stabilizationWindowSeconds", 0) or 0)
    down_window = float(
        down_rules.get("stabilizationWindowSeconds", 300)
        if down_rules.get("stabilizationWindowSeconds") is not None
        else 300
    )
    recs = [r for r in s.get("recs", []) if ctx.elapsed(r[0]) <= max(up_window, down_window)]
    recs.append([ctx.now, limited])
    s["recs"] = recs
    up_rec = min(r[1] for r in recs if ctx.elapsed(r[0]) <= up_window)
    down_rec = max(r[1] for r in recs if ctx.elapsed(r[0]) <= down_window)
    new = current
    if current < up_rec:
        new = _limit(current, up_rec, up_rules, True)
    elif current > down_rec:
        new = _limit(current, down_rec, down_rules, False)
    stabilized = new == current and limited < current
    conds = set_condition(
        conds,
        "AbleToScale",
        "True",
        "ScaleDownStabilized" if stabilized else "ReadyForNewScale",
        "recent recommendations were higher than current one, applying the highest recent recommendation"
        if stabilized
        else "recommended size matches current size",
    )
    conds = set_condition(
        conds,
        "ScalingActive",
        "True",
        "ValidMetricFound",
        f"the HPA was able to successfully calculate a replica count from external metric {metric}({sel})",
    )
    conds = set_condition(
        conds,
        "ScalingLimited",
        "True" if limited != want else "False",
        ("TooManyReplicas" if want > max_r else "TooFewReplicas") if limited != want else "DesiredWithinRange",
        (
            "the desired replica count is more than the maximum replica count"
            if want > max_r
            else "the desired replica count is less than the minimum replica count"
        )
        if limited != want
        else "the desired count is within the acceptable range",
    )
    st.update(
        {"currentReplicas": current, "desiredReplicas": new, "currentMetrics": current_metrics, "conditions": conds}
    )
    if new != current:
        _scale(c, target_gr, target, new)
        st["lastScaleTime"] = now_iso()
        direction = "above" if new > current else "below"
        c.record_event(
            hpa,
            "SuccessfulRescale",
            f"New size: {new}; reason: external metric {metric}({sel}) {direction} target",
            component="horizontal-pod-autoscaler",
        )
    c.put_status(HPA_GR, hpa, st)


def _q(v: float) -> str:
    """A resource.Quantity string as the HPA writes metric values."""
    if float(v).is_integer():
        return str(int(v))
    return f"{int(round(v * 1000))}m"
