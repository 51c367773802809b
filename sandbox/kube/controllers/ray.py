"""KubeRay operator: RayCluster → head/worker pods + head Service; RayJob → RayCluster + a submitter
batch Job (K8sJobMode) that submits the Ray job (ray_driver.py) and follows its log.

RayJob as KubeRay's rayjob_controller does it: jobDeploymentStatus New → Initializing (cluster
created, waiting for it to be ready) → Running (submitter created) → Complete / Failed once the Ray job
is terminal *and* the submitter has finished (reason AppFailed when the entrypoint failed,
SubmissionFailed when the submitter Job exhausted its backoffLimit, DeadlineExceeded after
activeDeadlineSeconds); `spec.backoffLimit` retries (Retrying → a new cluster); `jobStatus` is the Ray
job's (PENDING, RUNNING, SUCCEEDED, FAILED) and `message` Ray's. After the job,
`shutdownAfterJobFinishes` deletes the RayCluster once `ttlSecondsAfterFinished` has passed (the
submitter Job stays, for the driver's logs). Active while the `kuberay-operator` add-on is set or a
`kuberay-operator` Deployment exists (Helm install).
"""

from __future__ import annotations

from typing import Any

from ..operators import KUBERAY, operator_active
from ..store import Cluster, now_iso, rand_suffix
from ..util import clone
from . import hangs, ray_driver
from .base import (
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
JOB_COMPONENT = "rayjob-controller"
DASHBOARD_PORT = 8265


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
    if spec.get("suspend") and dep not in ("Suspended", "Suspending"):
        dep = st["jobDeploymentStatus"] = "Suspending"
    if dep in ("Suspending", "Retrying"):
        _release(c, ctx, rj, st)
        if dep == "Suspending":
            st["jobDeploymentStatus"] = "Suspended"
        else:
            st["jobDeploymentStatus"] = ""
        c.put_status(RJ_GR, rj, st)
        return
    if dep == "Suspended":
        if not spec.get("suspend"):
            st.update({"jobStatus": "", "jobDeploymentStatus": ""})
            c.put_status(RJ_GR, rj, st)
        return
    if not dep:
        if not spec.get("rayClusterSpec") and not (spec.get("clusterSelector") or {}).get("ray.io/cluster"):
            st.update(
                {
                    "jobDeploymentStatus": "ValidationFailed",
                    "reason": "ValidationFailed",
                    "message": "one of RayClusterSpec or ClusterSelector must be set",
                }
            )
            c.record_event(rj, "InvalidRayJobSpec", st["message"], "Warning", component=JOB_COMPONENT)
            c.put_status(RJ_GR, rj, st)
            return
        selector = (spec.get("clusterSelector") or {}).get("ray.io/cluster")
        st.update(
            {
                "jobId": spec.get("jobId") or f"{name}-{rand_suffix(5)}",
                "rayClusterName": selector or f"{name}-{rand_suffix(5)}",
                "jobStatus": "",
                "jobDeploymentStatus": "Initializing",
                "startTime": now_iso(),
                "observedGeneration": rj["metadata"].get("generation", 1),
            }
        )
        s["t_start"] = ctx.now
        s["attempt"] = int(st.get("failed", 0) or 0)
        hangs.adopt_pending(c, rj)
        hangs.begin_attempt(c, rj)
        c.put_status(RJ_GR, rj, st)
        return
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and ctx.elapsed(s.get("t_start", ctx.now)) > float(deadline):
        st.update(
            {
                "jobDeploymentStatus": "Failed",
                "reason": "DeadlineExceeded",
                "message": f"The RayJob has passed the activeDeadlineSeconds. StartTime: {st.get('startTime')}. "
                f"ActiveDeadlineSeconds: {deadline}",
            }
        )
        ray_driver.forget(c, rj, ctx)
        _terminal(c, ctx, rj, st, s)
        return
    rc = _ensure_cluster(c, rj, st)
    if rc is None:
        c.put_status(RJ_GR, rj, st)
        return
    st["rayClusterStatus"] = {
        k: v
        for k, v in (rc.get("status") or {}).items()
        if k
        in ("state", "desiredWorkerReplicas", "readyWorkerReplicas", "availableWorkerReplicas", "head", "endpoints")
    }
    if dep == "Initializing":
        if (rc.get("status") or {}).get("state") != "ready":
            c.put_status(RJ_GR, rj, st)
            return
        st["dashboardURL"] = f"{st['rayClusterName']}-head-svc.{ns}.svc.cluster.local:{DASHBOARD_PORT}"
        _ensure_submitter(c, rj, st, rc)
        st["jobDeploymentStatus"] = "Running"
        c.put_status(RJ_GR, rj, st)
        return
    # Running: the submitter submits the Ray job and follows its log; the dashboard has its status
    submitter = c.get("batch/jobs", ns, name)
    head = _head_pod(c, rc)
    workers = int((rc.get("status") or {}).get("desiredWorkerReplicas", 0) or 0)
    sub_pods = children(c, "/pods", submitter) if submitter else []
    for p in sub_pods:
        ps = sim(c, p)
        if ps.get("log") != "ray-submit":
            ps.update(
                {
                    "log": "ray-submit",
                    "ctx": {
                        "rayjob_uid": rj["metadata"]["uid"],
                        "job_id": st["jobId"],
                        "address": f"http://{st['dashboardURL']}",
                        "job": name,
                    },
                }
            )
    if not s.get("driver") and any((p.get("status") or {}).get("phase") == "Running" for p in sub_pods):
        ray_driver.submit(c, ctx, rj, head, workers)
    ray_driver.advance(c, ctx, rj, head is not None and not _restarted_since_submit(c, head, s))
    driver = s.get("driver") or {}
    if driver:
        st["jobStatus"] = driver["status"]
        st["message"] = driver["message"] or st.get("message", "")
        info = {"startTime": _iso_ms(driver["start_ms"])}
        if driver.get("end_ms"):
            info["endTime"] = _iso_ms(driver["end_ms"])
        st["rayJobInfo"] = info
    elif submitter is not None:
        st["jobStatus"] = st.get("jobStatus") or ""
    sconds = {x.get("type"): x.get("status") for x in ((submitter or {}).get("status") or {}).get("conditions") or []}
    finished = sconds.get("Complete") == "True" or sconds.get("Failed") == "True"
    if sconds.get("Failed") == "True":
        st["jobDeploymentStatus"] = "Failed"
        if st.get("jobStatus") == "FAILED":
            st["reason"] = "AppFailed"
        else:
            st["reason"] = "SubmissionFailed"
            st["message"] = (
                "Job submission has failed. Reason: BackoffLimitExceeded. Message: Job has reached the specified "
                "backoff limit"
            )
        _terminal(c, ctx, rj, st, s)
        return
    if finished and st.get("jobStatus") in ("SUCCEEDED", "FAILED", "STOPPED"):
        if st["jobStatus"] == "FAILED":
            st.update({"jobDeploymentStatus": "Failed", "reason": "AppFailed"})
        else:
            st.update({"jobDeploymentStatus": "Complete", "reason": ""})
        _terminal(c, ctx, rj, st, s)
        return
    if finished and not driver:
        st.update(
            {
                "jobDeploymentStatus": "Failed",
                "reason": "AppFailed",
                "message": "Submitter completed but Ray job not found in RayCluster.",
            }
        )
        _terminal(c, ctx, rj, st, s)
        return
    c.put_status(RJ_GR, rj, st)


def _iso_ms(ms: int) -> str:
    import time as _t

    return _t.strftime("%Y-%m-%dT%H:%M:%SZ", _t.gmtime(ms / 1000))


def _head_pod(c: Cluster, rc: Obj) -> Obj | None:
    for p in children(c, "/pods", rc):
        if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head" and pod_active(p):
            return p
    return None


def _restarted_since_submit(c: Cluster, head: Obj, s: dict[str, Any]) -> bool:
    """The head's Ray processes (and the GCS with the job) died after the job was submitted."""
    restarts = int(sim(c, head).get("restarts", 0))
    known = s.setdefault("head_restarts", {"uid": head["metadata"]["uid"], "n": restarts})
    return known["uid"] != head["metadata"]["uid"] or restarts > int(known["n"])


def _ensure_cluster(c: Cluster, rj: Obj, st: Obj) -> Obj | None:
    ns = rj["metadata"]["namespace"]
    rc = c.get(RC_GR, ns, st.get("rayClusterName", ""))
    if rc is not None:
        return rc
    spec = rj.get("spec") or {}
    if (spec.get("clusterSelector") or {}).get("ray.io/cluster"):
        c.record_event(
            rj,
            "RayClusterNotFound",
            f"RayCluster {ns}/{st['rayClusterName']} set in the clusterSelector is not found. "
            "It must be created manually",
            "Warning",
            component=JOB_COMPONENT,
        )
        return None
    rc_rt = c.type_by_gr(RC_GR)
    assert rc_rt is not None
    rc = c.create(
        rc_rt,
        {
            "metadata": {
                "name": st["rayClusterName"],
                "labels": {
                    "ray.io/originated-from-crd": "RayJob",
                    "ray.io/originated-from-cr-name": rj["metadata"]["name"],
                },
                "ownerReferences": [owner_ref(rj)],
            },
            "spec": clone(spec.get("rayClusterSpec") or {}),
        },
        ns,
    )
    c.record_event(rj, "CreatedRayCluster", f"Created RayCluster {ns}/{st['rayClusterName']}", component=JOB_COMPONENT)
    return rc


def _submit_command(rj: Obj, st: Obj) -> str:
    """KubeRay's K8sJobMode submitter: wait for the dashboard, submit once, follow the logs."""
    address = f"http://{st['dashboardURL']}"
    job_id = st["jobId"]
    entry = str((rj.get("spec") or {}).get("entrypoint", "")).strip()
    health = f"python3 -c \"import urllib.request; urllib.request.urlopen('{address}/api/gcs_healthz', timeout=5)\""
    return (
        f"until {health} >/dev/null 2>&1 ; do "
        f'echo "Waiting for Ray Dashboard GCS to become healthy at {address} ..." ; '
        f"sleep 2 ; done ; if ! ray job status --address {address} {job_id} >/dev/null 2>&1 ; then "
        f"ray job submit --address {address} --no-wait --submission-id {job_id} -- {entry} ; fi ; "
        f"ray job logs --address {address} --follow {job_id}"
    )


def _ensure_submitter(c: Cluster, rj: Obj, st: Obj, rc: Obj) -> None:
    ns, name = rj["metadata"]["namespace"], rj["metadata"]["name"]
    if c.get("batch/jobs", ns, name) is not None:
        return
    spec = rj.get("spec") or {}
    head_tpl = ((rc.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
    image = next(
        (x.get("image") for x in (head_tpl.get("spec") or {}).get("containers") or []), "rayproject/ray:2.41.0"
    )
    tpl = clone(
        spec.get("submitterPodTemplate")
        or {
            "spec": {
                "containers": [
                    {
                        "name": "ray-job-submitter",
                        "image": image,
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "200Mi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                    }
                ]
            }
        }
    )
    tpl.setdefault("spec", {})["restartPolicy"] = "Never"
    for ct in tpl["spec"].get("containers") or []:
        if not ct.get("command"):
            ct["command"] = ["/bin/bash", "-ce", "--"]
            ct["args"] = [_submit_command(rj, st)]
        env = ct.setdefault("env", [])
        env += [
            {"name": "RAY_DASHBOARD_ADDRESS", "value": st["dashboardURL"]},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": st["jobId"]},
        ]
    job_rt = c.type_by_gr("batch/jobs")
    assert job_rt is not None
    c.create(
        job_rt,
        {
            "metadata": {
                "name": name,
                "labels": {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": name},
                "ownerReferences": [owner_ref(rj)],
            },
            "spec": {"backoffLimit": int((spec.get("submitterConfig") or {}).get("backoffLimit", 2)), "template": tpl},
        },
        ns,
    )
    c.record_event(rj, "CreatedRayJobSubmitter", f"Created Kubernetes Job {ns}/{name}", component=JOB_COMPONENT)


def _release(c: Cluster, ctx: Ctx, rj: Obj, st: Obj) -> None:
    """Suspending / Retrying: the cluster and the submitter go; the Ray job's status is reset."""
    ns, name = rj["metadata"]["namespace"], rj["metadata"]["name"]
    rc = c.get(RC_GR, ns, st.get("rayClusterName", ""))
    if rc is not None and not (rj.get("spec") or {}).get("clusterSelector"):
        rt = c.type_by_gr(RC_GR)
        assert rt is not None
        c.delete(rt, ns, rc["metadata"]["name"])
        c.record_event(
            rj, "DeletedRayCluster", f"Deleted cluster {ns}/{rc['metadata']['name']}", component=JOB_COMPONENT
        )
    if c.get("batch/jobs", ns, name) is not None:
        rt = c.type_by_gr("batch/jobs")
        assert rt is not None
        c.delete(rt, ns, name)
        c.record_event(rj, "DeletedRayJobSubmitter", f"Deleted submitter K8s Job {ns}/{name}", component=JOB_COMPONENT)
    ray_driver.forget(c, rj, ctx)
    for k in ("rayClusterStatus", "rayClusterName", "dashboardURL", "jobId", "message", "reason", "rayJobInfo"):
        st.pop(k, None)
    st["jobStatus"] = ""


def _terminal(c: Cluster, ctx: Ctx, rj: Obj, st: Obj, s: dict[str, Any]) -> None:
    """Failed / Complete: count it; a failure within spec.backoffLimit is retried on a new cluster."""
    name = rj["metadata"]["name"]
    failed = int(st.get("failed", 0) or 0) + (st["jobDeploymentStatus"] == "Failed")
    succeeded = int(st.get("succeeded", 0) or 0) + (
        st["jobDeploymentStatus"] == "Complete" and st.get("jobStatus") == "SUCCEEDED"
    )
    st["failed"], st["succeeded"] = failed, succeeded
    limit = (rj.get("spec") or {}).get("backoffLimit")
    if (
        st["jobDeploymentStatus"] == "Failed"
        and limit is not None
        and failed < int(limit) + 1
        and st.get("reason") not in ("DeadlineExceeded", "JobStatusCheckTimeoutExceeded")
    ):
        st["jobDeploymentStatus"] = "Retrying"
        c.put_status(RJ_GR, rj, st)
        return
    st["endTime"] = now_iso()
    s["t_finished"] = ctx.now
    if st["jobDeploymentStatus"] == "Complete":
        c.record_event(rj, "Completed", f"RayJob {name} has completed", component=JOB_COMPONENT)
    else:
        c.record_event(
            rj, "Failed", f"RayJob {name} has failed: {st.get('reason')}", "Warning", component=JOB_COMPONENT
        )
    c.put_status(RJ_GR, rj, st)


def _job_cleanup(c: Cluster, ctx: Ctx, rj: Obj, st: Obj, s: dict[str, Any]) -> None:
    spec = rj.get("spec") or {}
    if not spec.get("shutdownAfterJobFinishes") or (spec.get("clusterSelector") or {}).get("ray.io/cluster"):
        return
    ttl = float(spec.get("ttlSecondsAfterFinished", 0) or 0)
    if ctx.elapsed(s.get("t_finished", ctx.now)) < ttl:
        return
    ns = rj["metadata"]["namespace"]
    rc = c.get(RC_GR, ns, st.get("rayClusterName", ""))
    owners = (rc or {}).get("metadata", {}).get("ownerReferences") or []
    if rc is not None and any(r.get("uid") == rj["metadata"]["uid"] for r in owners):
        rt = c.type_by_gr(RC_GR)
        assert rt is not None
        c.delete(rt, ns, rc["metadata"]["name"])
        c.record_event(
            rj, "DeletedRayCluster", f"Deleted cluster {ns}/{rc['metadata']['name']}", component=JOB_COMPONENT
        )
