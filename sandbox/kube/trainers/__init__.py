"""Simulated training programs: what each recipe's processes really print and log to MLflow.

launch.py         which program a container runs (command / args / env), e.g. `torchrun train.py`
program.py        the common shape: startup lines over time, steps, curves, completion lines
pytorch.py, llama_factory.py, ms_swift.py, verl.py   one module per program
ray_nodes.py      `ray start` on head/worker pods and `ray job submit` in a RayJob's submitter pod
hardware.py       accelerators per instance type, for plausible throughput
runner.py         runs a program over time for one process; queues MLflow values (never sends them)
"""

from __future__ import annotations

from typing import Any

from .launch import PYTORCH, Launch, entrypoint_launch, recognise

__all__ = ["Launch", "entrypoint_launch", "process_spec", "recognise"]


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: str(e.get("value", "")) for e in container.get("env") or [] if e.get("name") and "value" in e}


def _quantity(container: dict[str, Any], name: str) -> int:
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        v = (res.get(part) or {}).get(name)
        if v is not None:
            try:
                return int(str(v))
            except ValueError:
                return 0
    return 0


def process_spec(
    pod: dict[str, Any],
    container: dict[str, Any],
    launch: Launch | None,
    *,
    node: dict[str, Any] | None,
    ctx: dict[str, Any],
    speedup: float,
    run_s: float | None,
    exit_code: int,
) -> dict[str, Any]:
    """Everything a program needs about the process it simulates, as plain data."""
    env = _env(container)
    gpus = _quantity(container, "nvidia.com/gpu")
    nproc = int(ctx.get("nproc") or env.get("NPROC_PER_NODE") or env.get("PET_NPROC_PER_NODE") or gpus or 1)
    world = int(ctx.get("world_size") or env.get("WORLD_SIZE") or nproc)
    nnodes = int(ctx.get("nnodes") or env.get("NNODES") or max(world // max(nproc, 1), 1))
    rank = int(ctx.get("rank", env.get("NODE_RANK", 0)) or 0)
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    launch = launch or Launch(PYTORCH, "python")
    return {
        "launch": launch.to_dict(),
        "env": env,
        "job": ctx.get("job") or pod["metadata"]["name"],
        "pod": pod["metadata"]["name"],
        "pod_ip": (pod.get("status") or {}).get("podIP", ""),
        "master": env.get("MASTER_ADDR", pod["metadata"]["name"]),
        "rank": rank,
        "nnodes": nnodes,
        "nproc": nproc,
        "itype": labels.get("node.kubernetes.io/instance-type", ""),
        "efa": _quantity(container, "vpc.amazonaws.com/efa"),
        "gpus": gpus,
        "seed": ctx.get("seed"),
        "attempt": int(ctx.get("attempt", 0)),
        "speedup": speedup,
        "run_s": run_s,
        "exit": exit_code,
    }
