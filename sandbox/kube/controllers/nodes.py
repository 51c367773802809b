"""Node objects from the desired HyperPod/EKS node list (`KubeWorld.sync_nodes`).

The sync owns a known set of labels and taints; anything a user adds with kubectl
(labels, taints, cordon) survives later syncs. A node dict's "ip" (its ENI's primary address) is
the Node's InternalIP and "pod_ips" the addresses the VPC CNI holds for its pods (the kubelet
hands them out). Each node registers on its own: one the API server refuses (an invalid label,
say) stays unregistered, as with a kubelet whose registration fails, and the others go on.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from ...isolation import Contained
from ..store import Cluster, now_iso, now_iso_nano
from ..util import clone

Obj = dict[str, Any]

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
PRESSURE_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
SYNC_TAINT_KEYS = {HEALTH_LABEL, "node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable"}


POD_IPS = "_node_pod_ips"  # cluster.sim key: node name -> the pod addresses its CNI holds


def _ip(name: str) -> str:
    """A made-up address for nodes given without one (worlds driven without the AWS half)."""
    h = hashlib.sha1(name.encode()).digest()
    return f"10.1.{h[0] % 250 + 1}.{h[1] % 250 + 2}"


def _addresses(c: Cluster, name: str, n: dict[str, Any]) -> list[Obj]:
    return [
        {"type": "InternalIP", "address": n.get("ip") or _ip(name)},
        {"type": "Hostname", "address": name},
        {"type": "InternalDNS", "address": n.get("private_dns") or f"{name}.{c.region}.compute.internal"},
    ]


def _labels(c: Cluster, n: dict[str, Any]) -> dict[str, str]:
    labels = {
        "kubernetes.io/hostname": n["name"],
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64" if str(n.get("instance_type", "")).startswith(("g5g", "c7g", "m7g")) else "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": n.get("instance_type", ""),
        "beta.kubernetes.io/instance-type": n.get("instance_type", ""),
        "topology.kubernetes.io/region": c.region,
        "topology.kubernetes.io/zone": n.get("zone", ""),
        "failure-domain.beta.kubernetes.io/region": c.region,
        "failure-domain.beta.kubernetes.io/zone": n.get("zone", ""),
    }
    if str(n["name"]).startswith("hyperpod-"):
        # HyperPod nodes (named hyperpod-<instance id>) carry these even when the caller omits them
        labels.update(
            {
                "sagemaker.amazonaws.com/instance-group-name": n.get("instance_group", ""),
                "sagemaker.amazonaws.com/compute-type": "hyperpod",
                "sagemaker.amazonaws.com/capacity-type": str(n.get("capacity_type", "") or "OnDemand"),
                HEALTH_LABEL: "Schedulable",
            }
        )
    labels.update({k: str(v) for k, v in (n.get("labels") or {}).items()})
    return {k: v for k, v in labels.items() if v != "" or k in (n.get("labels") or {})}


def _resources(n: dict[str, Any]) -> tuple[Obj, Obj]:
    cpu = int(n.get("cpu", 4) or 0)
    mem = int(n.get("memory_gib", 16) or 0)
    cap: Obj = {
        "cpu": str(cpu),
        "memory": f"{mem * 1024 * 1024}Ki",
        "pods": "110",
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    # kubelet reserves a little cpu and memory (EKS-like), extended resources are all allocatable
    alloc: Obj = {
        "cpu": f"{max(cpu * 1000 - 90 - cpu * 6, 0)}m",
        "memory": f"{max(mem * 1024 * 1024 - 893 * 1024 - mem * 6 * 1024, 0)}Ki",
        "pods": "110",
        "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    if int(n.get("gpus", 0) or 0) > 0:
        cap["nvidia.com/gpu"] = alloc["nvidia.com/gpu"] = str(int(n["gpus"]))
    if int(n.get("efa", 0) or 0) > 0:
        cap["vpc.amazonaws.com/efa"] = alloc["vpc.amazonaws.com/efa"] = str(int(n["efa"]))
    return cap, alloc


def resources_of(n: dict[str, Any]) -> tuple[Obj, Obj]:
    """Capacity and allocatable of a node description (the Karpenter simulation sizes nodes that
    have not launched yet the same way)."""
    return _resources(n)


def _taints(labels: dict[str, str], ready: bool, given: list[Obj] | None = None) -> list[Obj]:
    out = [
        {k: v for k, v in t.items() if k in ("key", "value", "effect") and v not in (None, "")}
        for t in given or []
        if t.get("key")
    ]
    health = labels.get(HEALTH_LABEL, "Schedulable")
    if health.startswith("Unschedulable"):
        out.append({"key": HEALTH_LABEL, "value": health, "effect": "NoSchedule"})
        out.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": now_iso()})
    if not ready:
        out.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": now_iso()})
    return out


def _lease(c: Cluster, node: Obj) -> None:
    """The kubelet's node Lease (kubectl describe node reads it). Renewed only at registration:
    renewing it every tick would flood watchers with events for no benefit here."""
    rt = c.type_by_gr("coordination.k8s.io/leases")
    name = node["metadata"]["name"]
    if (
        rt is None
        or c.get(rt.gr, "kube-node-lease", name) is not None
        or c.get("/namespaces", "", "kube-node-lease") is None
    ):
        return
    c.create(
        rt,
        {
            "metadata": {
                "name": name,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}],
            },
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now_iso_nano()},
        },
        "kube-node-lease",
    )


def sync_nodes(c: Cluster, nodes: list[dict[str, Any]], contained: Contained | None = None) -> None:
    rt = c.type_by_gr("/nodes")
    assert rt is not None
    desired = {n["name"]: n for n in nodes}
    pools = c.sim.setdefault(POD_IPS, {})
    for name in [k for k in pools if k not in desired]:
        pools.pop(name)
    for name, n in desired.items():
        if "pod_ips" in n:
            pools[name] = list(n["pod_ips"])
    # since when each node is NotReady (wall clock); the kubelet sim evicts its pods after a while
    not_ready = c.sim.setdefault("_node_notready", {})
    for name, n in desired.items():
        if n.get("ready", True):
            not_ready.pop(name, None)
        else:
            not_ready.setdefault(name, time.time())
    for name in [k for k in not_ready if k not in desired]:
        not_ready.pop(name)
    for name, n in desired.items():
        if contained is None:
            _sync_node(c, rt, name, n)
        else:
            contained.run((c.key, "node", name), _sync_node, c, rt, name, n)
    _remove_gone(c, rt, desired)


def _sync_node(c: Cluster, rt: Any, name: str, n: dict[str, Any]) -> None:
    owned = c.sim.setdefault("_node_labels", {})  # node name -> label keys the sync wrote
    labels = _labels(c, n)
    cap, alloc = _resources(n)
    ready = bool(n.get("ready", True))
    taints = _taints(labels, ready, n.get("taints"))
    taint_keys = c.sim.setdefault("_node_taints", {})
    health = labels.get(HEALTH_LABEL, "Schedulable")
    cur = c.get("/nodes", "", name)
    ts = now_iso()
    cond_ready = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if ready else "container runtime network not ready",
        "lastHeartbeatTime": ts,
        "lastTransitionTime": ts,
    }
    if cur is None:
        obj = {
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": {
                "providerID": f"aws:///{n.get('zone', '')}/{n.get('instance_id', name)}",
                **({"taints": taints} if taints else {}),
                **({"unschedulable": True} if health.startswith("Unschedulable") else {}),
            },
            "status": {
                "capacity": cap,
                "allocatable": alloc,
                "conditions": [
                    {
                        "type": t,
                        "status": "False",
                        "reason": r,
                        "message": m,
                        "lastHeartbeatTime": ts,
                        "lastTransitionTime": ts,
                    }
                    for t, r, m in PRESSURE_CONDITIONS
                ]
                + [cond_ready],
                "addresses": _addresses(c, name, n),
                "nodeInfo": {
                    "kubeletVersion": f"v{c.version}.4-eks-sandbox",
                    "kubeProxyVersion": f"v{c.version}.4-eks-sandbox",
                    "osImage": "Amazon Linux 2023",
                    "kernelVersion": "6.1.115-126.197.amzn2023."
                    + ("aarch64" if labels.get("kubernetes.io/arch") == "arm64" else "x86_64"),
                    "containerRuntimeVersion": "containerd://1.7.23",
                    "operatingSystem": "linux",
                    "architecture": labels.get("kubernetes.io/arch", "amd64"),
                    "machineID": hashlib.md5(name.encode()).hexdigest(),
                    "systemUUID": hashlib.md5(name.encode()).hexdigest(),
                    "bootID": "",
                },
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "phase": "Running",
            },
        }
        node = c.create(rt, obj, keep_status=True)
        _lease(c, node)
        owned[name] = sorted(labels)
        taint_keys[name] = sorted({t["key"] for t in taints})
        c.record_event(
            c.get("/nodes", "", name) or obj,
            "RegisteredNode",
            f"Node {name} event: Registered Node {name} in Controller",
            component="node-controller",
        )
        return
    new = clone(cur)
    cur_labels = dict(new["metadata"].get("labels") or {})
    for k in owned.get(name, []):
        if k not in labels:
            cur_labels.pop(k, None)
    cur_labels.update(labels)
    new["metadata"]["labels"] = cur_labels
    owned[name] = sorted(labels)
    owned_taints = SYNC_TAINT_KEYS | set(taint_keys.get(name, []))
    user_taints = [t for t in new["spec"].get("taints") or [] if t.get("key") not in owned_taints]
    old_sync = {
        (t.get("key"), t.get("effect"), t.get("value")): t
        for t in new["spec"].get("taints") or []
        if t.get("key") in owned_taints
    }
    taint_keys[name] = sorted({t["key"] for t in taints})
    merged = user_taints + [old_sync.get((t["key"], t["effect"], t.get("value")), t) for t in taints]
    if merged:
        new["spec"]["taints"] = merged
    else:
        new["spec"].pop("taints", None)
    was_sync_cordon = c.sim.setdefault("_node_cordon", {}).get(name, False)
    if health.startswith("Unschedulable"):
        new["spec"]["unschedulable"] = True
        c.sim["_node_cordon"][name] = True
    elif was_sync_cordon:
        new["spec"].pop("unschedulable", None)
        c.sim["_node_cordon"][name] = False
    st = new.setdefault("status", {})
    st["capacity"], st["allocatable"] = cap, alloc
    st["addresses"] = _addresses(c, name, n)
    conds = [x for x in st.get("conditions") or [] if x.get("type") != "Ready"]
    old_ready = next((x for x in st.get("conditions") or [] if x.get("type") == "Ready"), None)
    if old_ready and old_ready.get("status") == cond_ready["status"]:
        cond_ready = dict(old_ready)
    conds.append(cond_ready)
    st["conditions"] = conds
    if old_ready and old_ready.get("status") != cond_ready["status"]:
        c.record_event(
            new,
            "NodeReady" if ready else "NodeNotReady",
            f"Node {name} status is now: {'NodeReady' if ready else 'NodeNotReady'}",
            component="node-controller",
        )
    c.put("/nodes", new)


def _remove_gone(c: Cluster, rt: Any, desired: dict[str, Any]) -> None:
    owned = c.sim.setdefault("_node_labels", {})
    for node in list(c.list("/nodes")):
        name = node["metadata"]["name"]
        if name not in desired:
            # PodGC: pods bound to a node that no longer exists are deleted
            for pod in c.list("/pods"):
                if (pod.get("spec") or {}).get("nodeName") == name:
                    c.record_event(
                        pod,
                        "NodeLost",
                        f"Node {name} which was running pod {pod['metadata']['name']} is gone",
                        "Warning",
                        component="pod-garbage-collector",
                    )
                    c.delete(c.type_by_gr("/pods"), pod["metadata"]["namespace"], pod["metadata"]["name"])
            c.delete(rt, "", name)
            owned.pop(name, None)
            lease_rt = c.type_by_gr("coordination.k8s.io/leases")
            if lease_rt and c.get(lease_rt.gr, "kube-node-lease", name) is not None:
                c.delete(lease_rt, "kube-node-lease", name)
