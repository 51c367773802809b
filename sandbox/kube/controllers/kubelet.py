"""kubelet: pulls, starts and runs bound pods; writes their logs; finishes or crashes them.

A pod's simulated behaviour lives in `cluster.sim[pod uid]`:
  run_s   simulated seconds until containers exit (None = run forever; a training program decides);
  exit    exit code when the containers exit (0 → Succeeded);
  log     log style: "service" (startup lines), "batch", "training", "ray-head", "ray-worker", "ray-submit";
  ctx     values used by the log generator (world size, rank, job name...).
Controllers that create pods fill these; otherwise they come from the pod's restartPolicy, the
`sandbox.instantstart.io/run-seconds` / `exit-code` annotations, and whether the container runs a
training program the sandbox recognises (sandbox/kube/trainers). Training and Ray output is written by
trainer_logs.py; containers that exit are restarted in place per restartPolicy (container_restarts.py).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..store import Cluster, now_iso
from ..util import clone
from . import container_restarts, trainer_logs
from .base import ANN_EXIT_CODE, ANN_RUN_SECONDS, Ctx, pod_active, set_condition, sim
from .nodes import POD_IPS

Obj = dict[str, Any]

PULL_SECONDS = 5.0  # simulated image pull + container create
BATCH_SECONDS = 30.0  # default run time of a finite (restartPolicy Never/OnFailure) pod
EVICTION_SECONDS = 300.0  # tolerationSeconds of the default node.kubernetes.io/not-ready toleration


def _seed(s: str) -> int:
    return int(hashlib.sha1(s.encode()).hexdigest()[:8], 16)


def pod_ip(pod: Obj) -> str:
    """The pod's address: what the CNI gave it, else (nodes without an address pool, in worlds
    driven without the AWS half) one derived from its uid."""
    given = (pod.get("status") or {}).get("podIP")
    if given:
        return given
    h = _seed(pod["metadata"]["uid"])
    return f"10.1.{(h >> 8) % 250 + 1}.{h % 250 + 2}"


def host_network(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("hostNetwork"))


def _assign_ip(c: Cluster, pod: Obj, node: str) -> str | None:
    """The VPC CNI's ADD: host-network pods share the node's address; others take a free one of
    the node's pool (None when every address is taken)."""
    if host_network(pod):
        return _node_ip(c, pod)
    pool = (c.sim.get(POD_IPS) or {}).get(node)
    if pool is None:
        return pod_ip(pod)
    used = {
        (p.get("status") or {}).get("podIP")
        for p in c.list("/pods")
        if (p.get("spec") or {}).get("nodeName") == node
        and pod_active(p)
        and not host_network(p)
        and p["metadata"]["uid"] != pod["metadata"]["uid"]
    }
    return next((ip for ip in pool if ip not in used), None)


def ip_demand(c: Cluster) -> dict[str, int]:
    """Pod addresses each node's pods hold or wait for (the CNI grows its pool from this)."""
    out: dict[str, int] = {}
    for p in c.list("/pods"):
        node = (p.get("spec") or {}).get("nodeName")
        if node and pod_active(p) and not host_network(p):
            out[node] = out.get(node, 0) + 1
    return out


def _defaults(pod: Obj, s: dict[str, Any]) -> None:
    if "run_s" in s:
        return
    ann = pod["metadata"].get("annotations") or {}
    rp = (pod.get("spec") or {}).get("restartPolicy", "Always")
    training = rp != "Always" and trainer_logs.main_container(pod, launched_only=True)[0] is not None
    if ANN_RUN_SECONDS in ann:
        try:
            s["run_s"] = float(ann[ANN_RUN_SECONDS])
        except ValueError:
            s["run_s"] = BATCH_SECONDS
    else:
        # a recognised training program runs as long as its steps take; anything else finite 30 s
        s["run_s"] = None if rp == "Always" or training else BATCH_SECONDS
    s.setdefault("exit", int(ann.get(ANN_EXIT_CODE, "0") or 0))
    s.setdefault("log", "training" if training else "service" if s["run_s"] is None else "batch")


