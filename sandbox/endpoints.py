"""Stable loopback addresses: the sandbox's own port, and one port per EKS cluster's Kubernetes API.

An EKS endpoint is the root of its API server (`https://ABC.gr7.us-west-2.eks.amazonaws.com`): kubectl
and every client that builds paths itself (`/version`, `/openapi/v3`, discovery) expect that. So each
cluster gets a listener of its own on 127.0.0.1, `http://127.0.0.1:<port>`, and its requests reach
the Kubernetes half exactly as `/k8s/{account}/{region}/{cluster}/...` does on the main port.

Ports are recorded in `<state_dir>/endpoints.json` the moment they are chosen and reused after a
restart, so an endpoint the product recorded (and a user copied into `kubectl --server`) keeps
working. When another program took a recorded port meanwhile, the cluster moves to a new port: the
sandbox logs it and DescribeCluster reports the new endpoint (which the product reads before every
connection).

All listeners share one accept thread (a selector over their sockets); each request then runs on a
thread of its own, as on the main server. A thread per cluster would cost hundreds of idle threads
waking up for nothing on a sandbox with hundreds of clusters.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import queue
import selectors
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("sandbox")

HOST = "127.0.0.1"
FILE = "endpoints.json"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Any]


def bind(port: int, host: str = HOST) -> socket.socket | None:
    """A listening socket on host:port, or None when the port is taken (port 0: any free port).

    werkzeug's make_server exits the process when its port is taken; binding here and handing it
    the descriptor lets the sandbox fall back to another port instead."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is still ours
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno in (errno.EADDRINUSE, errno.EACCES):
            return None
        raise
    return sock


def serve_on(sock: socket.socket, app: WsgiApp, handler: Any) -> Any:
    """A threaded werkzeug server on an already bound socket (the socket is handed over)."""
    from werkzeug.serving import make_server

    try:
        srv = make_server(HOST, sock.getsockname()[1], app, threaded=True, request_handler=handler, fd=sock.fileno())
    finally:
        sock.close()  # werkzeug serves a duplicate of the descriptor
    # server_bind (skipped for a handed-over socket) is what sets these on an http.server
    srv.server_name, srv.server_port = HOST, srv.port
    return srv


def quiet_handler() -> Any:
    from werkzeug.serving import WSGIRequestHandler

    class Quiet(WSGIRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive and chunked watch streams, as the main server

        def log_request(self, *a: Any, **k: Any) -> None:
            pass

    return Quiet


class Endpoints:
    """The port registry and the per-cluster listeners of one Sandbox."""

    def __init__(self, state_dir: Path | None, cluster_app: Callable[[str], WsgiApp]) -> None:
        self.state_dir = state_dir
        self._cluster_app = cluster_app  # key -> WSGI app serving that cluster at the root
        self._lock = threading.Lock()
        self._recorded: dict[str, Any] = {"aws": None, "clusters": {}}
        self._servers: dict[str, Any] = {}  # key -> werkzeug server
        self._changes: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._handler = quiet_handler()
        if state_dir and (state_dir / FILE).exists():
            try:
                data = json.loads((state_dir / FILE).read_text())
                self._recorded = {"aws": data.get("aws"), "clusters": dict(data.get("clusters") or {})}
            except (OSError, ValueError):
                log.warning("sandbox: %s is unreadable; ports are chosen afresh", state_dir / FILE)

    # ---- the sandbox's own port -----------------------------------------------------------------
    def main_socket(self, requested: int) -> socket.socket:
        """The socket of the AWS/control server: the requested port, else the one used last time,
        else any free one."""
        if requested:
            sock = bind(requested)
            if sock is None:
                raise OSError(errno.EADDRINUSE, f"port {requested} on {HOST} is in use by another program")
            return sock
        recorded = self._recorded.get("aws")
        sock = bind(int(recorded)) if recorded else None
        if sock is None:
            if recorded:
                log.warning("sandbox: port %s (used last time) is taken; the sandbox moves to a new port", recorded)
            sock = bind(0)
            assert sock is not None
        return sock

    def record_main(self, port: int) -> None:
        with self._lock:
            self._recorded["aws"] = port
            self._save()

    # ---- per-cluster API servers ------------------------------------------------------------
    def endpoint(self, key: str) -> str:
        """`http://127.0.0.1:<port>` of the cluster `account/region/name`, serving from now on."""
        with self._lock:
            srv = self._servers.get(key)
            if srv is None:
                srv = self._listen(key)
            return f"http://{HOST}:{srv.server_port}"

    def port_of(self, key: str) -> int | None:
        with self._lock:
            srv = self._servers.get(key)
            return srv.server_port if srv is not None else None

    def drop(self, key: str) -> None:
        """The cluster is gone: stop listening and forget its port."""
        with self._lock:
            srv = self._servers.pop(key, None)
            forgotten = self._recorded["clusters"].pop(key, None) is not None
            if forgotten:
                self._save()
        if srv is not None:
            self._changes.put(("remove", srv))
            self._wake()

    def _listen(self, key: str) -> Any:
        recorded = self._recorded["clusters"].get(key)
        sock = bind(int(recorded)) if recorded else None
        if sock is None:
            sock = bind(0)
            assert sock is not None
            if recorded:
                log.warning(
                    "sandbox: port %s of EKS cluster %s is taken by another program; its API now listens on "
                    "port %s (DescribeCluster reports the new endpoint)",
                    recorded,
                    key,
                    sock.getsockname()[1],
                )
        srv = serve_on(sock, self._cluster_app(key), self._handler)
        self._servers[key] = srv
        if self._recorded["clusters"].get(key) != srv.server_port:
            self._recorded["clusters"][key] = srv.server_port
            self._save()
        self._changes.put(("add", srv))
        self._ensure_thread()
        self._wake()
        return srv

    def _save(self) -> None:
        """Written at once (not with the periodic snapshot): a port handed out is a promise."""
        if not self.state_dir:
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_dir / (FILE + ".tmp")
        tmp.write_text(json.dumps(self._recorded, indent=1, sort_keys=True))
        os.replace(tmp, self.state_dir / FILE)

    # ---- the accept loop ---------------------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._accept_loop, name="sandbox-kube-endpoints", daemon=True)
            self._thread.start()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _accept_loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ, None)
        while not self._stop.is_set():
            for fkey, _ in sel.select(timeout=1.0):
                srv = fkey.data
                if srv is None:
                    self._wake_r.recv(4096)
                    continue
                try:
                    # what serve_forever does per ready socket: accept, then a thread for the request
                    srv._handle_request_noblock()
                except Exception:  # noqa: BLE001 - one bad connection must not stop the other clusters
                    log.exception("sandbox: accepting a Kubernetes API connection failed")
            while True:
                try:
                    op, srv = self._changes.get_nowait()
                except queue.Empty:
                    break
                if op == "add":
                    sel.register(srv.socket, selectors.EVENT_READ, srv)
                else:
                    try:
                        sel.unregister(srv.socket)
                    except (KeyError, ValueError):
                        pass
                    srv.server_close()
        sel.close()

    def close(self) -> None:
        """Stop every cluster listener (server shutdown); recorded ports stay for the next start."""
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for srv in servers:
            srv.server_close()
        while not self._changes.empty():
            self._changes.get_nowait()
        self._wake_r.close()
        self._wake_w.close()
