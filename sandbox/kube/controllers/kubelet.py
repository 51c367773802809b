"""kubelet: pulls, starts and runs bound pods; writes their logs; finishes or crashes them.

A pod's simulated behaviour lives in `cluster.sim[pod uid]`:
  run_s   simulated seconds until containers exit (None = run forever);
  exit    exit code when run_s elapses (0 → Succeeded);
  log     log style: "service" (startup lines), "batch", "training", "ray-head", "ray-worker";
  ctx     values used by the log generator (world size, rank, job name...).
Controllers that create pods fill these; otherwise they come from the pod's restartPolicy and the
`sandbox.instantstart.io/run-seconds` / `exit-code` annotations.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from ..store import Cluster, now_iso
from ..util import clone
from .base import ANN_EXIT_CODE, ANN_RUN_SECONDS, Ctx, pod_active, set_condition, sim

Obj = dict[str, Any]

PULL_SECONDS = 5.0  # simulated image pull + container create
BATCH_SECONDS = 30.0  # default run time of a finite (restartPolicy Never/OnFailure) pod
TRAIN_STEP_SECONDS = 5.0  # one logged training step
MAX_LINES_PER_TICK = 200
EVICTION_SECONDS = 300.0  # tolerationSeconds of the default node.kubernetes.io/not-ready toleration


def _seed(s: str) -> int:
    return int(hashlib.sha1(s.encode()).hexdigest()[:8], 16)


def pod_ip(pod: Obj) -> str:
    h = _seed(pod["metadata"]["uid"])
    return f"10.1.{(h >> 8) % 250 + 1}.{h % 250 + 2}"


def _defaults(pod: Obj, s: dict[str, Any]) -> None:
    if "run_s" in s:
        return
    ann = pod["metadata"].get("annotations") or {}
    rp = (pod.get("spec") or {}).get("restartPolicy", "Always")
    if ANN_RUN_SECONDS in ann:
        try:
            s["run_s"] = float(ann[ANN_RUN_SECONDS])
        except ValueError:
            s["run_s"] = BATCH_SECONDS
    else:
        s["run_s"] = None if rp == "Always" else BATCH_SECONDS
    s.setdefault("exit", int(ann.get(ANN_EXIT_CODE, "0") or 0))
    s.setdefault("log", "service" if s["run_s"] is None else "batch")


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
    for pod in c.list("/pods"):
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or not pod_active(pod):
            continue
        if node in not_ready:
            _node_down(c, ctx, pod, not_ready[node])
            continue
        s = sim(c, pod)
        _defaults(pod, s)
        if s.get("t_bound") is None:
            s["t_bound"] = ctx.now
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase == "Pending":
            _start(c, ctx, pod, s)
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
        s["pulling"] = True
        for ct in containers:
            c.record_event(pod, "Pulling", f'Pulling image "{ct.get("image")}"')
        st = clone(pod.get("status") or {})
        st["hostIP"] = _node_ip(c, pod)
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
    st["podIP"] = pod_ip(pod)
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
    for ct in containers:
        for line in startup_lines(fresh, ct, s):
            c.append_log(fresh, ct["name"], line)


def _node_ip(c: Cluster, pod: Obj) -> str:
    node = c.get("/nodes", "", pod["spec"]["nodeName"])
    for a in ((node or {}).get("status") or {}).get("addresses") or []:
        if a.get("type") == "InternalIP":
            return a["address"]
    return "10.1.0.1"


def _run(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> None:
    el = ctx.elapsed(s.get("t_started", ctx.now))
    containers = (pod.get("spec") or {}).get("containers") or []
    run_s = s.get("run_s")
    if s.get("log") in ("training", "ray-submit"):
        _training_logs(c, pod, containers, s, min(el, run_s) if run_s is not None else el)
    if run_s is not None and el >= run_s:
        code = int(s.get("exit", 0))
        for ct in containers:
            for line in finish_lines(pod, ct, s, code):
                c.append_log(pod, ct["name"], line)
        terminate(c, pod, code, "Completed" if code == 0 else "Error")


def terminate(c: Cluster, pod: Obj, exit_code: int, reason: str, message: str = "") -> None:
    """Containers exit; the pod reaches Succeeded (all 0) or Failed."""
    ts = now_iso()
    st = clone(pod.get("status") or {})
    st["phase"] = "Succeeded" if exit_code == 0 else "Failed"
    new_cs = []
    for cs in st.get("containerStatuses") or []:
        started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", ts)
        term = {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": ts,
            "containerID": cs.get("containerID"),
        }
        if message:
            term["message"] = message
        new_cs.append(dict(cs, state={"terminated": term}, ready=False, started=False))
    st["containerStatuses"] = new_cs
    why = "PodCompleted" if exit_code == 0 else "PodFailed"
    for t in ("Ready", "ContainersReady"):
        st["conditions"] = set_condition(st.get("conditions") or [], t, "False", why)
    st["conditions"] = set_condition(st["conditions"], "PodReadyToStartContainers", "False")
    c.put_status("/pods", pod, st)


def crash(c: Cluster, pod: Obj, exit_code: int = 137) -> None:
    """An injected fault: the containers die with an error (OOM-kill style 137, or 1)."""
    for ct in (pod.get("spec") or {}).get("containers") or []:
        c.append_log(
            pod,
            ct["name"],
            "RuntimeError: NCCL communicator was aborted on rank 0. "
            "Original reason for failure was: NCCL error: unhandled system error"
            if sim(c, pod).get("log") == "training"
            else "fatal: process killed",
        )
        c.record_event(
            pod,
            "BackOff",
            f"Back-off restarting failed container {ct.get('name')} in pod {pod['metadata']['name']}",
            "Warning",
        )
    terminate(c, pod, exit_code, "Error")


# ------------------------------------------------------------------ log content


def startup_lines(pod: Obj, ct: Obj, s: dict[str, Any]) -> list[str]:
    image = str(ct.get("image", ""))
    name = ct.get("name", "")
    style = s.get("log", "service")
    ctx = s.get("ctx") or {}
    if style == "training":
        ws, rank = ctx.get("world_size", 1), ctx.get("rank", 0)
        return [
            f"[sandbox] container {name} started on {pod['spec'].get('nodeName')} (image {image})",
            f"INFO torch.distributed.run: nproc_per_node={ctx.get('nproc', 1)} nnodes={ctx.get('nnodes', 1)} "
            f"node_rank={rank}",
            f"INFO initializing process group backend=nccl world_size={ws} rank={rank}",
            "INFO NCCL version 2.21.5+cuda12.4, using EFA provider (libfabric 1.22)",
            f"INFO loading dataset from {ctx.get('data', '/s3/data')}",
            f"INFO model parameters: {ctx.get('params', '7.24B')}  global batch size: {ctx.get('batch', 256)}",
        ]
    if style == "ray-head":
        return [
            "Usage stats collection is disabled.",
            "Local node IP: " + pod_ip(pod),
            "Ray runtime started.",
            "View the Ray dashboard at http://0.0.0.0:8265",
            "--------------------",
            "Ray head node started, waiting for workers",
        ]
    if style == "ray-worker":
        return [
            f"Connecting to Ray head at {ctx.get('head', 'raycluster-head-svc')}:6379",
            "Ray runtime started.",
            "Worker node joined the cluster",
        ]
    if style == "ray-submit":
        return [
            f"{now_iso()} INFO cli.py:36 -- Job submission server address: http://{ctx.get('head', 'head')}:8265",
            f"{now_iso()} SUCC cli.py:60 -- Job '{ctx.get('job_id', 'raysubmit')}' submitted successfully",
            f"{now_iso()} INFO cli.py:284 -- Tailing logs until the job exits (disable with --no-wait):",
            f"Running entrypoint: {ctx.get('entrypoint', 'python main.py')}",
        ]
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
    if style == "training":
        if code == 0:
            return [
                f"INFO saving checkpoint to {(s.get('ctx') or {}).get('ckpt', '/checkpoints')}/final",
                "INFO training complete",
            ]
        return [f"ERROR training process exited with code {code}"]
    if style == "ray-submit":
        job_id = (s.get("ctx") or {}).get("job_id", "raysubmit")
        return [
            "Job finished.",
            f"{now_iso()} SUCC cli.py:63 -- Job '{job_id}' {'succeeded' if code == 0 else 'failed'}",
        ]
    if style == "batch":
        return ["[sandbox] done" if code == 0 else f"[sandbox] exited with code {code}"]
    return []


def _training_logs(c: Cluster, pod: Obj, containers: list[Obj], s: dict[str, Any], elapsed: float) -> None:
    due = int(elapsed / TRAIN_STEP_SECONDS)
    done = int(s.get("steps", 0))
    if due <= done:
        return
    ctx = s.get("ctx") or {}
    seed = _seed(str(ctx.get("job", pod["metadata"]["name"])))
    base_tps = 8000 + seed % 4000
    ws = int(ctx.get("world_size", 1) or 1)
    for step in range(done + 1, min(due, done + MAX_LINES_PER_TICK) + 1):
        loss = 2.2 + 8.5 * math.exp(-step / 25.0) + ((seed + step * 7919) % 1000) / 20000.0
        tps = base_tps * ws + (step * 131 + seed) % 997
        lr = 3e-4 * min(1.0, step / 10.0)
        line = f"step={step} loss={loss:.4f} tokens/s={tps} lr={lr:.2e}"
        for ct in containers:
            c.append_log(pod, ct["name"], line)
    s["steps"] = min(due, done + MAX_LINES_PER_TICK)
