"""KubeRay operator: RayCluster → head/worker pods + head Service; RayJob → RayCluster + a submitter
batch Job (K8sJobMode) whose completion decides jobStatus.

Active while the `kuberay-operator` add-on is set or a `kuberay-operator` Deployment exists
(Helm install). The run time of the entrypoint is the RayJob's
`sandbox.instantstart.io/run-seconds` annotation (default 60 simulated seconds).
"""

from __future__ import annotations

from typing import Any

from ..operators import KUBERAY, operator_active
from ..store import Cluster, now_iso, rand_suffix
from ..util import clone
from .base import (
    ANN_EXIT_CODE,
    ANN_RUN_SECONDS,
    Ctx,
    children,
    create_pod,
    owner_ref,
    pod_active,
    pod_ready,
    set_condition,
    sim,
)

Obj = dict[str, Any]
RC_GR = "ray.io/rayclusters"
RJ_GR = "ray.io/rayjobs"
COMPONENT = "raycluster-controller"
DEFAULT_RUN_SECONDS = 60.0


def run(c: Cluster, ctx: Ctx) -> None:
    if c.type_by_gr(RC_GR) is None or not operator_active(c, KUBERAY):
        return
    for rc in c.list(RC_GR):
        _cluster(c, ctx, rc)
    if c.type_by_gr(RJ_GR) is not None:
        for rj in c.list(RJ_GR):
            _job(c, ctx, rj)


