"""HyperPod training operator: HyperPodPyTorchJob → one pod per replica → Running → Succeeded, with
fault recovery: pod failures, unhealthy/NotReady nodes and the job's own log-monitoring rules
(hang / slow detection, log_monitoring.py) restart the job within its budget.

Status as the real operator writes it (its CRD is not public; shapes from the HyperPod CLI's models,
texts from AWS's published `kubectl describe` output): conditions Created → PodsRunning → Running
(→ Restarting while a fault is remediated, then Running with "The fault of reason X was remediated in
N milliseconds.") → Succeeded / Failed; `restartCount`, `restartStatus {currentEvalPeriod,
fullJobRestartCount, restartCount}`, `latestFaultyPodInstanceList {restartType PLR|JLR, faultyPodList,
faultyInstanceIdList, faultyRankList}`, `masterAddr`, `masterPort`, `jobPods`, start/completion time.
Events come from `hyperpod-pytorch-job-controller` (NodeFault "Found unhealthy node …", Running, …).

Budget (the sandbox's reading of the documented fields):
- every fault costs one of `runPolicy.jobMaxRetryCount` (absent = 0: the first fault fails the job,
  reason MaxRetryCountExceeded);
- within an `evalPeriodSeconds` window, the first `numRestartBeforeFullJobRestart` faults are
  process-level restarts (PLR: faulty pods recreated, the other pods' processes restarted in place),
  later ones job-level restarts (JLR: every pod recreated) — at most `maxFullJobRestarts` of those
  (beyond: MaxFullJobRestartsExceeded).
"""

from __future__ import annotations

import time
from typing import Any

from ..operators import HPJ_GR, TRAINING_ADDON, operator_active
from ..store import Cluster, now_iso
from ..util import clone
from . import hangs, log_monitoring, trainer_logs
from .base import ANN_EXIT_CODE, ANN_RUN_SECONDS, Ctx, children, create_pod, pod_active, set_condition, sim
from .kubelet import terminate
from .nodes import HEALTH_LABEL
from .scheduler import node_ready

Obj = dict[str, Any]
COMPONENT = "hyperpod-pytorch-job-controller"
LBL_JOB = "sagemaker.amazonaws.com/job-name"
LBL_REPLICA = "sagemaker.amazonaws.com/replica-type"
LBL_INDEX = "sagemaker.amazonaws.com/replica-index"
MASTER_PORT = "23456"
PROGRESS = ("Created", "PodsRunning", "Running", "Restarting", "Succeeded", "Failed", "Suspended")


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
    """spec.nprocPerNode: a number, or auto/gpu (= the GPUs a pod requests)."""
    v = (job.get("spec") or {}).get("nprocPerNode", 1)
    try:
        return max(int(v), 1)
    except (TypeError, ValueError):
        for rs in (job.get("spec") or {}).get("replicaSpecs") or []:
            for ct in ((rs.get("template") or {}).get("spec") or {}).get("containers") or []:
                res = ct.get("resources") or {}
                gpus = (res.get("limits") or {}).get("nvidia.com/gpu") or (res.get("requests") or {}).get(
                    "nvidia.com/gpu"
                )
                if gpus:
                    return max(int(gpus), 1)
        return 1


def _phase(conds: list[Obj], phase: str, reason: str, message: str) -> list[Obj]:
    """The condition `phase` True; the other progress conditions that exist False (Created stays)."""
    for other in PROGRESS:
        if other not in (phase, "Created") and any(x.get("type") == other and x.get("status") == "True" for x in conds):
            conds = set_condition(conds, other, "False", reason, message)
    return set_condition(conds, phase, "True", reason, message)


