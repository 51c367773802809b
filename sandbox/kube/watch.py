"""Streaming responses: watch events (newline-delimited JSON); `logs -f` is in logs.py.

Each stream waits on the cluster's condition variable with short timeouts and never holds
the lock while writing to the socket, so a slow client cannot block the API server.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from .errors import gone
from .resources import ResourceType
from .store import Cluster

Obj = dict[str, Any]
MAX_WATCH_SECONDS = 1800.0


def present(rt: ResourceType, obj: Obj) -> Obj:
    """The object as served at the requested version (CRD versions share one store)."""
    if obj.get("apiVersion") != rt.api_version:
        obj = dict(obj, apiVersion=rt.api_version)
    return obj


def _line(etype: str, obj: Obj) -> bytes:
    return (json.dumps({"type": etype, "object": obj}, separators=(",", ":")) + "\n").encode()


def client_gone(sock: socket.socket | None) -> bool:
    """Whether the peer closed the connection (readable with nothing to read). Streams write only
    when something happens, so without this check an abandoned watch would hold its thread until
    its timeout."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def watch_stream(
    c: Cluster,
    rt: ResourceType,
    namespace: str | None,
    pred: Callable[[Obj], bool],
    rv: str | None,
    timeout: float | None,
    transform: Callable[[Obj], Obj] | None = None,
    sock: socket.socket | None = None,
) -> Iterator[bytes]:
    """Newline-delimited watch events; `transform` renders objects (e.g. as one-row Tables for kubectl).
    The first (empty) chunk makes the server send the response headers at once, as the apiserver does:
    clients wait for them before they consider the watch established."""
    yield b""
    if transform is not None:

        def _present(rt: ResourceType, obj: Obj) -> Obj:
            return transform(present(rt, obj))
    else:
        _present = present

    deadline = time.monotonic() + min(timeout if timeout is not None else MAX_WATCH_SECONDS, MAX_WATCH_SECONDS)

    def ok(o: Obj | None) -> bool:
        if o is None:
            return False
        if namespace is not None and o["metadata"].get("namespace", "") != namespace:
            return False
        return pred(o)

    initial: list[bytes] = []
    with c.lock:
        if rv in (None, "", "0"):
            for o in c.list(rt.gr, namespace):
                if ok(o):
                    initial.append(_line("ADDED", _present(rt, o)))
            last = c.rv
        else:
            try:
                last = int(rv)
            except ValueError:
                last = c.rv
            oldest = c.history[0].rv if c.history else c.rv + 1
            if last < oldest - 1 and len(c.history) == c.history.maxlen:
                err = gone(f"too old resource version: {last} ({oldest - 1})").status()
                initial.append(_line("ERROR", err))
                yield from initial
                return
    yield from initial

    while True:
        out: list[bytes] = []
        with c.lock:
            if c.closed:
                return
            pending = []
            for ev in reversed(c.history):
                if ev.rv <= last:
                    break
                pending.append(ev)
            if not pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or client_gone(sock):
                    return
                c.cond.wait(min(remaining, 1.0))
                continue
            pending.reverse()
            for ev in pending:
                last = ev.rv
                if ev.gr != rt.gr:
                    continue
                new_ok, old_ok = ok(ev.obj), ok(ev.old)
                if ev.type == "ADDED" and new_ok:
                    out.append(_line("ADDED", _present(rt, ev.obj)))
                elif ev.type == "MODIFIED":
                    if new_ok and old_ok:
                        out.append(_line("MODIFIED", _present(rt, ev.obj)))
                    elif new_ok:
                        out.append(_line("ADDED", _present(rt, ev.obj)))
                    elif old_ok:
                        out.append(_line("DELETED", _present(rt, ev.obj)))
                elif ev.type == "DELETED" and (old_ok or new_ok):
                    out.append(_line("DELETED", _present(rt, ev.obj)))
        if out:
            yield b"".join(out)
        if time.monotonic() >= deadline:
            return
