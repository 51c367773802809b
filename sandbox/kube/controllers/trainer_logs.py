"""The kubelet's side of training and Ray pods: it starts the simulated program of a pod's main
container, writes what the program prints into the container log as it becomes due, ends the
container when the program exits, and closes the MLflow runs of processes that are gone.

Pod sim keys used here: `log` ("training", "ray-head", "ray-worker", "ray-submit"), `ctx` (job,
rank, nnodes, nproc, world_size, …, set by the operator that made the pod), `proc` (the runner's
state), `hang` (set on pods of a hung job), `run_s` / `exit` (from the sandbox annotations).
"""

from __future__ import annotations

import time
from typing import Any

from ..store import Cluster
from ..trainers import process_spec, recognise, runner
from ..trainers.ray_nodes import head_lines, submit_lines, worker_lines
from .base import Ctx, sim

Obj = dict[str, Any]
RUNS = "_trainer_runs"  # c.sim entry: MLflow run key -> uid of the object whose process logs it


def rfc3339(t: float) -> str:
    """The kubelet's log timestamps (RFC 3339 with nanoseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1e6) % 1_000_000:06d}000Z"


def main_container(pod: Obj, launched_only: bool = False) -> tuple[Obj | None, Any]:
    """The first container that runs a program the sandbox recognises, with its Launch.
    `launched_only`: not a bare `python script.py`, which outside a training job is just a script."""
    for ct in (pod.get("spec") or {}).get("containers") or []:
        launch = recognise(ct)
        if launch is not None and not (launched_only and launch.launcher == "python" and launch.kind == "pytorch"):
            return ct, launch
    return None, None


def emitter(c: Cluster, pod: Obj, container: str) -> runner.Emit:
    return lambda line, t: c.append_log(pod, container, line, rfc3339(t))


def start(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> list[tuple[str, str]]:
    """The containers have just started. Returns (container, line) pairs to print at once; a training
    program prints its own lines over time from `run`."""
    style = s.get("log")
    ip = (pod.get("status") or {}).get("podIP", "")
    containers = (pod.get("spec") or {}).get("containers") or []
    first = containers[0]["name"] if containers else ""
    if style == "ray-head":
        return [(first, x) for x in head_lines(ip)]
    if style == "ray-worker":
        return [(first, x) for x in worker_lines(ip, str((s.get("ctx") or {}).get("head", "")))]
    if style == "ray-submit":
        job = s.get("ctx") or {}
        s["tail"] = 0
        return [(first, x) for x in submit_lines(ctx.now, str(job.get("address", "")), str(job.get("job_id", "")))]
    if style == "training":
        ct, launch = main_container(pod)
        ct = ct or (containers[0] if containers else None)
        if ct is None:
            return []
        node = c.get("/nodes", "", (pod.get("spec") or {}).get("nodeName", ""))
        context = dict(
            s.get("ctx") or {}, attempt=int(s.get("restarts", 0)) + int((s.get("ctx") or {}).get("attempt", 0))
        )
        spec = process_spec(
            pod,
            ct,
            launch,
            node=node,
            ctx=context,
            speedup=ctx.speedup,
            run_s=s.get("run_s"),
            exit_code=int(s.get("exit", 0)),
        )
        s["proc"] = {"container": ct["name"]}
        if s.get("hang"):
            s["proc"]["hang"] = dict(s["hang"])
        key = f"{c.key}/{pod['metadata']['uid']}/{s.get('restarts', 0)}"
        runner.start(s["proc"], spec, ctx.now, ctx.metrics, key)
        if s["proc"].get("mlflow"):
            c.sim.setdefault(RUNS, {})[key] = pod["metadata"]["uid"]
    return []


def run(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> int | None:
    """Advance a training or submitter pod; the exit code once its process has ended."""
    if s.get("log") == "ray-submit":
        return _tail_driver(c, pod, s)
    proc = s.get("proc") or {}
    if "spec" not in proc:
        return None
    joined = _joined(c, pod, s) if proc.get("joined") is None else None
    done = runner.advance(proc, ctx.speedup, ctx.now, emitter(c, pod, proc["container"]), ctx.metrics, joined)
    return int(proc["spec"].get("exit", 0)) if done else None


def _joined(c: Cluster, pod: Obj, s: dict[str, Any]) -> float | None:
    """When the last process of this pod's job started (the rendezvous), None while one of its
    `nnodes` pods has no process yet. A pod outside a training job has no one to wait for. Once one
    rank has passed the rendezvous, its time holds for the others, even after that rank has exited
    (a short program can end in the tick that saw the last rank start)."""
    job = (s.get("ctx") or {}).get("job")
    nnodes = int((s.get("ctx") or {}).get("nnodes", 1) or 1)
    own = float((s.get("proc") or {}).get("t0", 0.0))
    if not job or nnodes <= 1:
        return own
    ns = pod["metadata"].get("namespace", "")
    starts = []
    for peer in c.list("/pods", ns):
        ps = c.sim.get(peer["metadata"]["uid"]) or {}
        if (ps.get("ctx") or {}).get("job") != job:
            continue
        proc = ps.get("proc") or {}
        if "spec" not in proc:
            continue
        if proc.get("joined") is not None and float(proc["joined"]) >= own:  # not an earlier attempt's
            return float(proc["joined"])
        if (peer.get("status") or {}).get("phase") == "Running" and not proc.get("finished"):
            starts.append(float(proc["t0"]))
    return max(starts) if len(starts) >= nnodes else None


def print_due(c: Cluster, ctx: Ctx) -> None:
    """First in every tick: each running training program prints what is due by now, so the operator's
    log monitoring judges the lines printed by now (the kubelet, later in the tick, ends the container
    of one that has exited)."""
    for pod in c.list("/pods"):
        s = c.sim.get(pod["metadata"]["uid"]) or {}
        proc = s.get("proc") or {}
        running = (pod.get("status") or {}).get("phase") == "Running" and s.get("backoff_until") is None
        if running and s.get("log") == "training" and "spec" in proc and not proc.get("finished"):
            ctx.per_object(c, "printer", pod, run, c, ctx, pod, s)


def crash(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any], code: int) -> list[str]:
    """The process was killed by a fault: its last words, and its MLflow run ends FAILED."""
    proc = s.get("proc") or {}
    lines = runner.crash_lines(proc, code, ctx.now)
    runner.stop(proc, ctx.metrics, "FAILED", ctx.now)
    return lines


def stop_process(c: Cluster, ctx: Ctx, pod: Obj, proc: dict[str, Any]) -> None:
    """The operator stops the process (the job failed): its MLflow run ends KILLED."""
    runner.stop(proc, ctx.metrics, "KILLED", ctx.now)


def restart_in_place(c: Cluster, ctx: Ctx, pod: Obj, hang: dict[str, Any] | None) -> None:
    """A process-level restart by the training operator: same pod, processes started anew."""
    s = sim(c, pod)
    proc = s.get("proc")
    if not proc or "spec" not in proc:
        return
    s["attempts"] = int(s.get("attempts", 0)) + 1
    key = f"{c.key}/{pod['metadata']['uid']}/{s.get('restarts', 0)}.{s['attempts']}"
    runner.restart_in_place(proc, ctx.now, ctx.metrics, emitter(c, pod, proc["container"]), key, hang)
    if proc.get("mlflow"):
        c.sim.setdefault(RUNS, {})[key] = pod["metadata"]["uid"]


def hang(c: Cluster, pod: Obj, at: float) -> None:
    """The job's processes on this pod stop making progress now (a `job_hang` fault)."""
    s = sim(c, pod)
    s["hang"] = {"at": at}
    if s.get("proc"):
        s["proc"]["hang"] = {"at": at}


def _tail_driver(c: Cluster, pod: Obj, s: dict[str, Any]) -> int | None:
    """`ray job logs --follow`: copy the driver's new lines; exit 0 once the Ray job is over."""
    job_uid = str((s.get("ctx") or {}).get("rayjob_uid", ""))
    driver = (c.sim.get(job_uid) or {}).get("driver") or {}
    lines = driver.get("log") or []
    dropped = int(driver.get("dropped", 0))  # `tail` counts from the driver's first line, trimmed or not
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    for ts, line in lines[max(int(s.get("tail", 0)) - dropped, 0) :]:
        c.append_log(pod, containers[0]["name"], line, ts)
    s["tail"] = dropped + len(lines)
    if driver.get("status") in ("SUCCEEDED", "FAILED", "STOPPED"):
        return 0
    return None


def reap(c: Cluster, ctx: Ctx, live: set[str]) -> None:
    """MLflow runs of processes whose object is gone (pod deleted by a restart or a cleanup) end KILLED."""
    runs = c.sim.get(RUNS) or {}
    for key, uid in list(runs.items()):
        if uid in live:
            continue
        if ctx.metrics is not None:
            ctx.metrics.end_run(key, "KILLED", int(ctx.now * 1000))
        del runs[key]