def _is_true(conds: list[Obj], ctype: str) -> bool:
    return any(x.get("type") == ctype and x.get("status") == "True" for x in conds)


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

    if _terminal(st):
        _finished(c, ctx, job, pods, s, run_policy)
        return
    if run_policy.get("suspend"):
        for p in pods.values():
            c.delete(pod_rt, ns, p["metadata"]["name"])
        s["created"] = []
        st["conditions"] = _phase(st.get("conditions") or [], "Suspended", "JobSuspended", "Job is suspended")
        c.put_status(HPJ_GR, job, st)
        return
    conds = st.get("conditions") or []
    if not conds:
        conds = set_condition(conds, "Created", "True", "", "")
        st["startTime"] = now_iso()
        s["t_start"] = ctx.now
        s["window_start"] = ctx.now
        hangs.adopt_pending(c, job)
        hangs.begin_attempt(c, job)
        c.record_event(job, "Created", f"Created HyperPodPyTorchJob {ns}/{name}", component=COMPONENT)
    st.setdefault("restartCount", 0)

    deadline = run_policy.get("activeDeadlineSeconds")
    if deadline is not None and ctx.elapsed(s.get("t_start", ctx.now)) > float(deadline):
        _fail(c, ctx, job, st, conds, pods, "DeadlineExceeded", "Job was active longer than specified deadline")
        return

    desired = _desired(job)
    want = {d[0] for d in desired}
    faults = _faults(c, ctx, job, pods, want, s, run_policy)
    if faults:
        _restart(c, ctx, job, st, conds, pods, faults, run_policy)
        return

    nproc = _nproc(job)
    ws = len(desired) * nproc
    master = desired[0][0] if desired else name
    created = set(s.get("created") or [])
    for idx, (pname, tpl, rname, i) in enumerate(desired):
        if pname in pods:
            continue
        pod = _create_pod(c, job, tpl, pname, rname, i, idx, master, ws, nproc, len(desired), int(st["restartCount"]))
        if pod:
            created.add(pname)
            c.record_event(job, "SuccessfulCreatePod", f"Created pod: {pname}", component=COMPONENT)
    s["created"] = sorted(created)

    pods = {p["metadata"]["name"]: p for p in children(c, "/pods", job)}
    mine = [pods[n] for n in sorted(want) if n in pods]
    phases = [(p.get("status") or {}).get("phase") for p in mine]
    st["masterAddr"], st["masterPort"] = master, MASTER_PORT
    st["jobPods"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"], "namespace": ns, "uid": p["metadata"]["uid"]}
        for p in mine
    ]
    complete = mine and len(mine) == len(want)
    if complete and all(ph == "Succeeded" for ph in phases):
        msg = f"HyperPodPyTorchJob {name} is successfully completed."
        conds = _phase(conds, "Succeeded", "JobSucceeded", msg)
        conds = (
            set_condition(conds, "PodsRunning", "False", "JobSucceeded", msg)
            if _is_true(conds, "PodsRunning")
            else conds
        )
        st["completionTime"] = now_iso()
        s["t_finished"] = ctx.now
        c.record_event(job, "JobSucceeded", msg, component=COMPONENT)
    elif complete and all(ph in ("Running", "Succeeded") for ph in phases):
        if not _is_true(conds, "PodsRunning"):
            conds = set_condition(conds, "PodsRunning", "True", "", "")
            s["attempt_running"] = ctx.now
        fault = s.pop("fault", None)
        if fault:
            took = int((ctx.now - fault["at"]) * 1000)
            msg = f"The fault of reason {fault['reason']} was remediated in {took} milliseconds."
            conds = _phase(conds, "Running", "Running", msg)
            conds = set_condition(conds, "PodsRunning", "True", "", "")
            c.record_event(job, "Running", msg, component=COMPONENT)
        elif not _is_true(conds, "Running"):
            conds = _phase(conds, "Running", "Running", f"All pods of HyperPodPyTorchJob {name} are running.")
            conds = set_condition(conds, "PodsRunning", "True", "", "")
            c.record_event(job, "Running", f"All {len(mine)} pods of {name} are running", component=COMPONENT)
    st["conditions"] = conds
    c.put_status(HPJ_GR, job, st)


def _create_pod(
    c: Cluster,
    job: Obj,
    tpl: Obj,
    pname: str,
    rname: str,
    index: int,
    rank: int,
    master: str,
    world_size: int,
    nproc: int,
    nnodes: int,
    attempt: int,
) -> Obj | None:
    t = _pod_template(tpl, job, master, world_size, rank, nproc, nnodes)
    ann = job["metadata"].get("annotations") or {}
    tann = (t.get("metadata") or {}).get("annotations") or {}
    run_s = tann.get(ANN_RUN_SECONDS, ann.get(ANN_RUN_SECONDS))
    code = int(tann.get(ANN_EXIT_CODE, ann.get(ANN_EXIT_CODE, 0)) or 0)
    name = job["metadata"]["name"]
    state: dict[str, Any] = {
        "run_s": float(run_s) if run_s is not None else None,
        "exit": code,
        "log": "training",
        "ctx": {
            "job": name,
            "world_size": world_size,
            "rank": rank,
            "nproc": nproc,
            "nnodes": nnodes,
            "attempt": attempt,
        },
    }
    hang = hangs.attempt_hang(c, job)
    if hang:
        state["hang"] = hang
    return create_pod(
        c,
        job,
        t,
        name=pname,
        hostname=pname,
        extra_labels={LBL_JOB: name, LBL_REPLICA: rname, LBL_INDEX: str(index), "training.kubeflow.org/job-name": name},
        sim_state=state,
    )


