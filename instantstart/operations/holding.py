"""Operations a worker keeps between their polls, so a poll costs no message and no claim.

An advance that ends in a short wait (at most OPERATION_HOLD_SECONDS, and no longer than a broker
may hold a message) keeps its lease instead of releasing it and sending a countdown message: the
worker process schedules the next advance itself and runs it on its own threads when it comes due.
That advance reads the operation under the lease it kept (one SELECT) and writes its result with
the next wake-up (one conditional UPDATE): one commit per poll, no broker round trip, and polls
are not queued behind new work in the broker (bench/engine.py measures both paths).

The lease stays valid while the process lives: a watcher thread extends the leases it keeps (one
UPDATE for all of them, only for those near their end) and looks for cancellations (one SELECT),
which it runs at once. A clean shutdown gives every kept operation back (lease released, message
sent for its wake-up). A killed worker's leases run out OPERATION_HOLD_LEASE after its last
renewal; the sweep then sends their messages and any worker claims them, as after any crash.

Only `celery worker` processes keep operations (instantstart/celery.py enables it); elsewhere
(tests calling the engine in-process, the web server) `current()` is None and every wait goes
through the broker as before.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from .queue import enqueue_advance

log = logging.getLogger(__name__)

_enabled = False
_threads = 1
_holder: Holder | None = None
_lock = threading.Lock()


def _conf(name: str):
    return settings.OPERATIONS[name]


Advance = Callable[[str, uuid.UUID], object]


def enable(threads: int) -> None:
    """Let this process (and processes forked from it) keep operations, run on ``threads`` threads."""
    global _enabled, _threads
    _enabled, _threads = True, max(1, threads)


def current(advance: Advance) -> Holder | None:
    """This process's holder, started on first use; None where keeping operations is not enabled.

    ``advance`` runs a kept operation's next advance (engine.advance_kept, passed by the engine so
    that this module needs no engine)."""
    global _holder
    if not _enabled or _conf("HOLD_SECONDS") <= 0:
        return None
    holder = _holder
    if holder is not None and holder.pid == os.getpid() and not holder.stopping:
        return holder
    with _lock:
        if _holder is None or _holder.pid != os.getpid():  # a forked child starts its own
            _holder = Holder(_threads, advance).start()
        return None if _holder.stopping else _holder


@contextlib.contextmanager
def use(holder: Holder | None):
    """Make ``holder`` this process's for a while (the benchmark's in-process sample, tests)."""
    global _enabled, _holder
    before = _enabled, _holder
    _enabled, _holder = holder is not None, holder
    try:
        yield holder
    finally:
        _enabled, _holder = before


def stop() -> None:
    """A clean shutdown of this process: give back every operation it keeps."""
    holder = _holder
    if holder is not None and holder.pid == os.getpid():
        holder.stop()


def hold_limit() -> float:
    """The longest wait an operation is kept for (never longer than a countdown message may be)."""
    return min(_conf("HOLD_SECONDS"), _conf("MAX_COUNTDOWN_SECONDS"))


def lease_seconds() -> float:
    return _conf("HOLD_LEASE_SECONDS")


@dataclass
class _Kept:
    token: uuid.UUID
    due: float  # time.time() of the next advance
    running: bool = False
    started: float = 0.0  # time.time() its current advance started, when running

    def renewable(self, now: float) -> bool:
        """Its lease is extended while its advance runs within OPERATION_LEASE_SECONDS, or it waits
        and is not long overdue; otherwise (a hung step, a process that cannot keep up) it is let
        run out, and another worker takes the operation over."""
        if self.running:
            return now - self.started < _conf("LEASE_SECONDS")
        return now - self.due < lease_seconds() / 2


class Holder:
    """The operations one process keeps leased, and the threads that run their advances when due."""

    def __init__(self, threads: int, advance: Advance, *, run_threads: bool = True) -> None:
        self.pid = os.getpid()
        self._advance = advance
        self.stopping = False
        self._kept: dict[str, _Kept] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._threads = threads
        self._run_threads = run_threads
        self._pool: ThreadPoolExecutor | None = None
        self._loops: list[threading.Thread] = []
        self._last_renew = 0.0

    def start(self) -> Holder:
        if self._run_threads:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="kept-advance")
            for target, name in ((self._schedule_loop, "kept-schedule"), (self._watch_loop, "kept-watch")):
                thread = threading.Thread(target=target, name=name, daemon=True)
                thread.start()
                self._loops.append(thread)
        return self

    # --- what the engine calls ------------------------------------------------------------------

    def has_room(self, operation_id) -> bool:
        return str(operation_id) in self._kept or len(self._kept) < _conf("HOLD_MAX")

    def keep(self, operation_id, token: uuid.UUID, delay: float) -> None:
        """The engine kept this operation's lease; run its next advance in ``delay`` seconds."""
        key, due = str(operation_id), time.time() + max(delay, 0.0)
        with self._wake:
            self._kept[key] = _Kept(token, due)
            heapq.heappush(self._heap, (due, next(self._order), key))
            self._wake.notify()

    def token_of(self, operation_id) -> uuid.UUID | None:
        kept = self._kept.get(str(operation_id))
        return kept.token if kept else None

    def __len__(self) -> int:
        return len(self._kept)

    # --- running kept operations --------------------------------------------------------------

    def due(self, now: float | None = None) -> list[tuple[str, uuid.UUID]]:
        """Take the kept operations that are due (marked running): [(operation id, token)]."""
        now = time.time() if now is None else now
        taken = []
        with self._wake:
            while self._heap and self._heap[0][0] <= now:
                due, _, key = heapq.heappop(self._heap)
                kept = self._kept.get(key)
                if kept is None or kept.running or kept.due != due:  # replaced by a later keep()
                    continue
                kept.running, kept.started = True, now
                taken.append((key, kept.token))
        return taken

    def run(self, operation_id: str, token: uuid.UUID):
        """One advance of a kept operation (on a holder thread, or by hand in the benchmark)."""
        try:
            return self._advance(operation_id, token)
        finally:
            with self._wake:
                kept = self._kept.get(operation_id)
                if kept is not None and kept.token == token and kept.running:  # not kept again
                    del self._kept[operation_id]

    def _run_on_thread(self, operation_id: str, token: uuid.UUID) -> None:
        # As Celery does around a task: drop connections that broke or outlived CONN_MAX_AGE.
        close_old_connections()
        try:
            self.run(operation_id, token)
        except Exception:  # noqa: BLE001 - the lease was given back; the sweep sends it again
            log.exception("advance of kept operation %s failed", operation_id)
        finally:
            close_old_connections()

    def _schedule_loop(self) -> None:
        while not self.stopping:
            with self._wake:
                wait = self._heap[0][0] - time.time() if self._heap else 1.0
                if wait > 0:
                    self._wake.wait(min(wait, 1.0))
            for operation_id, token in self.due():
                if self.stopping:
                    break
                self._pool.submit(self._run_on_thread, operation_id, token)

    # --- keeping the leases -------------------------------------------------------------------

    def _watch_loop(self) -> None:
        while not self.stopping:
            time.sleep(_conf("HOLD_WATCH_SECONDS"))
            try:
                self.watch()
            except Exception:  # noqa: BLE001 - the next round tries again
                log.warning("could not watch the kept operations", exc_info=True)
            finally:
                close_old_connections()

    def watch(self) -> None:
        """Run cancellations of kept operations now, and extend the leases that are near their end."""
        from .models import Operation

        clock = time.time()
        with self._wake:
            kept = {key: k.token for key, k in self._kept.items()}
            renewable = [key for key, k in self._kept.items() if k.renewable(clock)]
        if not kept:
            return
        mine = Operation.objects.filter(pk__in=list(kept), lease_token__in=list(kept.values()))
        for key in mine.filter(cancel_requested=True).values_list("pk", flat=True):
            self._run_soon(str(key), kept[str(key)])
        length = lease_seconds()
        if renewable and time.monotonic() - self._last_renew >= length / 3:
            now = timezone.now()
            Operation.objects.filter(
                pk__in=renewable,
                lease_token__in=[kept[key] for key in renewable],
                lease_until__lt=now + timedelta(seconds=length * 2 / 3),
            ).update(lease_until=now + timedelta(seconds=length))
            self._last_renew = time.monotonic()

    def _run_soon(self, key: str, token: uuid.UUID) -> None:
        with self._wake:
            kept = self._kept.get(key)
            if kept is None or kept.token != token or kept.running or kept.due <= time.time():
                return
        self.keep(key, token, 0)

    # --- a clean shutdown ---------------------------------------------------------------------

    def stop(self, timeout: float = 30.0) -> int:
        """Stop running kept operations and give them all back; returns how many were given back."""
        self.stopping = True
        with self._wake:
            self._wake.notify_all()
        for thread in self._loops:
            thread.join(timeout)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        with self._wake:
            kept = {key: k.token for key, k in self._kept.items()}
            self._kept.clear()
            self._heap.clear()
        return give_back(kept)


def give_back(kept: dict[str, uuid.UUID]) -> int:
    """Release the leases of operations a stopping process kept and send each its message."""
    from .models import Operation

    if not kept:
        return 0
    now = timezone.now()
    mine = Operation.objects.filter(pk__in=list(kept), lease_token__in=list(kept.values()))
    horizon = now + timedelta(seconds=_conf("MAX_COUNTDOWN_SECONDS"))
    rows = list(mine.values_list("pk", "wake_at"))
    # A wake-up beyond what a message may wait for gets no message (the sweep sends it when due).
    mine.filter(wake_at__gt=horizon).update(lease_token=None, lease_until=None, enqueued_at=None)
    mine.update(lease_token=None, lease_until=None, enqueued_at=now)
    for pk, wake_at in rows:
        if wake_at is None or wake_at <= horizon:
            countdown = max(0.0, (wake_at - now).total_seconds()) if wake_at else 0.0
            enqueue_advance(pk, countdown=countdown, stamp=now)
    log.info("gave back %d kept operations", len(rows))
    return len(rows)
