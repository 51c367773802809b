"""HyperPod training operator: HyperPodPyTorchJob → pods per replica → Running → Succeeded,
with the restart policy applied when a pod fails (pod-level restarts, full-job restarts,
jobMaxRetryCount).

Simplifications (documented in sandbox/kube/README.md):
- `runPolicy.jobMaxRetryCount` absent → 0 retries: the first fault fails the job.
- With `restartPolicy.numRestartBeforeFullJobRestart` = N > 0, the first N faults restart only
  the faulty pods; later ones restart the whole job. `maxFullJobRestarts` bounds full restarts.
- Each attempt's pods run `sandbox.instantstart.io/run-seconds` simulated seconds (job or
  template annotation; default 300) and log one training step every 5 simulated seconds.
"""

from __future__ import annotations

import time
from typing import Any

from ..operators import HPJ_GR, TRAINING_ADDON, operator_active
from ..store import Cluster, now_iso
from ..util import clone
from .base import ANN_EXIT_CODE, ANN_RUN_SECONDS, Ctx, children, create_pod, pod_active, set_condition, sim
from .nodes import HEALTH_LABEL

Obj = dict[str, Any]
DEFAULT_RUN_SECONDS = 300.0
COMPONENT = "hyperpod-training-operator"
LBL_JOB = "sagemaker.amazonaws.com/job-name"
LBL_REPLICA = "sagemaker.amazonaws.com/replica-type"
LBL_INDEX = "sagemaker.amazonaws.com/replica-index"


def run(c: Cluster, ctx: Ctx) -> None:
    if c.type_by_gr(HPJ_GR) is None or not operator_active(c, TRAINING_ADDON):
        return
    for job in c.list(HPJ_GR):
        if not job["metadata"].get("deletionTimestamp"):
            reconcile(c, ctx, job)


def _desired(job: Obj) -> list[tuple[str, Obj, str, int]]:
    """(pod name, template, replica spec name, index) for every pod the job should have."""
    out = []
    for rs in (job.get("spec") or {}).get("replicaSpecs") or []:
        for i in range(int(rs.get("replicas", 1))):
            out.append(
                (f"{job['metadata']['name']}-{rs.get('name')}-{i}", rs.get("template") or {}, str(rs.get("name")), i)
            )
    return out


def _terminal(st: Obj) -> str | None:
    for cond in st.get("conditions") or []:
        if cond.get("type") in ("Succeeded", "Failed") and cond.get("status") == "True":
            return cond["type"]
    return None


def _nproc(job: Obj) -> int:
    v = (job.get("spec") or {}).get("nprocPerNode", 1)
    try:
        return int(v)
    except (TypeError, ValueError):
        return 8


def _set_phase(conds: list[Obj], phase: str, reason: str, message: str) -> list[Obj]:
    """Kubeflow-style conditions: the current one True, the other progress conditions False."""
    for other in ("Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"):
        if other != phase and any(x.get("type") == other for x in conds) and other != "Created":
            conds = set_condition(conds, other, "False", reason, message)
    return set_condition(conds, phase, "True", reason, message)


