"""`engine.selftest`: an operation kind that exercises the engine without touching any cloud.

Operators can start it from the admin to check that workers, the broker and the sweep are alive;
the engine tests and `bench/engine.py` drive it. Parameters:
  waits            how many times the `wait` phase waits before it is done (default 2)
  interval         seconds per wait (default 1)
  call_seconds     simulated latency of one cloud call in the `work` phase (default 0)
  fail_in          a phase name that fails while the counter file / param says so
  transient        how many transient errors the `work` phase raises before succeeding
  journal          a file the `work` phase appends "start"/"created" lines to (tests count the
                   simulated cloud calls there, as they count AWS calls on the sandbox side)
  record_lags      if true, the `wait` phase appends each wake-up's lag (seconds it ran after its
                   scheduled wake-up time, to the ms) to its state list `lags` (bench/engine.py)
"""

from __future__ import annotations

import time

from django.utils import timezone

from instantstart.tenancy.roles import Role

from .context import StepContext
from .registry import OperationKind, Step, register
from .results import Done, Fail, TransientError, Wait


def _work(ctx: StepContext):
    state = ctx.state
    if state.get("transient_seen", 0) < int(ctx.params.get("transient", 0)):
        ctx.record(transient_seen=state.get("transient_seen", 0) + 1)
        raise TransientError("simulated throttling")
    if "resource_id" not in state:
        # Stands in for a slow create call whose id is recorded before any polling.
        _journal(ctx, "start")
        time.sleep(float(ctx.params.get("call_seconds", 0)))
        ctx.record(resource_id=f"res-{ctx.operation.pk.hex[:8]}", creates=state.get("creates", 0) + 1)
        _journal(ctx, "created")
    if ctx.params.get("fail_in") == "work" and not ctx.params.get("fixed"):
        return Fail("simulated failure in work", hint="Set fixed=true and retry.", code="SimulatedFailure")
    return Done(f"created {ctx.state['resource_id']}")


def _journal(ctx: StepContext, line: str) -> None:
    path = ctx.params.get("journal")
    if path:
        with open(path, "a") as journal:
            journal.write(f"{line}\n")


def _wait(ctx: StepContext):
    polls = ctx.state.get("polls", 0)
    lags = _lags(ctx, _wakeup_lag(ctx))
    if polls < int(ctx.params.get("waits", 2)):
        # A poll counter matters only with the Wait it leads to: saved in the same write.
        ctx.record_with_result(polls=polls + 1, **lags)
        return Wait(float(ctx.params.get("interval", 1)), f"waiting ({polls + 1})")
    if lags:
        ctx.record_with_result(**lags)
    return Done(f"ready after {polls} polls")


def _wakeup_lag(ctx: StepContext) -> float | None:
    """Seconds between this run's scheduled wake-up and now, if record_lags is set.

    The operation was loaded at the start of this advance, so its wake_at is still the time this
    run was scheduled for.
    """
    if not ctx.params.get("record_lags") or ctx.operation.wake_at is None:
        return None
    return round((timezone.now() - ctx.operation.wake_at).total_seconds(), 3)


def _lags(ctx: StepContext, lag: float | None) -> dict:
    return {} if lag is None else {"lags": [*ctx.state.get("lags", []), lag]}


def _finish(ctx: StepContext):
    from .models import Operation

    fixed = Operation.objects.filter(pk=ctx.operation.pk).values_list("params", flat=True).first() or {}
    if ctx.params.get("fail_in") == "finish" and not fixed.get("fixed"):
        return Fail("simulated failure in finish", hint="Set fixed=true and retry.", code="SimulatedFailure")
    return Done("finished")


SELFTEST = register(
    OperationKind(
        name="engine.selftest",
        title="Engine self-test",
        role=Role.MEMBER,
        steps=(
            Step("work", _work, title="Create a simulated resource"),
            Step("wait", _wait, title="Wait for it"),
            Step("finish", _finish, title="Finish"),
        ),
    )
)