def _pod_template(tpl: Obj, job: Obj, master: str, world_size: int, rank: int, nproc: int, nnodes: int) -> Obj:
    t = clone(tpl)
    pspec = t.setdefault("spec", {})
    pspec.setdefault("restartPolicy", "Never")  # restarts are the operator's job, not the kubelet's
    env_add = [
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": MASTER_PORT},
        {"name": "WORLD_SIZE", "value": str(world_size)},
        {"name": "NODE_RANK", "value": str(rank)},
        {"name": "NNODES", "value": str(nnodes)},
        {"name": "NPROC_PER_NODE", "value": str(nproc)},
        {"name": "PET_NPROC_PER_NODE", "value": str(nproc)},
        {"name": "JOB_NAME", "value": job["metadata"]["name"]},
    ]
    for ct in pspec.get("containers") or []:
        env = ct.setdefault("env", [])
        have = {e.get("name") for e in env}
        env.extend(e for e in env_add if e["name"] not in have)
    return t


def _instance_id(c: Cluster, node_name: str) -> str:
    node = c.get("/nodes", "", node_name) or {}
    provider = ((node.get("spec") or {}).get("providerID")) or ""
    return provider.rsplit("/", 1)[-1] if provider else node_name.removeprefix("hyperpod-")


def _faults(
    c: Cluster, ctx: Ctx, job: Obj, pods: dict[str, Obj], want: set[str], s: dict[str, Any], run_policy: Obj
) -> list[Obj]:
    """What went wrong this tick: [{pod, node, reason, message, recreate}]."""
    out: list[Obj] = []
    nodes = {n["metadata"]["name"]: n for n in c.list("/nodes")}
    for n, p in sorted(pods.items()):
        if n not in want:
            continue
        node = (p.get("spec") or {}).get("nodeName") or ""
        phase = (p.get("status") or {}).get("phase")
        if phase == "Failed":
            term = {}
            for cs in (p.get("status") or {}).get("containerStatuses") or []:
                term = (cs.get("state") or {}).get("terminated") or term
            out.append(
                {
                    "pod": n,
                    "node": node,
                    "reason": "PodFailed",
                    "message": f"Pod {n} failed: container exited with code {term.get('exitCode', 1)} "
                    f"({term.get('reason', 'Error')})",
                    "recreate": True,
                }
            )
        elif pod_active(p) and node in nodes:
            labels = nodes[node]["metadata"].get("labels") or {}
            if str(labels.get(HEALTH_LABEL, "")).startswith("Unschedulable") or not node_ready(nodes[node]):
                out.append(
                    {
                        "pod": n,
                        "node": node,
                        "reason": "NodeFault",
                        "message": f"Found unhealthy node {node}",
                        "recreate": True,
                    }
                )
    created = set(s.get("created") or [])
    for n in sorted(created - set(pods)):
        out.append({"pod": n, "node": "", "reason": "PodDeleted", "message": f"Pod {n} was deleted", "recreate": True})
    if out:
        return out
    fired = log_monitoring.evaluate(c, ctx, job, [pods[n] for n in sorted(want) if n in pods], run_policy)
    if fired:
        reason, message = fired
        return [
            {
                "pod": n,
                "node": (pods[n].get("spec") or {}).get("nodeName", ""),
                "reason": reason,
                "message": message,
                "recreate": False,
            }
            for n in sorted(want)
            if n in pods
        ]
    return []