def _cluster(c: Cluster, ctx: Ctx, rc: Obj) -> None:
    name = rc["metadata"]["name"]
    ns = rc["metadata"]["namespace"]
    spec = rc.get("spec") or {}
    if spec.get("suspend"):
        return
    pods = children(c, "/pods", rc)
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    for p in pods:
        if (p.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            c.delete(pod_rt, ns, p["metadata"]["name"])
    pods = [p for p in children(c, "/pods", rc) if pod_active(p)]
    base = {
        "ray.io/cluster": name,
        "ray.io/is-ray-node": "yes",
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/name": "kuberay",
    }
    head_svc = f"{name}-head-svc"
    heads = [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head"]
    if not heads:
        tpl = clone((spec.get("headGroupSpec") or {}).get("template") or {})
        create_pod(
            c,
            rc,
            tpl,
            name=f"{name}-head-{rand_suffix()}",
            extra_labels=dict(base, **{"ray.io/node-type": "head", "ray.io/group": "headgroup"}),
            sim_state={"run_s": None, "exit": 0, "log": "ray-head", "ctx": {"cluster": name}},
        )
    svc_rt = c.type_by_gr("/services")
    if svc_rt and c.get("/services", ns, head_svc) is None:
        c.create(
            svc_rt,
            {
                "metadata": {
                    "name": head_svc,
                    "labels": dict(base, **{"ray.io/node-type": "head"}),
                    "ownerReferences": [owner_ref(rc)],
                },
                "spec": {
                    "selector": {"ray.io/cluster": name, "ray.io/node-type": "head"},
                    "ports": [
                        {"name": "client", "port": 10001},
                        {"name": "dashboard", "port": 8265},
                        {"name": "gcs-server", "port": 6379},
                        {"name": "metrics", "port": 8080},
                        {"name": "serve", "port": 8000},
                    ],
                },
            },
            ns,
        )
    desired_workers = 0
    min_w = max_w = 0
    for g in spec.get("workerGroupSpecs") or []:
        group = g.get("groupName", "workers")
        want = int(g.get("replicas", g.get("minReplicas", 0)) or 0) * int(g.get("numOfHosts", 1) or 1)
        desired_workers += want
        min_w += int(g.get("minReplicas", 0) or 0)
        max_w += int(g.get("maxReplicas", want) or 0)
        mine = [
            p
            for p in pods
            if (p["metadata"].get("labels") or {}).get("ray.io/group") == group
            and (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "worker"
        ]
        for _ in range(want - len(mine)):
            create_pod(
                c,
                rc,
                clone(g.get("template") or {}),
                name=f"{name}-{group}-worker-{rand_suffix()}",
                extra_labels=dict(base, **{"ray.io/node-type": "worker", "ray.io/group": group}),
                sim_state={"run_s": None, "exit": 0, "log": "ray-worker", "ctx": {"head": head_svc}},
            )
        for p in mine[want:] if len(mine) > want else []:
            c.delete(pod_rt, ns, p["metadata"]["name"])
    pods = [p for p in children(c, "/pods", rc) if pod_active(p)]
    head = next((p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head"), None)
    workers = [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "worker"]
    ready_w = sum(1 for p in workers if pod_ready(p))
    head_ready = head is not None and pod_ready(head)
    st = clone(rc.get("status") or {})
    svc = c.get("/services", ns, head_svc)
    st.update(
        {
            "desiredWorkerReplicas": desired_workers,
            "minWorkerReplicas": min_w,
            "maxWorkerReplicas": max_w,
            "readyWorkerReplicas": ready_w,
            "availableWorkerReplicas": ready_w,
            "observedGeneration": rc["metadata"].get("generation", 1),
            "endpoints": {"client": "10001", "dashboard": "8265", "gcs-server": "6379", "metrics": "8080"},
            "head": {
                "podName": head["metadata"]["name"] if head else "",
                "podIP": ((head or {}).get("status") or {}).get("podIP", ""),
                "serviceName": head_svc,
                "serviceIP": ((svc or {}).get("spec") or {}).get("clusterIP", ""),
            },
        }
    )
    conds = st.get("conditions") or []
    conds = set_condition(
        conds,
        "HeadPodReady",
        "True" if head_ready else "False",
        "HeadPodRunningAndReady" if head_ready else "HeadPodNotFound",
    )
    provisioned = head_ready and ready_w >= desired_workers
    conds = set_condition(
        conds,
        "RayClusterProvisioned",
        "True" if provisioned else "False",
        "AllPodRunningAndReadyFirstTime" if provisioned else "RayClusterPodsProvisioning",
    )
    st["conditions"] = conds
    if provisioned and st.get("state") != "ready":
        st["state"] = "ready"
        st.setdefault("stateTransitionTimes", {})["ready"] = now_iso()
        c.record_event(rc, "RayClusterReady", f"RayCluster {name} is ready", component=COMPONENT)
    st["lastUpdateTime"] = (
        st.get("lastUpdateTime")
        if st.get("state") == rc.get("status", {}).get("state") and st.get("lastUpdateTime")
        else now_iso()
    )
    c.put_status(RC_GR, rc, st)


def _job(c: Cluster, ctx: Ctx, rj: Obj) -> None:
    name = rj["metadata"]["name"]
    ns = rj["metadata"]["namespace"]
    spec = rj.get("spec") or {}
    st = clone(rj.get("status") or {})
    s = sim(c, rj)
    dep = st.get("jobDeploymentStatus", "")
    if dep in ("Complete", "Failed"):
        _job_cleanup(c, ctx, rj, st, s)
        return
    if spec.get("suspend"):
        if dep != "Suspended":
            st["jobDeploymentStatus"] = "Suspended"
            c.put_status(RJ_GR, rj, st)
        return
    rc_rt = c.type_by_gr(RC_GR)
    assert rc_rt is not None
    if not dep or dep in ("New", "Suspended"):
        st["jobId"] = spec.get("jobId") or f"{name}-{rand_suffix(5)}"
        selector = (spec.get("clusterSelector") or {}).get("ray.io/cluster")
        if selector:
            rc_name = selector
        else:
            rc_name = f"{name}-{rand_suffix(5)}"
            rcs = spec.get("rayClusterSpec")
            if not rcs:
                st.update(
                    {
                        "jobDeploymentStatus": "ValidationFailed",
                        "reason": "ValidationFailed",
                        "message": "one of RayClusterSpec or ClusterSelector must be set",
                    }
                )
                c.put_status(RJ_GR, rj, st)
                return
            c.create(
                rc_rt,
                {
                    "metadata": {
                        "name": rc_name,
                        "labels": {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": name},
                        "ownerReferences": [owner_ref(rj)],
                    },
                    "spec": clone(rcs),
                },
                ns,
            )
        st.update(
            {
                "rayClusterName": rc_name,
                "jobDeploymentStatus": "Initializing",
                "jobStatus": "PENDING",
                "startTime": now_iso(),
                "dashboardURL": f"{rc_name}-head-svc.{ns}.svc.cluster.local:8265",
                "observedGeneration": rj["metadata"].get("generation", 1),
            }
        )
        c.record_event(rj, "Created", f"Created RayCluster {ns}/{rc_name}", component="rayjob-controller")
        c.put_status(RJ_GR, rj, st)
        return
    rc = c.get(RC_GR, ns, st.get("rayClusterName", ""))
    if rc is None:
        st.update(
            {
                "jobDeploymentStatus": "Failed",
                "jobStatus": "FAILED",
                "reason": "AppFailed",
                "message": f"RayCluster {st.get('rayClusterName')} not found",
                "endTime": now_iso(),
            }
        )
        c.put_status(RJ_GR, rj, st)
        return
    st["rayClusterStatus"] = {
        k: v
        for k, v in (rc.get("status") or {}).items()
        if k in ("state", "desiredWorkerReplicas", "readyWorkerReplicas", "head", "endpoints")
    }
    if (rc.get("status") or {}).get("state") != "ready":
        c.put_status(RJ_GR, rj, st)
        return
    job_rt = c.type_by_gr("batch/jobs")
    assert job_rt is not None
    submitter = c.get("batch/jobs", ns, name)
    head_tpl = ((rc.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
    image = next(
        (x.get("image") for x in (head_tpl.get("spec") or {}).get("containers") or []), "rayproject/ray:2.41.0"
    )
    ann = rj["metadata"].get("annotations") or {}
    if submitter is None:
        entry = spec.get("entrypoint", "")
        tpl = clone(
            spec.get("submitterPodTemplate")
            or {
                "spec": {
                    "containers": [
                        {
                            "name": "ray-job-submitter",
                            "image": image,
                            "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}},
                        }
                    ]
                }
            }
        )
        tpl.setdefault("spec", {})["restartPolicy"] = "Never"
        for ct in tpl["spec"].get("containers") or []:
            ct.setdefault(
                "command",
                [
                    "ray",
                    "job",
                    "submit",
                    "--address",
                    f"http://{st['rayClusterName']}-head-svc.{ns}.svc.cluster.local:8265",
                    "--submission-id",
                    st["jobId"],
                    "--",
                    entry,
                ],
            )
        tpl.setdefault("metadata", {}).setdefault("annotations", {}).update(
            {
                ANN_RUN_SECONDS: ann.get(ANN_RUN_SECONDS, str(DEFAULT_RUN_SECONDS)),
                ANN_EXIT_CODE: ann.get(ANN_EXIT_CODE, "0"),
            }
        )
        c.create(
            job_rt,
            {
                "metadata": {
                    "name": name,
                    "labels": {"ray.io/originated-from-crd": "RayJob"},
                    "ownerReferences": [owner_ref(rj)],
                },
                "spec": {
                    "backoffLimit": int((spec.get("submitterConfig") or {}).get("backoffLimit", 2)),
                    "template": tpl,
                },
            },
            ns,
        )
        st.update({"jobDeploymentStatus": "Running", "jobStatus": "PENDING"})
        c.put_status(RJ_GR, rj, st)
        return
    # steer the submitter pods' simulation: ray-submit log style with the entrypoint
    for p in children(c, "/pods", submitter):
        ps = sim(c, p)
        if ps.get("log") != "ray-submit":
            ps.update(
                {
                    "log": "ray-submit",
                    "ctx": {
                        "job_id": st["jobId"],
                        "entrypoint": spec.get("entrypoint", ""),
                        "head": f"{st['rayClusterName']}-head-svc",
                        "job": name,
                        "world_size": 1,
                    },
                }
            )
    sconds = {x.get("type"): x.get("status") for x in (submitter.get("status") or {}).get("conditions") or []}
    if sconds.get("Complete") == "True":
        st.update(
            {
                "jobStatus": "SUCCEEDED",
                "jobDeploymentStatus": "Complete",
                "endTime": now_iso(),
                "message": "Job finished successfully.",
                "succeeded": 1,
            }
        )
        s["t_finished"] = ctx.now
        c.record_event(rj, "Completed", f"RayJob {name} succeeded", component="rayjob-controller")
    elif sconds.get("Failed") == "True":
        st.update(
            {
                "jobStatus": "FAILED",
                "jobDeploymentStatus": "Failed",
                "endTime": now_iso(),
                "reason": "AppFailed",
                "message": "Job entrypoint command failed",
                "failed": 1,
            }
        )
        s["t_finished"] = ctx.now
        c.record_event(rj, "Failed", f"RayJob {name} failed", "Warning", component="rayjob-controller")
    elif any((p.get("status") or {}).get("phase") == "Running" for p in children(c, "/pods", submitter)):
        st["jobStatus"] = "RUNNING"
    c.put_status(RJ_GR, rj, st)


def _job_cleanup(c: Cluster, ctx: Ctx, rj: Obj, st: Obj, s: dict[str, Any]) -> None:
    spec = rj.get("spec") or {}
    if not spec.get("shutdownAfterJobFinishes"):
        return
    ttl = float(spec.get("ttlSecondsAfterFinished", 0) or 0)
    if ctx.elapsed(s.get("t_finished", ctx.now)) < ttl:
        return
    rc = c.get(RC_GR, rj["metadata"]["namespace"], st.get("rayClusterName", ""))
    owners = (rc or {}).get("metadata", {}).get("ownerReferences") or []
    if rc is not None and any(r.get("uid") == rj["metadata"]["uid"] for r in owners):
        rt = c.type_by_gr(RC_GR)
        assert rt is not None
        c.delete(rt, rj["metadata"]["namespace"], rc["metadata"]["name"])
