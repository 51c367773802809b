"""`job_hang` faults: a training job's processes stop making progress (no output, no metrics, no exit),
as after a collective that never completes. The current attempt stops at once; each later attempt
the fault still covers stops after `after_steps` steps. A fault for a job that does not exist yet
waits for it (its first attempt then hangs after `after_steps` steps).

The job's sim entry holds `hang = {"left": attempts still to hang, "after": steps}`.
"""

from __future__ import annotations

from typing import Any

from ..operators import HPJ_GR
from ..store import Cluster
from . import trainer_logs
from .base import Ctx, children, pod_active, sim

Obj = dict[str, Any]
PENDING = "_pending_hangs"  # c.sim entry: "{namespace}/{job}" -> {"left", "after"} for jobs not created yet
RJ_GR = "ray.io/rayjobs"


def hang_job(c: Cluster, ctx: Ctx, namespace: str, name: str, count: int, after_steps: int) -> list[str]:
    ns = namespace or "default"
    job = c.get(HPJ_GR, ns, name) if c.type_by_gr(HPJ_GR) else None
    rayjob = c.get(RJ_GR, ns, name) if c.type_by_gr(RJ_GR) else None
    target = job or rayjob
    if target is None:
        c.sim.setdefault(PENDING, {})[f"{ns}/{name}"] = {"left": max(count, 0), "after": after_steps}
        return []
    s = sim(c, target)
    s["hang"] = {"left": max(count - 1, 0), "after": after_steps}
    s["attempt_hang"] = {"at": ctx.now}
    if job is None:
        proc = (s.get("driver") or {}).get("proc")
        if proc is not None:
            proc["hang"] = {"at": ctx.now}
        return [f"driver of {name}"] if proc is not None else []
    hung = []
    for pod in children(c, "/pods", target):
        if pod_active(pod):
            trainer_logs.hang(c, pod, ctx.now)
            hung.append(pod["metadata"]["name"])
    return hung


def adopt_pending(c: Cluster, job: Obj) -> None:
    """A job just appeared: a fault that was waiting for it covers its attempts from the first."""
    key = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
    pending = (c.sim.get(PENDING) or {}).pop(key, None)
    if pending:
        sim(c, job)["hang"] = dict(pending)


def begin_attempt(c: Cluster, job: Obj) -> None:
    """The operator starts an attempt (the first, or a restart): it hangs if the fault still covers it."""
    s = sim(c, job)
    hang = s.get("hang")
    if hang and hang.get("left", 0) > 0:
        hang["left"] -= 1
        s["attempt_hang"] = {"after_step": int(hang["after"])}
    else:
        s.pop("attempt_hang", None)


def attempt_hang(c: Cluster, job: Obj) -> dict[str, Any] | None:
    """How the processes of the job's current attempt hang (None: they do not)."""
    h = sim(c, job).get("attempt_hang")
    return dict(h) if h else None
