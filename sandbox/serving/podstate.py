"""Pod status changes a serving process causes, written as the kubelet writes them: Ready once the
server answers, and CrashLoopBackOff (restartCount, lastState.terminated, back-off event) when the
engine dies at start. The pod stays phase Running, its ReplicaSet does not replace it."""

from __future__ import annotations

from typing import Any

from ..kube.controllers.base import set_condition
from ..kube.store import Cluster, now_iso
from ..kube.util import clone

Obj = dict[str, Any]
BACKOFF_START = 10.0  # simulated seconds; doubles per restart up to BACKOFF_MAX, as the kubelet does
BACKOFF_MAX = 300.0


def backoff(restarts: int) -> float:
    return min(BACKOFF_START * 2 ** max(restarts - 1, 0), BACKOFF_MAX)


def set_ready(c: Cluster, pod: Obj, ready: bool, names: set[str] | None = None) -> None:
    """Containers in `names` (all when None) become ready (or not); the pod is Ready when all are."""
    st = clone(pod.get("status") or {})
    css = st.get("containerStatuses") or []
    for cs in css:
        if names is None or cs.get("name") in names:
            cs["ready"] = ready and "running" in (cs.get("state") or {})
    all_ready = bool(css) and all(cs.get("ready") for cs in css)
    not_ready = [cs.get("name", "") for cs in css if not cs.get("ready")]
    msg = "" if all_ready else "containers with unready status: [" + " ".join(not_ready) + "]"
    for t in ("ContainersReady", "Ready"):
        st["conditions"] = set_condition(
            st.get("conditions") or [],
            t,
            "True" if all_ready else "False",
            "" if all_ready else "ContainersNotReady",
            msg,
        )
    c.put_status("/pods", pod, st)


def crash(c: Cluster, pod: Obj, container: str, restarts: int, wait_s: float) -> None:
    """The container exited 1 at start: back-off before the next restart."""
    st = clone(pod.get("status") or {})
    ts = now_iso()
    for cs in st.get("containerStatuses") or []:
        if cs.get("name") != container:
            continue
        started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", ts)
        cs["lastState"] = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": started,
                "finishedAt": ts,
                "containerID": cs.get("containerID"),
            }
        }
        cs["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {int(wait_s)}s restarting failed container={container} "
                f"pod={pod['metadata']['name']}_{pod['metadata']['namespace']}({pod['metadata']['uid']})",
            }
        }
        cs["ready"] = False
        cs["started"] = False
        cs["restartCount"] = restarts
    c.put_status("/pods", pod, st)
    fresh = c.get("/pods", pod["metadata"]["namespace"], pod["metadata"]["name"]) or pod
    set_ready(c, fresh, False, {container})
    c.record_event(
        pod,
        "BackOff",
        f"Back-off restarting failed container {container} in pod "
        f"{pod['metadata']['name']}_{pod['metadata']['namespace']}({pod['metadata']['uid']})",
        "Warning",
    )


def restart(c: Cluster, pod: Obj, container: str) -> None:
    st = clone(pod.get("status") or {})
    for cs in st.get("containerStatuses") or []:
        if cs.get("name") == container:
            cs["state"] = {"running": {"startedAt": now_iso()}}
            cs["started"] = True
    c.put_status("/pods", pod, st)
    image = next(
        (x.get("image") for x in (pod.get("spec") or {}).get("containers") or [] if x.get("name") == container), ""
    )
    c.record_event(pod, "Pulled", f'Container image "{image}" already present on machine')
    c.record_event(pod, "Created", f"Created container: {container}")
    c.record_event(pod, "Started", f"Started container {container}")