def reconcile(c: Cluster, ctx: Ctx, job: Obj) -> None:
    ns = job["metadata"]["namespace"]
    name = job["metadata"]["name"]
    spec = job.get("spec") or {}
    run_policy = spec.get("runPolicy") or {}
    st = clone(job.get("status") or {})
    s = sim(c, job)
    pods = {p["metadata"]["name"]: p for p in children(c, "/pods", job)}
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None

    done = _terminal(st)
    if done:
        _finished(c, ctx, job, pods, s, run_policy)
        return
    if run_policy.get("suspend"):
        for p in pods.values():
            c.delete(pod_rt, ns, p["metadata"]["name"])
        st["conditions"] = _set_phase(st.get("conditions") or [], "Suspended", "JobSuspended", "Job is suspended")
        c.put_status(HPJ_GR, job, st)
        return
    conds = st.get("conditions") or []
    if not conds:
        conds = set_condition(conds, "Created", "True", "JobCreated", f"HyperPodPyTorchJob {name} is created.")
        st["startTime"] = now_iso()
        s["t_start"] = ctx.now
        c.record_event(job, "JobCreated", f"Created HyperPodPyTorchJob {name}", component=COMPONENT)
    st.setdefault("restartCount", 0)

    deadline = run_policy.get("activeDeadlineSeconds")
    if deadline is not None and ctx.elapsed(s.get("t_start", ctx.now)) > float(deadline):
        _fail(c, job, st, conds, pods, "DeadlineExceeded", "Job was active longer than specified deadline")
        return

    desired = _desired(job)
    want = {d[0] for d in desired}
    # faults: a pod of this attempt failed, or vanished (node lost) after it was created
    faulty = [p for n, p in pods.items() if n in want and (p.get("status") or {}).get("phase") == "Failed"]
    # HyperPod resiliency: pods on a node that health checks marked Unschedulable* are moved off it
    unhealthy = {
        n["metadata"]["name"]
        for n in c.list("/nodes")
        if str((n["metadata"].get("labels") or {}).get(HEALTH_LABEL, "")).startswith("Unschedulable")
    }
    faulty += [
        p for n, p in pods.items() if n in want and pod_active(p) and (p.get("spec") or {}).get("nodeName") in unhealthy
    ]
    created = set(s.get("created") or [])
    vanished = [n for n in created if n not in pods]
    if faulty or vanished:
        _restart(c, ctx, job, st, conds, pods, faulty, vanished, run_policy)
        return

    ws = len(desired) * _nproc(job)
    master = desired[0][0] if desired else name
    ann = job["metadata"].get("annotations") or {}
    for idx, (pname, tpl, rname, i) in enumerate(desired):
        if pname in pods:
            continue
        t = _pod_template(tpl, job, master, ws, idx)
        tann = (t.get("metadata") or {}).get("annotations") or {}
        run_s = float(tann.get(ANN_RUN_SECONDS, ann.get(ANN_RUN_SECONDS, DEFAULT_RUN_SECONDS)))
        code = int(tann.get(ANN_EXIT_CODE, ann.get(ANN_EXIT_CODE, 0)) or 0)
        pod = create_pod(
            c,
            job,
            t,
            name=pname,
            hostname=pname,
            extra_labels={LBL_JOB: name, LBL_REPLICA: rname, LBL_INDEX: str(i), "training.kubeflow.org/job-name": name},
            sim_state={
                "run_s": run_s,
                "exit": code,
                "log": "training",
                "ctx": {"job": name, "world_size": ws, "rank": idx, "nproc": _nproc(job), "nnodes": len(desired)},
            },
        )
        if pod:
            created.add(pname)
            c.record_event(job, "SuccessfulCreatePod", f"Created pod: {pname}", component=COMPONENT)
    s["created"] = sorted(created)

    pods = {p["metadata"]["name"]: p for p in children(c, "/pods", job)}
    mine = [pods[n] for n in want if n in pods]
    phases = [(p.get("status") or {}).get("phase") for p in mine]
    if mine and len(mine) == len(want) and all(ph == "Succeeded" for ph in phases):
        conds = _set_phase(conds, "Succeeded", "JobSucceeded", f"HyperPodPyTorchJob {name} is successfully completed.")
        st["completionTime"] = now_iso()
        s["t_finished"] = ctx.now
        c.record_event(
            job, "JobSucceeded", f"HyperPodPyTorchJob {name} is successfully completed.", component=COMPONENT
        )
    elif mine and len(mine) == len(want) and all(ph in ("Running", "Succeeded") for ph in phases):
        if not any(x.get("type") == "Running" and x.get("status") == "True" for x in conds):
            conds = _set_phase(conds, "Running", "JobRunning", f"HyperPodPyTorchJob {name} is running.")
            c.record_event(job, "JobRunning", f"All {len(mine)} pods of {name} are running", component=COMPONENT)
    st["conditions"] = conds
    c.put_status(HPJ_GR, job, st)


def _pod_template(tpl: Obj, job: Obj, master: str, world_size: int, rank: int) -> Obj:
    t = clone(tpl)
    pspec = t.setdefault("spec", {})
    pspec.setdefault("restartPolicy", "Never")  # restarts are the operator's job, not the kubelet's
    env_add = [
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": "23456"},
        {"name": "WORLD_SIZE", "value": str(world_size)},
        {"name": "NODE_RANK", "value": str(rank)},
        {"name": "PET_NPROC_PER_NODE", "value": str(_nproc(job))},
        {"name": "JOB_NAME", "value": job["metadata"]["name"]},
    ]
    for ct in pspec.get("containers") or []:
        env = ct.setdefault("env", [])
        have = {e.get("name") for e in env}
        env.extend(e for e in env_add if e["name"] not in have)
    return t


