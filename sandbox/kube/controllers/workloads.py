"""kube-controller-manager, the parts a user of the product sees: Deployment → ReplicaSet → Pods,
DaemonSet, StatefulSet, Job, namespace termination; Services in services.py, PV/PVC binding in
volumes.py."""

from __future__ import annotations

from typing import Any

from ..admission import pod_template_hash
from ..store import Cluster, now_iso
from ..util import clone
from . import services, volumes
from .base import Ctx, children, create_pod, owner_ref, pod_active, pod_ready, set_condition, sim
from .scheduler import fit_reasons

Obj = dict[str, Any]
FAILED_POD_GC_SECONDS = 120.0  # failed pods owned by a ReplicaSet are cleaned after this


def run_workloads(c: Cluster, ctx: Ctx) -> None:
    # every object on its own: one that breaks its controller must not stop the others of its kind
    for ns in c.list("/namespaces"):
        if ns["metadata"].get("deletionTimestamp"):
            ctx.per_object(c, "namespace-controller", ns, c.finish_namespace, ns["metadata"]["name"])
    for d in c.list("apps/deployments"):
        ctx.per_object(c, "deployment-controller", d, _deployment, c, d)
    for rs in c.list("apps/replicasets"):
        ctx.per_object(c, "replicaset-controller", rs, _replicaset, c, ctx, rs)
    for ds in c.list("apps/daemonsets"):
        ctx.per_object(c, "daemonset-controller", ds, _daemonset, c, ds)
    for sts in c.list("apps/statefulsets"):
        ctx.per_object(c, "statefulset-controller", sts, _statefulset, c, sts)
    for job in c.list("batch/jobs"):
        ctx.per_object(c, "job-controller", job, _job, c, ctx, job)
    for svc in c.list("/services"):
        ctx.per_object(c, "service-controller", svc, services.reconcile, c, ctx, svc)
    volumes.run(c, ctx)


# ------------------------------------------------------------------ Deployment / ReplicaSet