def _container_status(ct: Obj, state: Obj, ready: bool, restart_count: int = 0, started: bool = False) -> Obj:
    image = ct.get("image", "")
    return {
        "name": ct.get("name"),
        "image": image if "/" in image else f"docker.io/library/{image}",
        "imageID": f"{image.split(':')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
        "containerID": f"containerd://{hashlib.sha256((ct.get('name', '') + image).encode()).hexdigest()}",
        "state": state,
        "lastState": {},
        "ready": ready,
        "restartCount": restart_count,
        "started": started,
    }


def run_kubelet(c: Cluster, ctx: Ctx) -> None:
    not_ready: dict[str, float] = c.sim.get("_node_notready") or {}
    pods = c.list("/pods")
    drivers = {j["metadata"]["uid"] for j in c.list("ray.io/rayjobs")}  # Ray drivers log MLflow runs too
    trainer_logs.reap(c, ctx, {p["metadata"]["uid"] for p in pods} | drivers)
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or not pod_active(pod):
            continue
        ctx.per_object(c, "kubelet", pod, _sync_pod, c, ctx, pod, node, not_ready)


def _sync_pod(c: Cluster, ctx: Ctx, pod: Obj, node: str, not_ready: dict[str, float]) -> None:
    if node in not_ready:
        _node_down(c, ctx, pod, not_ready[node])
        return
    s = sim(c, pod)
    _defaults(pod, s)
    if s.get("t_bound") is None:
        s["t_bound"] = ctx.now
    phase = (pod.get("status") or {}).get("phase", "Pending")
    if phase == "Pending":
        _start(c, ctx, pod, s)
    elif s.get("backoff_until") is not None:
        if container_restarts.due(ctx, s):
            _restart_containers(c, ctx, pod, s)
    elif phase == "Running":
        _run(c, ctx, pod, s)


def _node_down(c: Cluster, ctx: Ctx, pod: Obj, since: float) -> None:
    """Pods on a NotReady node: Ready=False at once; deleted after the default 300 s
    not-ready toleration (taint-based eviction), so that their owners recreate them elsewhere."""
    tol = next(
        (
            t
            for t in (pod.get("spec") or {}).get("tolerations") or []
            if t.get("effect") in (None, "", "NoExecute")
            and (
                (t.get("key") == "node.kubernetes.io/not-ready" and t.get("operator") == "Exists")
                or (not t.get("key") and t.get("operator") == "Exists")
            )
        ),
        None,
    )
    # DaemonSet pods tolerate not-ready forever; others after tolerationSeconds (default 300)
    limit = (
        None
        if tol is not None and tol.get("tolerationSeconds") is None
        else float((tol or {}).get("tolerationSeconds", EVICTION_SECONDS))
    )
    if limit is not None and ctx.elapsed(since) >= limit:
        c.record_event(
            pod,
            "TaintManagerEviction",
            f"Marking for deletion Pod {pod['metadata']['namespace']}/{pod['metadata']['name']}",
            component="taint-eviction-controller",
        )
        rt = c.type_by_gr("/pods")
        assert rt is not None
        c.delete(rt, pod["metadata"]["namespace"], pod["metadata"]["name"])
        return
    st = pod.get("status") or {}
    if any(x.get("type") == "Ready" and x.get("status") == "True" for x in st.get("conditions") or []):
        new = clone(st)
        new["conditions"] = set_condition(
            new["conditions"], "Ready", "False", "NodeNotReady", "the node this pod runs on is not ready"
        )
        c.put_status("/pods", pod, new)


