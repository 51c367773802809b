"""Services: the endpoints controller (Endpoints), the EndpointSlice controller, and load balancers.

- Endpoints/EndpointSlices list the pods a Service selects: ready pods under `addresses`
  (`conditions.ready: true` in slices), running-but-not-ready ones under `notReadyAddresses`;
  a named targetPort is resolved per pod from its container ports, so pods that do not declare
  the port are left out (as kube-controller-manager does).
- `type: LoadBalancer` gets an ingress hostname after ~20 s (simulated). With the AWS Load
  Balancer Controller's annotations (`service.beta.kubernetes.io/aws-load-balancer-type:
  external` with `aws-load-balancer-nlb-target-type: ip|instance`, or `loadBalancerClass:
  service.k8s.aws/nlb`) it is an NLB `k8s-<ns>-<name>-<hash>-<id>.elb.<region>.amazonaws.com`
  whose `aws-load-balancer-scheme` defaults to internal; otherwise the in-tree provider's
  classic ELB `a<hash>-<n>.<region>.elb.amazonaws.com` (`internal-` prefix when
  `aws-load-balancer-internal: "true"`). Nothing ever connects to these names.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..selectors import match_label_selector_obj
from ..store import Cluster, rand_suffix
from ..util import clone
from .base import Ctx, pod_active, pod_ready, sim

Obj = dict[str, Any]
LB_SECONDS = 20.0  # simulated time until an ELB hostname is published
SLICE_GR = "discovery.k8s.io/endpointslices"
ANN = "service.beta.kubernetes.io/"
LBC_CLASS = "service.k8s.aws/nlb"


def reconcile(c: Cluster, ctx: Ctx, svc: Obj) -> None:
    spec = svc.get("spec") or {}
    if spec.get("selector"):
        _endpoints(c, svc)
    if spec.get("type") == "LoadBalancer":
        _load_balancer(c, ctx, svc)


def _target_port(pod: Obj, sp: Obj) -> int | None:
    target = sp.get("targetPort", sp.get("port"))
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for ct in (pod.get("spec") or {}).get("containers") or []:
        for p in ct.get("ports") or []:
            if p.get("name") == target:
                return int(p["containerPort"])
    return None


def _endpoints(c: Cluster, svc: Obj) -> None:
    spec = svc.get("spec") or {}
    ns = svc["metadata"]["namespace"]
    name = svc["metadata"]["name"]
    pods = [
        p
        for p in c.list("/pods", ns)
        if pod_active(p)
        and (p.get("status") or {}).get("podIP")
        and match_label_selector_obj({"matchLabels": spec["selector"]}, p["metadata"].get("labels"))
    ]
    # group pods by their resolved port set, as the endpoints controller packs subsets
    groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[Obj]]] = {}
    for p in pods:
        ports = []
        for sp in spec.get("ports") or []:
            tp = _target_port(p, sp)
            if tp is not None:
                ports.append((sp.get("name", ""), tp, sp.get("protocol", "TCP")))
        if not ports:
            continue
        g = groups.setdefault(tuple(ports), {"ready": [], "not": []})
        g["ready" if pod_ready(p) else "not"].append(p)
    subsets = []
    for ports, g in groups.items():
        ss: Obj = {}
        if g["ready"]:
            ss["addresses"] = [_address(p, ns) for p in g["ready"]]
        if g["not"]:
            ss["notReadyAddresses"] = [_address(p, ns) for p in g["not"]]
        ss["ports"] = [
            {"name": n, "port": port, "protocol": proto} if n else {"port": port, "protocol": proto}
            for n, port, proto in ports
        ]
        subsets.append(ss)
    labels = dict(svc["metadata"].get("labels") or {})
    ep = c.get("/endpoints", ns, name)
    if ep is None:
        rt = c.type_by_gr("/endpoints")
        assert rt is not None
        c.create(rt, {"metadata": {"name": name, "namespace": ns, "labels": labels}, "subsets": subsets}, ns)
    elif ep.get("subsets") != subsets:
        c.put("/endpoints", dict(ep, subsets=subsets))
    _slice(c, svc, pods)


def _address(p: Obj, ns: str) -> Obj:
    a: Obj = {
        "ip": p["status"]["podIP"],
        "nodeName": p["spec"].get("nodeName"),
        "targetRef": {"kind": "Pod", "namespace": ns, "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]},
    }
    return a


def _slice(c: Cluster, svc: Obj, pods: list[Obj]) -> None:
    rt = c.type_by_gr(SLICE_GR)
    if rt is None:
        return
    ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
    spec = svc.get("spec") or {}
    ports, endpoints = [], []
    for sp in spec.get("ports") or []:
        tp = next((x for x in (_target_port(p, sp) for p in pods) if x is not None), None)
        if tp is None and isinstance(sp.get("targetPort", sp.get("port")), int):
            tp = int(sp.get("targetPort", sp.get("port")))
        if tp is not None:
            ports.append({"name": sp.get("name", ""), "port": tp, "protocol": sp.get("protocol", "TCP")})
    for p in pods:
        node = c.get("/nodes", "", p["spec"].get("nodeName") or "") or {}
        ready = pod_ready(p)
        e: Obj = {
            "addresses": [p["status"]["podIP"]],
            "conditions": {"ready": ready, "serving": ready, "terminating": False},
            "nodeName": p["spec"].get("nodeName"),
            "targetRef": {"kind": "Pod", "namespace": ns, "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]},
        }
        zone = (node.get("metadata") or {}).get("labels", {}).get("topology.kubernetes.io/zone")
        if zone:
            e["zone"] = zone
        endpoints.append(e)
    body = {"addressType": "IPv4", "endpoints": endpoints, "ports": ports}
    existing = [
        s for s in c.list(SLICE_GR, ns) if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
    ]
    if not existing:
        c.create(
            rt,
            {
                "metadata": {
                    "name": f"{name}-{rand_suffix()}",
                    "labels": {
                        "kubernetes.io/service-name": name,
                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Service",
                            "name": name,
                            "uid": svc["metadata"]["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                **body,
            },
            ns,
        )
        return
    cur = existing[0]
    if any(cur.get(k) != v for k, v in body.items()):
        new = clone(cur)
        new.update(body)
        c.put(SLICE_GR, new)


def _load_balancer(c: Cluster, ctx: Ctx, svc: Obj) -> None:
    if ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
        return
    spec = svc.get("spec") or {}
    ann = svc["metadata"].get("annotations") or {}
    lbc = spec.get("loadBalancerClass") == LBC_CLASS or ann.get(ANN + "aws-load-balancer-type") == "external"
    if spec.get("loadBalancerClass") and not lbc:
        return  # another controller's class: nobody here provisions it
    component = "service" if lbc else "service-controller"
    s = sim(c, svc)
    if "t_lb" not in s:
        s["t_lb"] = ctx.now
        if not lbc:
            c.record_event(svc, "EnsuringLoadBalancer", "Ensuring load balancer", component=component)
        return
    if ctx.elapsed(s["t_lb"]) < LB_SECONDS:
        return
    h = hashlib.md5(svc["metadata"]["uid"].encode()).hexdigest()
    if lbc:
        scheme = ann.get(ANN + "aws-load-balancer-scheme", "internal")
        ns8, name8 = svc["metadata"]["namespace"][:8], svc["metadata"]["name"][:8]
        host = f"k8s-{ns8}-{name8}-{h[:10]}-{h[10:26]}.elb.{c.region}.amazonaws.com"
        c.put_status("/services", svc, {"loadBalancer": {"ingress": [{"hostname": host}]}})
        c.record_event(svc, "SuccessfullyReconciled", "Successfully reconciled", component=component)
        s["lb_scheme"] = scheme
        return
    internal = ann.get(ANN + "aws-load-balancer-internal") in ("true", "0.0.0.0/0") or (
        ann.get(ANN + "aws-load-balancer-scheme") == "internal"
    )
    num = int(h[:8], 16) % 10**10
    host = f"{'internal-' if internal else ''}a{h}-{num}.{c.region}.elb.amazonaws.com"
    c.put_status("/services", svc, {"loadBalancer": {"ingress": [{"hostname": host}]}})
    c.record_event(svc, "EnsuredLoadBalancer", "Ensured load balancer", component=component)
