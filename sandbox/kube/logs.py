"""`GET /api/v1/namespaces/{ns}/pods/{name}/log`, as kube-apiserver + kubelet answer it.

Options: `container`, `follow`, `previous`, `timestamps`, `sinceSeconds`, `sinceTime`, `tailLines`,
`limitBytes`, validated as PodLogOptions are (422 Invalid with the field). A container is served once
it has started; `previous=true` serves the instance before the last in-place restart (400 when there
is none, as the kubelet says). A followed stream ends when the container stops, the pod goes, the
byte limit is reached, or the client leaves; it never holds the cluster lock while writing.
"""

from __future__ import annotations

import calendar
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import errors
from .store import Cluster
from .watch import MAX_WATCH_SECONDS, client_gone

Obj = dict[str, Any]


@dataclass
class LogOptions:
    container: str
    follow: bool
    previous: bool
    timestamps: bool
    since: float | None  # wall time: lines at or after it
    tail: int | None
    limit: int | None


def _parse_time(value: str) -> float | None:
    try:
        whole, _, frac = value.rstrip("Z").partition(".")
        if "+" in whole[10:]:
            return None
        return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + (float(f"0.{frac}") if frac else 0.0)
    except ValueError:
        return None


def options(pod: Obj, q: dict[str, str]) -> LogOptions:
    name = pod["metadata"]["name"]
    causes = []

    def integer(key: str, minimum: int) -> int | None:
        raw = q.get(key)
        if raw in (None, ""):
            return None
        try:
            v = int(raw)
        except ValueError:
            raise errors.bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax')
        if v < minimum:
            bound = "greater than 0" if minimum == 1 else "greater than or equal to 0"
            causes.append(errors.cause(key, f"Invalid value: {v}: must be {bound}"))
        return v

    since_s = integer("sinceSeconds", 1)
    tail = integer("tailLines", 0)
    limit = integer("limitBytes", 1)
    since_t = None
    if q.get("sinceTime"):
        since_t = _parse_time(q["sinceTime"])
        if since_t is None:
            raise errors.bad_request(f'parsing time "{q["sinceTime"]}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    if since_s is not None and since_t is not None:
        causes.append(
            errors.cause(
                "", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified", "FieldValueForbidden"
            )
        )
    if causes:
        raise errors.invalid("", "PodLogOptions", name, causes)
    containers = [x.get("name") for x in (pod.get("spec") or {}).get("containers") or []]
    inits = [x.get("name") for x in (pod.get("spec") or {}).get("initContainers") or []]
    container = q.get("container")
    if not container:
        if len(containers) != 1:
            raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: {containers}")
        container = containers[0]
    if container not in containers + inits:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    truthy = ("true", "1")
    return LogOptions(
        container=container,
        follow=q.get("follow") in truthy,
        previous=q.get("previous") in truthy,
        timestamps=q.get("timestamps") in truthy,
        since=since_t if since_t is not None else (time.time() - since_s if since_s is not None else None),
        tail=tail,
        limit=limit,
    )


def _key(uid: str, o: LogOptions) -> str:
    return f"{uid}/{o.container}/previous" if o.previous else f"{uid}/{o.container}"


def check_available(c: Cluster, pod: Obj, o: LogOptions) -> None:
    name = pod["metadata"]["name"]
    if o.previous:
        if _key(pod["metadata"]["uid"], o) not in c.logs:
            raise errors.bad_request(f'previous terminated container "{o.container}" in pod "{name}" not found')
        return
    st = pod.get("status") or {}
    for cs in st.get("containerStatuses") or []:
        if cs.get("name") != o.container:
            continue
        state = cs.get("state") or {}
        if "running" in state or "terminated" in state or (cs.get("lastState") or {}).get("terminated"):
            return
        reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
        raise errors.bad_request(f'container "{o.container}" in pod "{name}" is waiting to start: {reason}')
    raise errors.bad_request(f'container "{o.container}" in pod "{name}" is waiting to start: ContainerCreating')


def select(lines: list[list[str]], o: LogOptions) -> list[list[str]]:
    out = lines
    if o.since is not None:
        out = [x for x in out if (_parse_time(x[0]) or 0.0) >= o.since]
    if o.tail is not None:
        out = out[-o.tail :] if o.tail > 0 else []
    return out


def render(lines: list[list[str]], timestamps: bool) -> bytes:
    return "".join(f"{ts} {line}\n" if timestamps else f"{line}\n" for ts, line in lines).encode()


def text(c: Cluster, pod: Obj, o: LogOptions) -> bytes:
    data = render(select(c.logs.get(_key(pod["metadata"]["uid"], o), []), o), o.timestamps)
    return data[: o.limit] if o.limit else data


def _running(pod: Obj | None, uid: str, container: str) -> bool:
    """Whether more output can come: the same pod, not finished, the container not terminated."""
    if pod is None or pod["metadata"]["uid"] != uid:
        return False
    st = pod.get("status") or {}
    if st.get("phase") in ("Succeeded", "Failed"):
        return False
    for cs in st.get("containerStatuses") or []:
        if cs.get("name") == container:
            return "running" in (cs.get("state") or {})
    return True


def follow(c: Cluster, pod: Obj, o: LogOptions, sock: socket.socket | None = None) -> Iterator[bytes]:
    """Existing lines, then new ones as they come, until the container stops (or the byte limit)."""
    yield b""
    ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
    key = _key(uid, o)
    left = o.limit
    with c.lock:
        lines = c.logs.get(key, [])
        first = select(lines, o)
        pos = c.log_end(key)  # absolute: lines trimmed from a full log's front do not move it
    chunk = render(first, o.timestamps)
    if left is not None:
        chunk, left = chunk[:left], left - len(chunk[:left])
    if chunk:
        yield chunk
    if o.previous or left == 0:
        return
    deadline = time.monotonic() + MAX_WATCH_SECONDS
    while time.monotonic() < deadline:
        with c.lock:
            if c.closed:
                return
            new, pos = c.log_after(key, pos)
            alive = _running(c.get("/pods", ns, name), uid, o.container)
            if not new and alive:
                if client_gone(sock):
                    return
                c.cond.wait(0.5)
                continue
        if new:
            chunk = render(new, o.timestamps)
            if left is not None:
                chunk, left = chunk[:left], left - len(chunk[:left])
            yield chunk
            if left == 0:
                return
        if not alive:
            return