def _start(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> None:
    el = ctx.elapsed(s["t_bound"])
    containers = (pod.get("spec") or {}).get("containers") or []
    if not s.get("pulling"):
        ip = _assign_ip(c, pod, pod["spec"]["nodeName"])
        if ip is None:
            if not s.get("no_ip"):
                s["no_ip"] = True
                c.record_event(
                    pod,
                    "FailedCreatePodSandBox",
                    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for "
                    f'sandbox "{hashlib.sha256(pod["metadata"]["uid"].encode()).hexdigest()}": plugin '
                    'type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container',
                    "Warning",
                )
            return  # the CNI tries again once an address is free (or its pool grew)
        s["pulling"] = True
        s.pop("no_ip", None)
        for ct in containers:
            c.record_event(pod, "Pulling", f'Pulling image "{ct.get("image")}"')
        st = clone(pod.get("status") or {})
        st["hostIP"] = _node_ip(c, pod)
        st["hostIPs"] = [{"ip": st["hostIP"]}]
        st["podIP"] = ip
        st["podIPs"] = [{"ip": ip}]
        st["startTime"] = now_iso()
        st["conditions"] = set_condition(st.get("conditions") or [], "Initialized", "True")
        st["conditions"] = set_condition(
            st["conditions"],
            "Ready",
            "False",
            "ContainersNotReady",
            "containers with unready status: [" + " ".join(x.get("name", "") for x in containers) + "]",
        )
        st["containerStatuses"] = [
            _container_status(ct, {"waiting": {"reason": "ContainerCreating"}}, False) for ct in containers
        ]
        c.put_status("/pods", pod, st)
        return
    pull = PULL_SECONDS + (_seed(pod["metadata"]["uid"]) % 30) / 10.0
    if el < pull:
        return
    for ct in containers:
        c.record_event(
            pod,
            "Pulled",
            f'Successfully pulled image "{ct.get("image")}" in {pull:.3f}s '
            f"({pull:.3f}s including waiting). Image size: 4096000 bytes.",
        )
        c.record_event(pod, "Created", f"Created container: {ct.get('name')}")
        c.record_event(pod, "Started", f"Started container {ct.get('name')}")
    ts = now_iso()
    st = clone(pod.get("status") or {})
    st["phase"] = "Running"
    st["podIP"] = pod_ip(pod)  # given when the sandbox was created
    st["podIPs"] = [{"ip": st["podIP"]}]
    restarts = s.get("restarts", 0)
    # containers whose readiness the serving hub decides (their server must answer first)
    gated = set(s.get("serving_containers") or [])
    st["containerStatuses"] = [
        _container_status(ct, {"running": {"startedAt": ts}}, ct.get("name") not in gated, restarts, True)
        for ct in containers
    ]
    for t in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"):
        if gated and t in ("ContainersReady", "Ready"):
            unready = " ".join(sorted(gated))
            msg = f"containers with unready status: [{unready}]"
            st["conditions"] = set_condition(st.get("conditions") or [], t, "False", "ContainersNotReady", msg)
        else:
            st["conditions"] = set_condition(st.get("conditions") or [], t, "True")
    c.put_status("/pods", pod, st)
    s["t_started"] = ctx.now
    fresh = c.get("/pods", pod["metadata"]["namespace"], pod["metadata"]["name"]) or pod
    _begin(c, ctx, fresh, s)


def _begin(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> None:
    """The containers' processes start: their first lines (a training program prints its own over time)."""
    if s.get("log") in ("training", "ray-head", "ray-worker", "ray-submit"):
        for container, line in trainer_logs.start(c, ctx, pod, s):
            c.append_log(pod, container, line)
        return
    for ct in (pod.get("spec") or {}).get("containers") or []:
        for line in startup_lines(pod, ct, s):
            c.append_log(pod, ct["name"], line)


def _restart_containers(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> None:
    """The back-off is over: the kubelet starts the containers again (their old logs become --previous)."""
    container_restarts.restart(c, ctx, pod, s)
    s["t_started"] = ctx.now
    s.pop("steps", None)
    fresh = c.get("/pods", pod["metadata"]["namespace"], pod["metadata"]["name"]) or pod
    _begin(c, ctx, fresh, s)


def _node_ip(c: Cluster, pod: Obj) -> str:
    node = c.get("/nodes", "", pod["spec"]["nodeName"])
    for a in ((node or {}).get("status") or {}).get("addresses") or []:
        if a.get("type") == "InternalIP":
            return a["address"]
    return "10.1.0.1"


def _run(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> None:
    if s.get("log") in ("training", "ray-submit"):
        code = trainer_logs.run(c, ctx, pod, s)
        if code is not None:
            terminate(c, pod, code, "Completed" if code == 0 else "Error", ctx=ctx)
        return
    el = ctx.elapsed(s.get("t_started", ctx.now))
    containers = (pod.get("spec") or {}).get("containers") or []
    run_s = s.get("run_s")
    if run_s is not None and el >= run_s:
        code = int(s.get("exit", 0))
        for ct in containers:
            for line in finish_lines(pod, ct, s, code):
                c.append_log(pod, ct["name"], line)
        terminate(c, pod, code, "Completed" if code == 0 else "Error", ctx=ctx)


def terminate(c: Cluster, pod: Obj, exit_code: int, reason: str, message: str = "", ctx: Ctx | None = None) -> None:
    """Containers exit. With restartPolicy Always (or OnFailure and a non-zero code) the kubelet
    restarts them in place after a back-off; otherwise the pod reaches Succeeded (all 0) or Failed."""
    if ctx is not None and container_restarts.restarts(pod, exit_code):
        container_restarts.exited(c, ctx, pod, exit_code, reason, message)
        return
    ts = now_iso()
    st = clone(pod.get("status") or {})
    st["phase"] = "Succeeded" if exit_code == 0 else "Failed"
    new_cs = []
    for cs in st.get("containerStatuses") or []:
        term = container_restarts.terminated(cs, exit_code, reason, message, ts)
        new_cs.append(dict(cs, state={"terminated": term}, ready=False, started=False))
    st["containerStatuses"] = new_cs
    why = "PodCompleted" if exit_code == 0 else "PodFailed"
    for t in ("Ready", "ContainersReady"):
        st["conditions"] = set_condition(st.get("conditions") or [], t, "False", why)
    st["conditions"] = set_condition(st["conditions"], "PodReadyToStartContainers", "False")
    c.put_status("/pods", pod, st)


def crash(c: Cluster, ctx: Ctx, pod: Obj, exit_code: int = 137) -> None:
    """An injected fault: the containers die with an error (SIGKILL 137 prints nothing, 1 a traceback)."""
    s = sim(c, pod)
    if s.get("log") == "training":
        proc = s.get("proc") or {}
        for line in trainer_logs.crash(c, ctx, pod, s, exit_code):
            c.append_log(pod, proc.get("container") or pod["spec"]["containers"][0]["name"], line)
    elif exit_code != 137:
        for ct in (pod.get("spec") or {}).get("containers") or []:
            c.append_log(pod, ct["name"], "fatal: process exited unexpectedly")
    terminate(c, pod, exit_code, "OOMKilled" if exit_code == 137 else "Error", ctx=ctx)


# ------------------------------------------------------------------ log content


def startup_lines(pod: Obj, ct: Obj, s: dict[str, Any]) -> list[str]:
    image = str(ct.get("image", ""))
    name = ct.get("name", "")
    style = s.get("log", "service")
    if style == "batch":
        cmd = " ".join(str(x) for x in (ct.get("command") or []) + (ct.get("args") or [])) or image
        return [f"[sandbox] running: {cmd}"]
    if style in ("serving", "download"):
        return []  # the serving hub writes what the program prints (sandbox/serving/)
    lines = [f"[sandbox] container {name} started (image {image})"]
    port = next((p.get("containerPort") for p in ct.get("ports") or []), None)
    if "vllm" in image:
        lines += [
            "INFO vLLM API server version 0.8.5",
            "INFO Loading model weights took 12.31 GiB",
            "INFO Capturing cudagraphs for decoding.",
            f"INFO: Uvicorn running on http://0.0.0.0:{port or 8000} (Press CTRL+C to quit)",
        ]
    elif "sglang" in image:
        lines += [
            "[2025] server_args=ServerArgs(...)",
            "Load weight end. type=LlamaForCausalLM",
            f"The server is fired up and ready to roll! Listening on 0.0.0.0:{port or 30000}",
        ]
    elif port:
        lines.append(f"listening on 0.0.0.0:{port}")
    lines.append("ready")
    return lines


def finish_lines(pod: Obj, ct: Obj, s: dict[str, Any], code: int) -> list[str]:
    style = s.get("log", "service")
    if style == "batch":
        return ["[sandbox] done" if code == 0 else f"[sandbox] exited with code {code}"]
    return []
