"""A RayJob's Ray job: the driver process KubeRay's submitter starts on the cluster with `ray job submit`.

It runs on the Ray cluster, not in the submitter pod: the submitter only tails its log (`ray job logs
--follow`), so a restarted submitter re-attaches instead of starting it again. Its program is read from
`spec.entrypoint` (e.g. `python3 -m verl.trainer.main_ppo …`; an image whose name contains `verl` counts
too); its env is the head container's plus `runtimeEnvYAML`'s env_vars. The Ray job status (what the
dashboard answers KubeRay) is PENDING → RUNNING → SUCCEEDED / FAILED, with Ray's messages.

RayJob sim entry: `driver = {"status", "message", "log": [[ts, line]] (the newest MAX_DRIVER_LINES),
"dropped": lines trimmed from the log's front, "proc": runner state, "start_ms", "end_ms"}`.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..store import Cluster
from ..trainers import Launch, entrypoint_launch, process_spec, runner
from ..trainers.launch import VERL
from ..trainers.ray_nodes import driver_generic_lines
from .base import ANN_EXIT_CODE, ANN_RUN_SECONDS, Ctx, sim
from .trainer_logs import RUNS, rfc3339

Obj = dict[str, Any]
MAX_DRIVER_LINES = 5000
TAIL_CHARS = 20000  # Ray quotes this much of the driver log in a failed job's message


def launch_of(rj: Obj) -> Launch | None:
    spec = rj.get("spec") or {}
    found = entrypoint_launch(str(spec.get("entrypoint", "")))
    if found is not None:
        return found
    head = (((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    if any("verl" in str(ct.get("image", "")).lower() for ct in head.get("containers") or []):
        return Launch(VERL, "python", "verl.trainer.main_ppo")
    return None


def submit(c: Cluster, ctx: Ctx, rj: Obj, head: Obj | None, workers: int) -> None:
    """`ray job submit` reached the dashboard: the driver starts."""
    s = sim(c, rj)
    if s.get("driver"):
        return
    spec = rj.get("spec") or {}
    ann = rj["metadata"].get("annotations") or {}
    head = head or {"metadata": {"name": "", "uid": ""}, "spec": {}, "status": {}}
    head_ct = dict(((head.get("spec") or {}).get("containers") or [{}])[0])
    env = list(head_ct.get("env") or [])
    try:
        runtime = yaml.safe_load(spec.get("runtimeEnvYAML") or "") or {}
    except yaml.YAMLError:
        runtime = {}
    env += [
        {"name": k, "value": str(v)}
        for k, v in ((runtime.get("env_vars") or {}) if isinstance(runtime, dict) else {}).items()
    ]
    head_ct["env"] = env
    node = c.get("/nodes", "", (head.get("spec") or {}).get("nodeName", ""))
    gpus = 0
    for part in ("limits", "requests"):
        gpus = gpus or int(str(((head_ct.get("resources") or {}).get(part) or {}).get("nvidia.com/gpu", 0)) or 0)
    launch = launch_of(rj)
    run_s = ann.get(ANN_RUN_SECONDS)
    pspec = process_spec(
        {"metadata": {"name": head["metadata"]["name"]}, "status": head.get("status") or {}},
        head_ct,
        launch,
        node=node,
        ctx={
            "job": rj["metadata"]["name"],
            "rank": 0,
            "nnodes": 1 + workers,
            "nproc": max(gpus, 1),
            "world_size": (1 + workers) * max(gpus, 1),
        },
        speedup=ctx.speedup,
        run_s=float(run_s) if run_s is not None else None,
        exit_code=int(ann.get(ANN_EXIT_CODE, 0) or 0),
    )
    pspec["head"] = head["metadata"]["name"]
    pspec["head_ip"] = (head.get("status") or {}).get("podIP", "")
    driver: dict[str, Any] = {
        "status": "RUNNING",
        "message": "",
        "log": [],
        "proc": {},
        "start_ms": int(ctx.now * 1000),
    }
    s["driver"] = driver
    if launch is None:  # a program the sandbox does not know: Ray's lines, then it runs its time
        for line in driver_generic_lines(ctx.now, pspec["head_ip"], str(spec.get("entrypoint", ""))):
            driver["log"].append([rfc3339(ctx.now), line])
    attempt_hang = s.get("attempt_hang")
    if attempt_hang:
        driver["proc"]["hang"] = dict(attempt_hang)
    key = f"{c.key}/{rj['metadata']['uid']}/{s.get('attempt', 0)}"
    runner.start(driver["proc"], pspec, ctx.now, ctx.metrics, key)
    if driver["proc"].get("mlflow"):
        c.sim.setdefault(RUNS, {})[key] = rj["metadata"]["uid"]


def advance(c: Cluster, ctx: Ctx, rj: Obj, head_alive: bool) -> None:
    """Run the driver; on exit, the Ray job's final status and message."""
    driver = sim(c, rj).get("driver")
    if not driver or driver["status"] not in ("PENDING", "RUNNING"):
        return
    log = driver["log"]

    def emit(line: str, t: float) -> None:
        log.append([rfc3339(t), line])
        if len(log) > MAX_DRIVER_LINES:  # the oldest lines go; `dropped` keeps positions in it absolute
            driver["dropped"] = int(driver.get("dropped", 0)) + len(log) - MAX_DRIVER_LINES
            del log[: len(log) - MAX_DRIVER_LINES]

    if not head_alive:
        runner.stop(driver["proc"], ctx.metrics, "FAILED", ctx.now)
        _end(
            driver, ctx, "FAILED", "Unexpected error occurred: The actor died unexpectedly before finishing this task."
        )
        return
    if not runner.advance(driver["proc"], ctx.speedup, ctx.now, emit, ctx.metrics):
        return
    code = int(driver["proc"]["spec"].get("exit", 0))
    if code == 0:
        _end(driver, ctx, "SUCCEEDED", "Job finished successfully.")
    else:
        tail = "\n".join(line for _, line in log)[-TAIL_CHARS:]
        _end(
            driver,
            ctx,
            "FAILED",
            f"Job entrypoint command failed with exit code {code}, last available logs "
            f"(truncated to 20,000 chars):\n{tail}",
        )


def _end(driver: dict[str, Any], ctx: Ctx, status: str, message: str) -> None:
    driver.update(status=status, message=message, end_ms=int(ctx.now * 1000))


def forget(c: Cluster, rj: Obj, ctx: Ctx) -> None:
    """The Ray job is gone with its cluster (a RayJob retry, or suspend)."""
    s = sim(c, rj)
    driver = s.pop("driver", None)
    if driver:
        runner.stop(driver.get("proc") or {}, ctx.metrics, "KILLED", ctx.now)
