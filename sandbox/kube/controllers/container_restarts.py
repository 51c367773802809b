"""In-place container restarts, as the kubelet does them for restartPolicy Always (any exit) and
OnFailure (a non-zero exit): the pod stays Running and NotReady, the container waits in
CrashLoopBackOff (no wait before the first restart, then 10 s, 20 s, … up to 5 min, simulated), its
lastState records how it ended, restartCount goes up when it starts again, and its log up to then is
what `kubectl logs --previous` shows (the kubelet keeps one previous instance per container).
"""

from __future__ import annotations

from typing import Any

from ..store import Cluster, now_iso
from ..util import clone
from .base import Ctx, set_condition, sim

Obj = dict[str, Any]
BACKOFF_START, BACKOFF_MAX = 10.0, 300.0


def restarts(pod: Obj, exit_code: int) -> bool:
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def previous_key(uid: str, container: str) -> str:
    return f"{uid}/{container}/previous"


def terminated(cs: Obj, exit_code: int, reason: str, message: str, ts: str) -> Obj:
    """A container status's `terminated` state: how the instance that ran ended."""
    term = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": ((cs.get("state") or {}).get("running") or {}).get("startedAt", ts),
        "finishedAt": ts,
        "containerID": cs.get("containerID"),
    }
    if message:
        term["message"] = message
    return term


def exited(c: Cluster, ctx: Ctx, pod: Obj, exit_code: int, reason: str, message: str = "") -> None:
    s = sim(c, pod)
    n = int(s.get("restarts", 0))
    backoff = 0.0 if n == 0 else min(BACKOFF_START * 2 ** (n - 1), BACKOFF_MAX)
    s["backoff_until"] = ctx.now + backoff / ctx.speedup
    ts = now_iso()
    st = clone(pod.get("status") or {})
    name = pod["metadata"]["name"]
    new_cs = []
    for cs in st.get("containerStatuses") or []:
        term = terminated(cs, exit_code, reason, message, ts)
        waiting = {
            "reason": "CrashLoopBackOff",
            "message": f"back-off {int(backoff) or 10}s restarting failed container={cs.get('name')} "
            f"pod={name}_{pod['metadata']['namespace']}({pod['metadata']['uid']})",
        }
        # until the back-off starts the container shows how it ended
        state = {"terminated": term} if backoff == 0 else {"waiting": waiting}
        new_cs.append(dict(cs, state=state, lastState={"terminated": term}, ready=False, started=False))
        if backoff:
            c.record_event(
                pod,
                "BackOff",
                f"Back-off restarting failed container {cs.get('name')} in pod "
                f"{name}_{pod['metadata']['namespace']}({pod['metadata']['uid']})",
                "Warning",
            )
    st["containerStatuses"] = new_cs
    for t in ("Ready", "ContainersReady"):
        st["conditions"] = set_condition(
            st.get("conditions") or [],
            t,
            "False",
            "ContainersNotReady",
            "containers with unready status: [" + " ".join(x.get("name", "") for x in new_cs) + "]",
        )
    c.put_status("/pods", pod, st)


def due(ctx: Ctx, s: dict[str, Any]) -> bool:
    return ctx.now >= float(s["backoff_until"])


def restart(c: Cluster, ctx: Ctx, pod: Obj, s: dict[str, Any]) -> None:
    """Start the containers again: the current log becomes the previous one."""
    s.pop("backoff_until", None)
    s["restarts"] = int(s.get("restarts", 0)) + 1
    uid = pod["metadata"]["uid"]
    ts = now_iso()
    st = clone(pod.get("status") or {})
    new_cs = []
    for cs, ct in zip(st.get("containerStatuses") or [], (pod.get("spec") or {}).get("containers") or [], strict=False):
        name = ct.get("name", "")
        key = f"{uid}/{name}"
        end = c.log_end(key)  # the new container's lines go on from here (positions stay absolute)
        c.logs[previous_key(uid, name)] = c.logs.pop(key, [])
        c.log_trimmed[previous_key(uid, name)] = c.log_trimmed.get(key, 0)
        c.log_trimmed[key] = end
        c.record_event(pod, "Pulled", f'Container image "{ct.get("image")}" already present on machine')
        c.record_event(pod, "Created", f"Created container: {name}")
        c.record_event(pod, "Started", f"Started container {name}")
        new_cs.append(
            dict(cs, state={"running": {"startedAt": ts}}, ready=True, started=True, restartCount=s["restarts"])
        )
    st["containerStatuses"] = new_cs
    for t in ("Ready", "ContainersReady"):
        st["conditions"] = set_condition(st.get("conditions") or [], t, "True")
    c.put_status("/pods", pod, st)
