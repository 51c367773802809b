"""Runs a simulated program over time for one process: a training pod's main container, or a Ray job's
driver. Each call emits what became due since the last one (lines stamped with the wall time they
were due, so `timestamps=true`, `sinceTime` and the program's own clock agree) and queues the same
values for MLflow; it never talks to MLflow itself (that is sandbox/mlflow_runs.py, off the lock).

State lives in a plain dict (the pod's sim entry), so a sandbox restart continues where it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .program import Program

MAX_STEPS_PER_CALL = 200  # a long pause (or a fast-forward) catches up over several ticks
Emit = Callable[[str, float], None]  # (line, wall time)


def make(spec: dict[str, Any]) -> Program:
    from .llama_factory import LlamaFactory
    from .ms_swift import MsSwift
    from .pytorch import PyTorchScript
    from .verl import Verl

    kinds: dict[str, type[Program]] = {
        "pytorch": PyTorchScript,
        "llama_factory": LlamaFactory,
        "ms_swift": MsSwift,
        "verl": Verl,
    }
    return kinds.get(str((spec.get("launch") or {}).get("kind")), PyTorchScript)(spec)


def start(state: dict[str, Any], spec: dict[str, Any], now: float, metrics: Any, run_key: str) -> Program:
    """A process starts (container start, or an in-place restart)."""
    spec = dict(spec, t0=now)
    state.update(
        {
            "spec": spec,
            "t0": now,
            "line": 0,
            "started": False,
            "step": 0,
            "finished": False,
            "last_ts": now,
            "run_key": run_key,
            "joined": None,
        }
    )
    prog = make(spec)
    state["run_s"] = prog.run_seconds()
    if metrics is not None and prog.reports() and prog.mlflow_enabled():
        metrics.start_run(
            run_key,
            tracking_uri=prog.env["MLFLOW_TRACKING_URI"],
            experiment=prog.mlflow_experiment(),
            run_name=prog.mlflow_run_name(now),
            params=prog.mlflow_params(),
            start_ms=int(now * 1000),
        )
        state["mlflow"] = True
    return prog


def _cutoff(state: dict[str, Any]) -> tuple[float | None, int | None]:
    """(wall time, step) after which a hung process prints nothing more."""
    hang = state.get("hang") or {}
    return hang.get("at"), hang.get("after_step")


def advance(
    state: dict[str, Any], speedup: float, now: float, emit: Emit, metrics: Any, joined: float | None = 0.0
) -> bool:
    """Emit what is due; True once the program has exited (its code is state['spec']['exit']).

    `joined`: the wall time the last process of the job started (the rendezvous completes then), or
    None while some have not: the ranks of one job run their steps in lockstep, so a process that
    started early waits at the rendezvous after its startup lines and its steps are timed from the
    last start (0.0, the default: a process on its own)."""
    if state.get("finished") or "spec" not in state:
        return bool(state.get("finished"))
    prog = make(state["spec"])
    t0 = float(state["t0"])
    elapsed = (now - t0) * speedup
    hang_at, hang_step = _cutoff(state)
    lag = 0.0  # simulated seconds spent waiting at the rendezvous (counted once the startup is out)

    def wall(offset: float) -> float:
        t = max(min(t0 + (offset + lag) / speedup, now), float(state.get("last_ts", t0)))
        state["last_ts"] = t
        return t

    def open_at(t: float) -> bool:
        return hang_at is None or t <= hang_at

    if not state.get("started"):  # the startup lines (built only until they are all out)
        startup = prog.startup(t0)
        i = int(state.get("line", 0))
        while i < len(startup) and startup[i][0] <= elapsed:
            t = wall(startup[i][0])
            if not open_at(t):
                return False
            emit(startup[i][1], t)
            i += 1
        state["line"] = i
        if i < len(startup):
            return False
        state["started"] = True
    if state.get("joined") is None:
        if joined is None:
            return False
        state["joined"] = joined  # the rendezvous: the job's peers take it from here too
    lag = max(float(state["joined"]) - t0, 0.0) * speedup
    elapsed -= lag
    step = int(state.get("step", 0))
    reporting = bool(state.get("mlflow")) and metrics is not None
    for _ in range(MAX_STEPS_PER_CALL):
        if step >= prog.total_steps or prog.step_offset(step + 1) > elapsed:
            break
        if hang_step is not None and step >= hang_step:
            return False
        t = wall(prog.step_offset(step + 1))
        if not open_at(t):
            return False
        step += 1
        for line in prog.step_lines(step, t):
            emit(line, t)
        if reporting:
            values = prog.metrics(step)
            if values:
                metrics.log(state["run_key"], values, step, int(t * 1000))
        state["step"] = step
    if step < prog.total_steps or elapsed < prog.run_seconds():
        return False
    if hang_step is not None or not open_at(now):
        return False
    code = int(state["spec"].get("exit", 0))
    t = wall(prog.run_seconds())
    for line in prog.finish_lines(t, code):
        emit(line, t)
    if reporting:
        if code == 0 and prog.final_metrics():
            metrics.log(state["run_key"], prog.final_metrics(), prog.total_steps, int(t * 1000))
        metrics.end_run(state["run_key"], "FINISHED" if code == 0 else "FAILED", int(t * 1000))
    state["finished"] = True
    return True


def stop(state: dict[str, Any], metrics: Any, status: str = "KILLED", now: float | None = None) -> None:
    """The process is gone (crashed, killed, or its pod deleted): close its MLflow run."""
    if state.get("mlflow") and not state.get("finished") and metrics is not None:
        metrics.end_run(state["run_key"], status, int((now or time.time()) * 1000))
    state["finished"] = True


def crash_lines(state: dict[str, Any], code: int, now: float) -> list[str]:
    if "spec" not in state:
        return []
    return make(state["spec"]).crash_lines(now, code)


def restart_in_place(
    state: dict[str, Any], now: float, metrics: Any, emit: Emit, run_key: str, hang: dict[str, Any] | None
) -> None:
    """The operator restarts the processes without recreating the pod (a process-level restart): the
    launcher prints its restart lines and the program starts over as a new attempt."""
    if "spec" not in state:
        return
    stop(state, metrics, "KILLED", now)
    prog = make(state["spec"])
    for line in prog.restart_lines(now):
        emit(line, now)
    spec = dict(state["spec"], attempt=int(state["spec"].get("attempt", 0)) + 1)
    state.pop("hang", None)
    if hang:
        state["hang"] = dict(hang)
    start(state, spec, now, metrics, run_key)