def _restart(
    c: Cluster, ctx: Ctx, job: Obj, st: Obj, conds: list[Obj], pods: dict[str, Obj], faults: list[Obj], run_policy: Obj
) -> None:
    name = job["metadata"]["name"]
    s = sim(c, job)
    reason = faults[0]["reason"]
    for f in faults:
        if f["reason"] == "NodeFault" or f is faults[0]:
            c.record_event(job, f["reason"], f["message"], "Warning", component=COMPONENT)
    rp = run_policy.get("restartPolicy") or {}
    window = rp.get("evalPeriodSeconds")
    if window and ctx.elapsed(s.get("window_start", ctx.now)) > float(window):
        s["window_start"] = ctx.now  # a new evaluation period: its counts start over
        st["restartStatus"] = {"currentEvalPeriod": int(st.get("restartStatus", {}).get("currentEvalPeriod", 0)) + 1}
    rs = {"currentEvalPeriod": 0, "fullJobRestartCount": 0, "restartCount": 0, **(st.get("restartStatus") or {})}
    st["restartCount"] = int(st.get("restartCount", 0)) + 1
    max_retry = int(run_policy.get("jobMaxRetryCount", 0) or 0)
    faulty = sorted({f["pod"] for f in faults})
    idx = {d[0]: i for i, d in enumerate(_desired(job))}  # pod -> node rank
    if rs["restartCount"] < int(rp.get("numRestartBeforeFullJobRestart", 0) or 0):
        kind = "PLR"
        rs["restartCount"] += 1
    else:
        kind = "JLR"
        rs["fullJobRestartCount"] += 1
        rs["restartCount"] = 0
    st["latestFaultyPodInstanceList"] = {
        "restartType": kind,
        "faultyPodList": faulty,
        "faultyInstanceIdList": sorted({_instance_id(c, f["node"]) for f in faults if f["node"]}),
        "faultyRankList": sorted({str(idx.get(n, 0)) for n in faulty}, key=int),
    }
    st["restartStatus"] = rs
    limit = rp.get("maxFullJobRestarts")
    spent = None
    if st["restartCount"] > max_retry:
        st["restartCount"] = max_retry
        spent = ("MaxRetryCountExceeded", f"jobMaxRetryCount of {max_retry} restarts")
    elif kind == "JLR" and limit is not None and rs["fullJobRestartCount"] > int(limit):
        spent = ("MaxFullJobRestartsExceeded", f"maxFullJobRestarts of {limit}")
    if spent:
        why = f"The job reached its {spent[1]}; the last fault was {reason}: {faults[0]['message']}"
        _fail(c, ctx, job, st, conds, pods, spent[0], why)
        return
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    recreate = {f["pod"] for f in faults if f["recreate"]}
    victims = set(pods) if kind == "JLR" else recreate
    for v in sorted(victims):
        if c.get("/pods", job["metadata"]["namespace"], v) is not None:
            c.delete(pod_rt, job["metadata"]["namespace"], v)
    s["created"] = [n for n in (s.get("created") or []) if n not in victims and n not in recreate]
    hangs.begin_attempt(c, job)
    log_monitoring.reset(c, job)
    if kind == "PLR":  # the pods that stay restart their processes in place
        for n, p in pods.items():
            if n not in victims and pod_active(p) and (p.get("status") or {}).get("phase") == "Running":
                trainer_logs.restart_in_place(c, ctx, p, hangs.attempt_hang(c, job))
    s["fault"] = {"reason": reason, "at": ctx.now}
    message = (
        f"Restarting HyperPodPyTorchJob {name} ({'process-level' if kind == 'PLR' else 'job-level'} restart "
        f"{st['restartCount']} of {max_retry}) after {reason}: {faults[0]['message']}"
    )
    st["conditions"] = _phase(conds, "Restarting", reason, message)
    if _is_true(st["conditions"], "PodsRunning"):
        st["conditions"] = set_condition(st["conditions"], "PodsRunning", "False", reason, message)
    c.record_event(job, "Restarting", message, "Warning", component=COMPONENT)
    c.put_status(HPJ_GR, job, st)


def _fail(
    c: Cluster, ctx: Ctx, job: Obj, st: Obj, conds: list[Obj], pods: dict[str, Obj], reason: str, message: str
) -> None:
    pod_rt = c.type_by_gr("/pods")
    assert pod_rt is not None
    # the agents stop the processes that still run (SIGTERM: exit 143); the pods stay, with their logs,
    # until cleanPodPolicy removes them; pods that never started go at once
    for p in pods.values():
        if not pod_active(p):
            continue
        if (p.get("status") or {}).get("phase") == "Running":
            runner_state = sim(c, p).get("proc") or {}
            trainer_logs.stop_process(c, ctx, p, runner_state)
            terminate(c, p, 143, "Error", "stopped by the HyperPod training operator: the job failed")
        else:
            c.delete(pod_rt, p["metadata"]["namespace"], p["metadata"]["name"])
    conds = _phase(conds, "Failed", reason, message)
    st["conditions"] = conds
    st["completionTime"] = now_iso()
    sim(c, job)["t_finished"] = ctx.now if ctx else time.time()
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
    if ttl is not None and int(ttl) >= 0 and ctx.elapsed(s.get("t_finished", ctx.now)) >= float(ttl):
        rt = c.type_by_gr(HPJ_GR)
        assert rt is not None
        c.delete(rt, job["metadata"]["namespace"], job["metadata"]["name"])