def _restart(
    c: Cluster,
    ctx: Ctx,
    job: Obj,
    st: Obj,
    conds: list[Obj],
    pods: dict[str, Obj],
    faulty: list[Obj],
    vanished: list[str],
    run_policy: Obj,
) -> None:
    ns = job["metadata"]["namespace"]
    name = job["metadata"]["name"]
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    s = sim(c, job)
    ts = now_iso()
    faults = []
    for p in faulty:
        term = {}
        for cs in (p.get("status") or {}).get("containerStatuses") or []:
            term = (cs.get("state") or {}).get("terminated") or term
        if pod_active(p):  # still running, on a node marked unhealthy
            faults.append(
                {
                    "podName": p["metadata"]["name"],
                    "namespace": ns,
                    "nodeName": (p.get("spec") or {}).get("nodeName", ""),
                    "reason": "NodeUnhealthy",
                    "time": ts,
                }
            )
            continue
        faults.append(
            {
                "podName": p["metadata"]["name"],
                "namespace": ns,
                "nodeName": (p.get("spec") or {}).get("nodeName", ""),
                "exitCode": term.get("exitCode", 1),
                "reason": term.get("reason", "Error"),
                "time": ts,
            }
        )
    faults += [{"podName": n, "namespace": ns, "reason": "PodDeleted", "time": ts} for n in vanished]
    st["latestFaultyPodInstanceList"] = faults
    st["restartCount"] = int(st.get("restartCount", 0)) + 1
    max_retry = int(run_policy.get("jobMaxRetryCount", 0) or 0)
    names = ", ".join(f["podName"] for f in faults)
    for f in faults:
        c.record_event(
            job,
            "PodFailed",
            f"Pod {f['podName']} failed: {f['reason']} (exit code {f.get('exitCode', '-')})",
            "Warning",
            component=COMPONENT,
        )
    if st["restartCount"] > max_retry:
        st["restartCount"] = max_retry
        _fail(
            c,
            job,
            st,
            conds,
            pods,
            "MaxRetryCountExceeded",
            f"Job {name} failed: pod(s) {names} failed and jobMaxRetryCount ({max_retry}) is exhausted",
        )
        return
    rp = run_policy.get("restartPolicy") or {}
    rs = dict(st.get("restartStatus") or {})
    pod_level_budget = int(rp.get("numRestartBeforeFullJobRestart", 0) or 0)
    if int(rs.get("podLevelRestartCount", 0)) < pod_level_budget:
        kind = "PodLevelRestart"
        rs["podLevelRestartCount"] = int(rs.get("podLevelRestartCount", 0)) + 1
        victims = [f["podName"] for f in faults]
    else:
        kind = "FullJobRestart"
        rs["fullJobRestartCount"] = int(rs.get("fullJobRestartCount", 0)) + 1
        limit = rp.get("maxFullJobRestarts")
        if limit is not None and rs["fullJobRestartCount"] > int(limit):
            st["restartStatus"] = rs
            _fail(
                c,
                job,
                st,
                conds,
                pods,
                "MaxFullJobRestartsExceeded",
                f"Job {name} failed: maxFullJobRestarts ({limit}) exceeded",
            )
            return
        victims = list(pods)
    rs.update({"lastRestartType": kind, "lastRestartTime": ts, "lastRestartReason": f"pod(s) {names} failed"})
    st["restartStatus"] = rs
    for v in victims:
        if c.get("/pods", ns, v) is not None:
            c.delete(pod_rt, ns, v)
    s["created"] = [n for n in (s.get("created") or []) if n not in victims and n not in vanished]
    st["conditions"] = _set_phase(
        conds,
        "Restarting",
        kind,
        f"Restarting job {name} ({kind}, restart {st['restartCount']} of {max_retry}) after pod(s) {names} failed",
    )
    c.record_event(
        job,
        "JobRestarting",
        st["conditions"][-1]["message"] if st["conditions"] else kind,
        "Warning",
        component=COMPONENT,
    )
    c.put_status(HPJ_GR, job, st)


def _fail(c: Cluster, job: Obj, st: Obj, conds: list[Obj], pods: dict[str, Obj], reason: str, message: str) -> None:
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    # stop what still runs; failed pods stay for their logs
    for p in pods.values():
        if pod_active(p):
            c.delete(pod_rt, p["metadata"]["namespace"], p["metadata"]["name"])
    st["conditions"] = _set_phase(conds, "Failed", reason, message)
    st["completionTime"] = now_iso()
    sim(c, job)["t_finished"] = time.time()
    c.record_event(job, "JobFailed", message, "Warning", component=COMPONENT)
    c.put_status(HPJ_GR, job, st)


def _finished(c: Cluster, ctx: Ctx, job: Obj, pods: dict[str, Obj], s: dict[str, Any], run_policy: Obj) -> None:
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    policy = run_policy.get("cleanPodPolicy", "None")
    for p in pods.values():
        if policy == "All" or (policy == "Running" and pod_active(p)):
            c.delete(pod_rt, p["metadata"]["namespace"], p["metadata"]["name"])
    ttl = run_policy.get("ttlSecondsAfterFinished")
    if ttl is not None and ctx.elapsed(s.get("t_finished", ctx.now)) >= float(ttl):
        rt = c.type_by_gr(HPJ_GR)
        assert rt is not None
        c.delete(rt, job["metadata"]["namespace"], job["metadata"]["name"])
