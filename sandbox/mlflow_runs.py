"""Simulated trainers' MLflow runs, sent to the real MLflow servers over its REST API.

The Kubernetes half calls `start_run / log / end_run` while it holds a cluster lock; those calls only
queue. One thread turns the queue into REST calls: an experiment looked up (or created) by name, a
run per attempt, metrics in `runs/log-batch` calls of up to 1000 values (one call costs ~70 ms, so
values are never sent one by one), and the run's end status. A server that is not up yet (a tracking
server still Creating) is retried; a URI that leads nowhere (no such server, or not loopback) is
dropped, with a warning, as its values would be by a trainer that cannot reach it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("sandbox.mlflow")

BATCH = 1000  # the REST API's limit of metrics per log-batch
PARAMS_PER_BATCH = 100
FLUSH_EVERY = 0.3  # seconds between flushes of buffered values
GIVE_UP_AFTER = 600.0  # seconds a run waits for its server to come up before its values are dropped
_INVALID = re.compile(r"[^0-9A-Za-z_\-.\ :/]")


def metric_key(name: str) -> str:
    """MLflow refuses keys with other characters; trainers' callbacks replace them as HF's does."""
    return _INVALID.sub("_", name)


Resolver = Callable[[str], "str | None"]


@dataclass
class _Run:
    key: str
    tracking_uri: str
    experiment: str
    name: str
    params: dict[str, str]
    tags: dict[str, str]
    start_ms: int
    run_id: str | None = None
    base: str | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)
    end: tuple[str, int] | None = None
    since: float = field(default_factory=time.monotonic)  # last success (or creation)
    warned: bool = False


class MlflowRuns:
    """Queue-fed MLflow logging for the sandbox's simulated trainers."""

    def __init__(self, resolver: Resolver, state_file: Path | None = None) -> None:
        self.resolver = resolver
        self._ops: deque[tuple[str, Any]] = deque()
        self._runs: dict[str, _Run] = {}
        # runs still open, kept across a sandbox restart so a process that keeps running keeps its run
        self._state_file = state_file
        self._open: dict[str, dict[str, str]] = {}
        if state_file is not None and state_file.exists():
            try:
                self._open = json.loads(state_file.read_text())
            except ValueError:
                self._open = {}
        self._wake = threading.Event()
        self._closed = False
        self.calls = 0  # REST calls made (benchmarks and tests read it)
        self._thread = threading.Thread(target=self._loop, name="sandbox-mlflow-runs", daemon=True)
        self._thread.start()

    # ---- producer side: cheap, called under the cluster lock ------------------------------------
    def start_run(
        self,
        key: str,
        *,
        tracking_uri: str,
        experiment: str,
        run_name: str,
        params: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
        start_ms: int | None = None,
    ) -> None:
        run = _Run(
            key,
            tracking_uri,
            experiment or "Default",
            run_name,
            {metric_key(k): str(v)[:6000] for k, v in (params or {}).items()},
            dict(tags or {}),
            start_ms or int(time.time() * 1000),
        )
        self._ops.append(("start", run))

    def log(self, key: str, metrics: dict[str, float], step: int, ts_ms: int) -> None:
        self._ops.append(("log", (key, metrics, step, ts_ms)))

    def end_run(self, key: str, status: str = "FINISHED", end_ms: int | None = None) -> None:
        self._ops.append(("end", (key, status, end_ms or int(time.time() * 1000))))
        self._wake.set()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far has been sent (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._ops and all(not r.pending and not (r.end and r.run_id) for r in self._runs.values()):
                return True
            self._wake.set()
            time.sleep(0.05)
        return False

    def close(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        self._closed = True
        self._wake.set()
        self._thread.join(timeout)

    # ---- the sender thread --------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._closed:
            self._wake.wait(FLUSH_EVERY)
            self._wake.clear()
            try:
                self._drain()
                for run in list(self._runs.values()):
                    self._send(run)
            except Exception:  # noqa: BLE001 - the sender must outlive one bad run
                log.exception("mlflow runs: sending failed")

    def _drain(self) -> None:
        while self._ops:
            op, arg = self._ops.popleft()
            if op == "start":
                old = self._runs.get(arg.key)
                if old is not None and old.end is None:
                    old.end = ("KILLED", arg.start_ms)
                    self._send(old)
                self._runs[arg.key] = arg
            elif op == "log":
                key, metrics, step, ts_ms = arg
                run = self._runs.get(key) or self._reopen(key)
                if run is not None:
                    run.pending.extend(
                        {"key": metric_key(k), "value": float(v), "timestamp": ts_ms, "step": int(step)}
                        for k, v in metrics.items()
                        if v is not None
                    )
            elif op == "end":
                key, status, end_ms = arg
                run = self._runs.get(key) or self._reopen(key)
                if run is not None and run.end is None:
                    run.end = (status, end_ms)

    def _reopen(self, key: str) -> _Run | None:
        """A run created before the sandbox restarted, whose process still runs."""
        known = self._open.get(key)
        if known is None:
            return None
        run = _Run(key, known["tracking_uri"], "", known.get("name", ""), {}, {}, 0, run_id=known["run_id"])
        self._runs[key] = run
        return run

    def _remember(self, run: _Run, is_open: bool) -> None:
        if is_open:
            self._open[run.key] = {"run_id": str(run.run_id), "tracking_uri": run.tracking_uri, "name": run.name}
        else:
            self._open.pop(run.key, None)
        if self._state_file is None:
            return
        tmp = self._state_file.with_suffix(".tmp")
        try:
            self._state_file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self._open))
            os.replace(tmp, self._state_file)
        except OSError:
            log.warning("mlflow runs: cannot save %s", self._state_file, exc_info=True)

    def _send(self, run: _Run) -> None:
        if run.base is None:
            run.base = self.resolver(run.tracking_uri)
            if run.base is None:
                if run.tracking_uri.startswith(("http", "file")) or self._failing_too_long(run):
                    self._drop(run, "no MLflow server answers at this tracking URI")
                return
        try:
            if run.run_id is None:
                run.run_id = self._create(run)
                self._remember(run, True)
            while run.pending:
                chunk, run.pending = run.pending[:BATCH], run.pending[BATCH:]
                try:
                    self._post(run.base, "runs/log-batch", {"run_id": run.run_id, "metrics": chunk})
                except BaseException:
                    run.pending = chunk + run.pending
                    raise
            if run.end is not None:
                status, end_ms = run.end
                self._post(run.base, "runs/update", {"run_id": run.run_id, "status": status, "end_time": end_ms})
                self._runs.pop(run.key, None)
                self._remember(run, False)
            run.since = time.monotonic()
        except urllib.error.HTTPError as e:  # the server refused: retried, then dropped
            if self._failing_too_long(run):
                self._drop(run, f"MLflow answered {e.code}: {e.read()[:200]!r}")
        except (OSError, ValueError):  # not up yet, or restarting: resolve again next round
            run.base = None
            if self._failing_too_long(run):
                self._drop(run, "the MLflow server does not answer")

    @staticmethod
    def _failing_too_long(run: _Run) -> bool:
        return time.monotonic() - run.since > GIVE_UP_AFTER

    def _drop(self, run: _Run, why: str) -> None:
        if not run.warned:
            log.warning("mlflow run %s (%s) dropped: %s", run.name, run.tracking_uri, why)
            run.warned = True
        self._runs.pop(run.key, None)
        if run.key in self._open:
            self._remember(run, False)

    def _create(self, run: _Run) -> str:
        assert run.base is not None
        exp_id = self._experiment_id(run.base, run.experiment)
        tags = [{"key": "mlflow.runName", "value": run.name}] + [{"key": k, "value": v} for k, v in run.tags.items()]
        body = {"experiment_id": exp_id, "run_name": run.name, "start_time": run.start_ms, "tags": tags}
        run_id = str(self._post(run.base, "runs/create", body)["run"]["info"]["run_id"])
        items = [{"key": k, "value": v} for k, v in run.params.items()]
        for i in range(0, len(items), PARAMS_PER_BATCH):
            self._post(run.base, "runs/log-batch", {"run_id": run_id, "params": items[i : i + PARAMS_PER_BATCH]})
        return run_id

    def _experiment_id(self, base: str, name: str) -> str:
        try:
            got = self._get(base, "experiments/get-by-name", {"experiment_name": name})
            return str(got["experiment"]["experiment_id"])
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
        try:
            return str(self._post(base, "experiments/create", {"name": name})["experiment_id"])
        except urllib.error.HTTPError as e:  # created meanwhile by another run of the same job
            if e.code != 400:
                raise
            got = self._get(base, "experiments/get-by-name", {"experiment_name": name})
            return str(got["experiment"]["experiment_id"])

    def _post(self, base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{base}/api/2.0/mlflow/{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        return self._call(req)

    def _get(self, base: str, path: str, query: dict[str, str]) -> dict[str, Any]:
        return self._call(urllib.request.Request(f"{base}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}"))

    def _call(self, req: urllib.request.Request) -> dict[str, Any]:
        self.calls += 1
        with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310 - loopback only (see resolver)
            data = r.read()
        return json.loads(data) if data else {}