def _deployment(c: Cluster, d: Obj) -> None:
    spec = d.get("spec") or {}
    tpl = spec.get("template") or {}
    h = pod_template_hash(tpl)
    rss = children(c, "apps/replicasets", d)
    want = int(spec.get("replicas", 1))
    if spec.get("paused"):
        return
    current = next((r for r in rss if (r["metadata"].get("labels") or {}).get("pod-template-hash") == h), None)
    rt = c.type_by_gr("apps/replicasets")
    assert rt is not None
    if current is None:
        t = clone(tpl)
        t.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = h
        sel = clone(spec.get("selector") or {})
        sel.setdefault("matchLabels", {})["pod-template-hash"] = h
        name = f"{d['metadata']['name']}-{h}"
        rev = 1 + max(
            [int((r["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", 0)) for r in rss]
            or [0]
        )
        current = c.create(
            rt,
            {
                "metadata": {
                    "name": name,
                    "labels": dict(t["metadata"]["labels"]),
                    "annotations": {
                        "deployment.kubernetes.io/desired-replicas": str(want),
                        "deployment.kubernetes.io/max-replicas": str(want),
                        "deployment.kubernetes.io/revision": str(rev),
                    },
                    "ownerReferences": [owner_ref(d)],
                },
                "spec": {
                    "replicas": want,
                    "selector": sel,
                    "template": t,
                    "minReadySeconds": spec.get("minReadySeconds", 0),
                },
            },
            d["metadata"]["namespace"],
        )
        c.record_event(
            d, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {want}", component="deployment-controller"
        )
    elif int(current["spec"].get("replicas", 0)) != want:
        new = clone(current)
        old_n = int(current["spec"].get("replicas", 0))
        new["spec"]["replicas"] = want
        c.put("apps/replicasets", new)
        c.record_event(
            d,
            "ScalingReplicaSet",
            f"Scaled {'up' if want > old_n else 'down'} replica set "
            f"{current['metadata']['name']} from {old_n} to {want}",
            component="deployment-controller",
        )
    # rollout: old ReplicaSets go to zero once the new one is available (simplified surge)
    cur_status = (c.get("apps/replicasets", d["metadata"]["namespace"], current["metadata"]["name"]) or current).get(
        "status"
    ) or {}
    new_ready = int(cur_status.get("availableReplicas", 0)) >= want
    for r in rss:
        if r["metadata"]["uid"] != current["metadata"]["uid"] and int(r["spec"].get("replicas", 0)) and new_ready:
            new = clone(r)
            n0 = int(r["spec"]["replicas"])
            new["spec"]["replicas"] = 0
            c.put("apps/replicasets", new)
            c.record_event(
                d,
                "ScalingReplicaSet",
                f"Scaled down replica set {r['metadata']['name']} from {n0} to 0",
                component="deployment-controller",
            )
    rss = children(c, "apps/replicasets", d)
    total = sum(int((r.get("status") or {}).get("replicas", 0)) for r in rss)
    ready = sum(int((r.get("status") or {}).get("readyReplicas", 0)) for r in rss)
    avail = sum(int((r.get("status") or {}).get("availableReplicas", 0)) for r in rss)
    cur = c.get("apps/replicasets", d["metadata"]["namespace"], current["metadata"]["name"]) or current
    updated = int((cur.get("status") or {}).get("replicas", 0))
    st = clone(d.get("status") or {})
    st.update(
        {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": avail,
            "unavailableReplicas": max(total - avail, 0),
        }
    )
    for k in ("readyReplicas", "availableReplicas", "unavailableReplicas", "updatedReplicas", "replicas"):
        if st[k] == 0:
            st.pop(k)
    conds = st.get("conditions") or []
    if avail >= want:
        conds = set_condition(
            conds,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            with_probe=True,
        )
    else:
        conds = set_condition(
            conds,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            with_probe=True,
        )
    if updated >= want and avail >= want:
        conds = set_condition(
            conds,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "{cur["metadata"]["name"]}" has successfully progressed.',
            with_probe=True,
        )
    else:
        conds = set_condition(
            conds,
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            f'ReplicaSet "{cur["metadata"]["name"]}" is progressing.',
            with_probe=True,
        )
    st["conditions"] = sorted(conds, key=lambda x: x["type"])
    c.put_status("apps/deployments", d, st)


def _replicaset(c: Cluster, ctx: Ctx, rs: Obj) -> None:
    spec = rs.get("spec") or {}
    want = int(spec.get("replicas", 1))
    pods = [p for p in children(c, "/pods", rs)]
    active = [p for p in pods if pod_active(p)]
    for p in pods:
        if (p.get("status") or {}).get("phase") == "Failed":
            s = sim(c, p)
            s.setdefault("t_failed", ctx.now)
            if ctx.elapsed(s["t_failed"]) > FAILED_POD_GC_SECONDS:
                c.delete(c.type_by_gr("/pods"), p["metadata"]["namespace"], p["metadata"]["name"])
    if len(active) < want:
        for _ in range(want - len(active)):
            pod = create_pod(c, rs, spec.get("template") or {})
            if pod:
                c.record_event(
                    rs, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", component="replicaset-controller"
                )
    elif len(active) > want:
        # delete not-ready / newest pods first, like the real controller
        victims = sorted(active, key=lambda p: (pod_ready(p), p["metadata"]["creationTimestamp"]))[: len(active) - want]
        for p in victims:
            c.delete(c.type_by_gr("/pods"), p["metadata"]["namespace"], p["metadata"]["name"])
            c.record_event(
                rs, "SuccessfulDelete", f"Deleted pod: {p['metadata']['name']}", component="replicaset-controller"
            )
    active = [p for p in children(c, "/pods", rs) if pod_active(p)]
    ready = sum(1 for p in active if pod_ready(p))
    labels = (spec.get("template") or {}).get("metadata", {}).get("labels") or {}
    st = {
        "replicas": len(active),
        "fullyLabeledReplicas": sum(
            1 for p in active if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        ),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"].get("generation", 1),
    }
    for k in ("readyReplicas", "availableReplicas", "fullyLabeledReplicas"):
        if st[k] == 0:
            st.pop(k)
    c.put_status("apps/replicasets", rs, st)


# ------------------------------------------------------------------ DaemonSet / StatefulSet


def _daemonset(c: Cluster, ds: Obj) -> None:
    spec = ds.get("spec") or {}
    tpl = spec.get("template") or {}
    pods = children(c, "/pods", ds)
    by_node = {(p.get("spec") or {}).get("nodeName"): p for p in pods if pod_active(p)}
    wanted = []
    for node in c.list("/nodes"):
        tols = list((tpl.get("spec") or {}).get("tolerations") or []) + [
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
        ]
        probe = {"spec": dict(tpl.get("spec") or {}, tolerations=tols)}
        reasons = [r for r in fit_reasons(probe, node, {}) if not r.startswith(("Insufficient", "Too many"))]
        if not reasons:
            wanted.append(node["metadata"]["name"])
    for name in wanted:
        if name not in by_node:
            t = clone(tpl)
            t.setdefault("spec", {})["nodeName"] = name
            t["spec"]["tolerations"] = list(t["spec"].get("tolerations") or []) + [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
            ]
            pod = create_pod(c, ds, t)
            if pod:
                c.record_event(
                    ds, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", component="daemonset-controller"
                )
    for node_name, p in by_node.items():
        if node_name not in wanted:
            c.delete(c.type_by_gr("/pods"), p["metadata"]["namespace"], p["metadata"]["name"])
    active = [p for p in children(c, "/pods", ds) if pod_active(p)]
    ready = sum(1 for p in active if pod_ready(p))
    c.put_status(
        "apps/daemonsets",
        ds,
        {
            "currentNumberScheduled": len(active),
            "desiredNumberScheduled": len(wanted),
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": len(active),
            "observedGeneration": ds["metadata"].get("generation", 1),
        },
    )


def _statefulset(c: Cluster, sts: Obj) -> None:
    spec = sts.get("spec") or {}
    want = int(spec.get("replicas", 1))
    name = sts["metadata"]["name"]
    ns = sts["metadata"]["namespace"]
    pods = {p["metadata"]["name"]: p for p in children(c, "/pods", sts)}
    ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    pvc_rt = c.type_by_gr("/persistentvolumeclaims")
    for i in range(want):
        pname = f"{name}-{i}"
        p = pods.get(pname)
        if p is not None and (p.get("status") or {}).get("phase") == "Failed":
            c.delete(c.type_by_gr("/pods"), ns, pname)
            p = None
        if p is None:
            for vct in spec.get("volumeClaimTemplates") or []:
                claim = f"{vct['metadata']['name']}-{pname}"
                if pvc_rt and c.get("/persistentvolumeclaims", ns, claim) is None:
                    c.create(
                        pvc_rt,
                        {
                            "metadata": {
                                "name": claim,
                                "labels": (spec.get("selector") or {}).get("matchLabels") or {},
                            },
                            "spec": clone(vct.get("spec") or {}),
                        },
                        ns,
                    )
            t = clone(spec.get("template") or {})
            vols = t.setdefault("spec", {}).setdefault("volumes", [])
            for vct in spec.get("volumeClaimTemplates") or []:
                vols.append(
                    {
                        "name": vct["metadata"]["name"],
                        "persistentVolumeClaim": {"claimName": f"{vct['metadata']['name']}-{pname}"},
                    }
                )
            if not vols:
                t["spec"].pop("volumes")
            pod = create_pod(
                c,
                sts,
                t,
                name=pname,
                hostname=pname,
                extra_labels={"statefulset.kubernetes.io/pod-name": pname, "apps.kubernetes.io/pod-index": str(i)},
            )
            if pod:
                c.record_event(
                    sts,
                    "SuccessfulCreate",
                    f"create Pod {pname} in StatefulSet {name} successful",
                    component="statefulset-controller",
                )
            if ordered:
                break
        elif ordered and not pod_ready(p):
            break
    for pname in pods:
        idx = pname.rsplit("-", 1)[-1]
        if idx.isdigit() and int(idx) >= want:
            c.delete(c.type_by_gr("/pods"), ns, pname)
    active = [p for p in children(c, "/pods", sts) if pod_active(p)]
    ready = sum(1 for p in active if pod_ready(p))
    st = {
        "replicas": len(active),
        "readyReplicas": ready,
        "currentReplicas": len(active),
        "updatedReplicas": len(active),
        "availableReplicas": ready,
        "observedGeneration": sts["metadata"].get("generation", 1),
        "collisionCount": 0,
    }
    c.put_status("apps/statefulsets", sts, st)


# ------------------------------------------------------------------ Job


def _job(c: Cluster, ctx: Ctx, job: Obj) -> None:
    spec = job.get("spec") or {}
    st = clone(job.get("status") or {})
    conds = st.get("conditions") or []
    if any(x.get("type") in ("Complete", "Failed") and x.get("status") == "True" for x in conds):
        _job_ttl(c, ctx, job)
        return
    pods = children(c, "/pods", job)
    succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
    failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
    # restartPolicy OnFailure: the kubelet restarts containers in place; each restart counts as a failure
    failed += sum(
        int(cs.get("restartCount", 0))
        for p in pods
        if (p.get("spec") or {}).get("restartPolicy") == "OnFailure"
        for cs in (p.get("status") or {}).get("containerStatuses") or []
    )
    active = [p for p in pods if pod_active(p)]
    completions = spec.get("completions")
    completions = 1 if completions is None else int(completions)
    parallelism = int(spec.get("parallelism", 1))
    backoff = int(spec.get("backoffLimit", 6))
    ts = now_iso()
    if spec.get("suspend"):
        for p in active:
            c.delete(c.type_by_gr("/pods"), p["metadata"]["namespace"], p["metadata"]["name"])
        conds = set_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended")
        c.put_status("batch/jobs", job, dict(st, conditions=conds, active=0))
        return
    st.setdefault("startTime", ts)
    if failed > backoff:
        for p in active:
            c.delete(c.type_by_gr("/pods"), p["metadata"]["namespace"], p["metadata"]["name"])
        conds = set_condition(
            conds, "FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        )
        conds = set_condition(
            conds, "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        )
        c.record_event(
            job,
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            "Warning",
            component="job-controller",
        )
        st.update({"conditions": conds, "failed": failed, "active": 0, "ready": 0})
        st.pop("active")
        c.put_status("batch/jobs", job, st)
        return
    if succeeded >= completions:
        conds = set_condition(
            conds, "SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"
        )
        conds = set_condition(
            conds, "Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"
        )
        st.update({"conditions": conds, "succeeded": succeeded, "completionTime": ts, "ready": 0})
        st.pop("active", None)
        if failed:
            st["failed"] = failed
        c.record_event(job, "Completed", "Job completed", component="job-controller")
        c.put_status("batch/jobs", job, st)
        return
    need = min(parallelism, completions - succeeded) - len(active)
    for _ in range(max(need, 0)):
        pod = create_pod(c, job, spec.get("template") or {})
        if pod:
            c.record_event(
                job, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", component="job-controller"
            )
    active = [p for p in children(c, "/pods", job) if pod_active(p)]
    st.update({"active": len(active), "ready": sum(1 for p in active if pod_ready(p)), "uncountedTerminatedPods": {}})
    if succeeded:
        st["succeeded"] = succeeded
    if failed:
        st["failed"] = failed
    if not st["active"]:
        st.pop("active")
    c.put_status("batch/jobs", job, st)


def _job_ttl(c: Cluster, ctx: Ctx, job: Obj) -> None:
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None:
        return
    s = sim(c, job)
    s.setdefault("t_finished", ctx.now)
    if ctx.elapsed(s["t_finished"]) >= float(ttl):
        c.delete(c.type_by_gr("batch/jobs"), job["metadata"]["namespace"], job["metadata"]["name"])
