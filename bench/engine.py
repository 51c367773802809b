"""Benchmark of the operation engine against a worker that sleeps while polling.

Drives N in-flight `engine.selftest` operations (whose `wait` phase waits `--waits` times,
`--interval` seconds each) through ONE real `celery worker --pool solo` and prints, per N:

  ops/s            N / (last operation finished - first operation created)
  advances/op      Operation.advance_count, averaged (leases taken; skipped duplicates not counted)
  queries/advance  SQL statements per `engine.advance` call, measured in this process on a small
                   separate sample driven by hand under CaptureQueriesContext (BEGIN/COMMIT count)
  lag p50/p99      for every wake-up of the wait phase: when the step ran minus when it was due

side by side with a baseline (`poll_by_sleeping`) in which the step sleeps in the worker between
polls, so the worker runs one operation at a time. The baseline is capped at --baseline-budget
seconds. The solo worker takes messages in order, so a capped baseline's quick `finish` steps are
still queued behind the sleeping ones when the budget ends: its ops/s counts operations done
waiting, its total time for N is extrapolated (time so far + the wait phases left at their
measured mean duration + the other steps left at the mean time of the worker's other tasks;
labelled as such), and the lags of operations still queued at the stop enter the percentiles as
lower bounds (marked with >=).

The query sample also counts commits per advance (COMMITs plus writes run in autocommit): each one
waits for a WAL flush, which costs far more than a read. It measures; it asserts nothing about
timings.

Needs PostgreSQL and Redis on 127.0.0.1 (the test mode). Uses a database of its own
(`instantstart_bench`, created and migrated if missing) and a fresh Celery queue per scenario:

  INSTANTSTART_MODE=test DJANGO_SETTINGS_MODULE=instantstart.test_settings \\
      .venv/bin/python bench/engine.py [--n 10 100 1000] [--waits 3] [--interval 1.0] [--baseline-budget 60]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import TASK_LINE, database_url, drop_queue, ensure_database, setup_django  # noqa: E402

BENCH_DB = "instantstart_bench"
BENCH_DB_URL = database_url(BENCH_DB)
KIND = "engine.selftest"


# --- setup ----------------------------------------------------------------------------------


def use_queue(queue: str) -> None:
    from django.conf import settings

    # enqueue_advance reads the setting on every call.
    settings.CELERY_TASK_DEFAULT_QUEUE = queue


def purge(team) -> None:
    from instantstart.operations.models import AuditEvent, Operation, WorkerHeartbeat

    Operation.objects.filter(team=team).delete()
    AuditEvent.objects.filter(team=team).delete()
    WorkerHeartbeat.objects.filter(hostname__startswith="bench-").delete()


def bench_team():
    from instantstart.tenancy.models import Team

    team, _ = Team.objects.get_or_create(slug="bench", defaults={"name": "Engine benchmark"})
    return team


# --- the worker -----------------------------------------------------------------------------


class BenchWorker:
    """One `celery worker --pool solo` subprocess on the bench database and a queue of its own."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.proc: subprocess.Popen | None = None
        fd, path = tempfile.mkstemp(prefix=f"bench-worker-{queue}-", suffix=".log")
        os.close(fd)
        self.log_path = Path(path)

    def env(self) -> dict[str, str]:
        from django.conf import settings

        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "instantstart.test_settings",
            "INSTANTSTART_MODE": "test",
            "DATABASE_URL": BENCH_DB_URL,
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_QUEUE": self.queue,
            "OPERATION_POLL_SCALE": "1",  # --interval means seconds, whatever the environment says
        }

    def start(self) -> BenchWorker:
        with open(self.log_path, "w") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "instantstart",
                    "worker",
                    "-Q",
                    self.queue,
                    "--pool",
                    "solo",
                    "--loglevel",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                    "--hostname",
                    f"{self.queue}@%h",
                ],
                cwd=ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "ready." in self.log():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log()[-3000:]}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"worker did not start: {self.log()[-3000:]}")

    def stop(self) -> None:
        """Warm shutdown (finishes the task in hand, gives unacked messages back), then SIGKILL."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def task_stats(self) -> tuple[int, int, float]:
        """(advance tasks run, of which skipped, seconds spent in them) from the worker's log."""
        runs = [(float(seconds), action) for seconds, action in TASK_LINE.findall(self.log())]
        return len(runs), sum(1 for _, action in runs if action == "skipped"), sum(s for s, _ in runs)


# --- measuring ------------------------------------------------------------------------------


@dataclass
class QuerySample:
    advances: int = 0
    queries: int = 0
    commits: int = 0
    by_action: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    sql_by_action: dict[str, list[str]] = field(default_factory=dict)

    @property
    def per_advance(self) -> float:
        return self.queries / self.advances if self.advances else float("nan")

    @property
    def commits_per_advance(self) -> float:
        return self.commits / self.advances if self.advances else float("nan")


def count_commits(statements: list[str]) -> int:
    """COMMITs, plus writes outside BEGIN...COMMIT (autocommit: each is a transaction of its own)."""
    commits, in_transaction = 0, False
    for statement in statements:
        head = statement.lstrip()[:8].upper()
        if head.startswith("BEGIN"):
            in_transaction = True
        elif head.startswith(("COMMIT", "ROLLBACK")):
            commits += head.startswith("COMMIT")
            in_transaction = False
        elif not in_transaction and head.startswith(("UPDATE", "INSERT", "DELETE")):
            commits += 1
    return commits


@dataclass
class Result:
    n: int
    mode: str
    finished: int  # terminal operations
    waited: int  # operations whose wait phase is done (all but the millisecond `finish` step)
    wall: float  # first created -> last finished (or, when capped, -> the stop)
    advances_per_op: float
    lags: list[float]
    queries_per_advance: float
    capped: bool = False
    budget: float = 0.0
    censored: int = 0  # operations still queued at the stop, counted with a lower bound of their lag
    first_lags: list[float] = field(default_factory=list)  # the wait phase's first wake-up (a countdown-0 hand-off)
    tasks: int = 0
    skipped: int = 0
    busy_seconds: float = 0.0
    create_seconds: float = 0.0
    worker_log: str = ""
    load: float = 0.0  # 1-minute load average when the run ended

    @property
    def ops_per_s(self) -> float:
        done = self.waited if self.capped else self.finished
        return done / self.wall if self.wall > 0 else float("nan")

    seconds_per_wait: float = float("nan")  # capped runs: mean duration of a wait phase done
    pending_other: int = 0  # capped runs: steps other than `wait` still to run

    @property
    def extrapolated_total(self) -> float | None:
        """A capped run's time for all N, were it let run: time so far + the work left, one at a time.

        The work left: the wait phases not done, at their measured mean duration, and the other
        steps not run, at the mean time of the worker's other tasks.
        """
        if not self.capped or not self.seconds_per_wait > 0:
            return None
        other_tasks = max(self.tasks - self.waited, 1)
        other_mean = max(self.busy_seconds - self.waited * self.seconds_per_wait, 0.0) / other_tasks
        return self.wall + (self.n - self.waited) * self.seconds_per_wait + self.pending_other * other_mean


def selftest_params(mode: str, waits: int, interval: float, *, record_lags: bool = True) -> dict:
    params = {"waits": waits, "interval": interval, "record_lags": record_lags}
    if mode == "baseline":
        params["poll_by_sleeping"] = True
    return params


def measure_queries(team, mode: str, waits: int, size: int) -> QuerySample:
    """Advance a sample by hand in this process and count the SQL of each `engine.advance` call.

    Each call is made due first (an UPDATE of wake_at outside the capture). The sample waits 0 s
    per poll, which changes no query; lags are not recorded, so only the engine's own queries
    (and the selftest steps' state writes) are counted.
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from instantstart.operations import engine
    from instantstart.operations.models import TERMINAL, Operation
    from instantstart.operations.services import start_operation
    from instantstart.tenancy.services import system_access

    queue = f"bench-{uuid.uuid4().hex[:10]}-sample"
    use_queue(queue)  # no worker consumes it; the messages advance() sends are dropped below
    sample = QuerySample()
    try:
        access = system_access(team)
        params = selftest_params(mode, waits, 0, record_lags=False)
        active = [start_operation(access=access, kind=KIND, params=params)[0].pk for _ in range(size)]
        for _ in range(waits + 20):
            if not active:
                break
            for pk in list(active):
                Operation.objects.filter(pk=pk).update(wake_at=timezone.now() - timedelta(seconds=1))
                with CaptureQueriesContext(connection) as captured:
                    outcome = engine.advance(pk)
                count = len(captured.captured_queries)
                sample.advances += 1
                sample.queries += count
                sample.commits += count_commits([q["sql"] for q in captured.captured_queries])
                sample.by_action[outcome.action].append(count)
                sample.sql_by_action.setdefault(outcome.action, [q["sql"] for q in captured.captured_queries])
                if Operation.objects.filter(pk=pk, status__in=TERMINAL).exists():
                    active.remove(pk)
        if active:
            print(f"  warning: {len(active)} sample operations did not finish")
    finally:
        drop_queue(queue)
        purge(team)
    return sample


def run_scenario(team, n: int, mode: str, args, queries_per_advance: float) -> Result:
    from django.utils import timezone

    from instantstart.operations.models import TERMINAL, Operation, Phase, PhaseStatus
    from instantstart.operations.services import start_operation
    from instantstart.tenancy.services import system_access

    purge(team)
    queue = f"bench-{uuid.uuid4().hex[:10]}"
    use_queue(queue)
    limit = args.baseline_budget if mode == "baseline" else args.timeout
    worker = BenchWorker(queue).start()
    try:
        access = system_access(team)
        params = selftest_params(mode, args.waits, args.interval)
        started = time.monotonic()
        # One transaction per operation: each is enqueued when its own transaction commits.
        for _ in range(n):
            start_operation(access=access, kind=KIND, params=params)
        create_seconds = time.monotonic() - started
        print(f"  [{mode} N={n}] created {n} operations in {create_seconds:.1f}s", flush=True)
        last_report = 0.0
        while True:
            done = Operation.objects.filter(team=team, status__in=TERMINAL).count()
            elapsed = time.monotonic() - started
            if done >= n or elapsed >= limit:
                break
            if elapsed - last_report >= 2:
                waited = Phase.objects.filter(operation__team=team, name="wait", status=PhaseStatus.SUCCEEDED).count()
                print(f"  [{mode} N={n}] {done}/{n} finished, {waited} done waiting, after {elapsed:.0f}s", flush=True)
                last_report = elapsed
            time.sleep(0.2)
        capped = done < n
        if capped:
            word = "budget" if mode == "baseline" else "timeout"
            print(f"  [{mode} N={n}] {word} of {limit:.0f}s reached with {done}/{n} finished; stopping", flush=True)
    finally:
        worker.stop()
    stopped_at = timezone.now()
    tasks, skipped, busy = worker.task_stats()
    result = summarize(team, n, mode, args.waits, stopped_at, capped=capped)
    result.queries_per_advance, result.budget = queries_per_advance, limit
    result.tasks, result.skipped, result.busy_seconds = tasks, skipped, busy
    result.create_seconds, result.worker_log = create_seconds, str(worker.log_path)
    result.load = os.getloadavg()[0]
    purge(team)
    drop_queue(queue)
    return result


def summarize(team, n: int, mode: str, waits: int, stopped_at, *, capped: bool) -> Result:
    """Read the run's numbers back from the operations and their wait phases."""
    from django.db.models import Avg, Max, Min

    from instantstart.operations.models import TERMINAL, Operation, OperationStatus, Phase, PhaseStatus

    ops = Operation.objects.filter(team=team)
    finished_ops = ops.filter(status__in=TERMINAL)
    failed = finished_ops.exclude(status=OperationStatus.SUCCEEDED).count()
    if failed:
        print(f"  warning: {failed} operations did not succeed")
    first = ops.aggregate(first=Min("created_at"))["first"]
    waited_phases = Phase.objects.filter(operation__team=team, name="wait", status=PhaseStatus.SUCCEEDED)
    finished, waited = finished_ops.count(), waited_phases.count()
    seconds_per_wait, pending_other = float("nan"), 0
    if capped:
        # The solo worker runs messages in order: the `finish` steps of a capped baseline queue up
        # behind every sleeping wait step, so progress is counted in wait phases done, over the
        # time until the stop.
        last = stopped_at
        durations = [
            (end - start).total_seconds() for start, end in waited_phases.values_list("started_at", "finished_at")
        ]
        if durations:
            seconds_per_wait = sum(durations) / len(durations)
        pending_other = (
            Phase.objects.filter(operation__in=ops.exclude(status__in=TERMINAL))
            .exclude(status=PhaseStatus.SUCCEEDED)
            .exclude(name="wait")
            .count()
        )
        counted = finished_ops if finished else Operation.objects.filter(phases__in=waited_phases)
        advances = counted.aggregate(avg=Avg("advance_count"))["avg"]
    else:
        last = finished_ops.aggregate(last=Max("finished_at"))["last"]
        advances = finished_ops.aggregate(avg=Avg("advance_count"))["avg"]
    wall = (last - first).total_seconds() if first and last else 0.0

    lags: list[float] = []
    first_lags: list[float] = []
    censored = 0
    rows = Phase.objects.filter(operation__team=team, name="wait").values_list(
        "state", "status", "operation__status", "operation__wake_at"
    )
    for state, phase_status, status, wake_at in rows:
        recorded = (state or {}).get("lags", [])
        lags.extend(float(lag) for lag in recorded)
        first_lags.extend(float(lag) for lag in recorded[:1])
        waiting = phase_status != PhaseStatus.SUCCEEDED and status not in TERMINAL
        if waiting and wake_at is not None and wake_at < stopped_at:
            # Still waiting for a worker when the run stopped: its lag is at least this long.
            censored += 1
            lags.append((stopped_at - wake_at).total_seconds())
            if mode == "baseline" and not recorded:
                lags.extend([0.0] * waits)  # its inline polls would have woken on time
    return Result(
        n=n,
        mode=mode,
        finished=finished,
        waited=waited,
        wall=wall,
        advances_per_op=float(advances or 0),
        lags=lags,
        queries_per_advance=float("nan"),
        capped=capped,
        censored=censored,
        first_lags=first_lags,
        seconds_per_wait=seconds_per_wait,
        pending_other=pending_other,
    )


# --- reporting ------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


HEADER = ("N", "mode", "ops/s", "advances/op", "queries/advance", "lag p50", "lag p99", "wall s", "finished")


def _num(value: float, fmt: str, prefix: str = "") -> str:
    return "-" if math.isnan(value) else prefix + format(value, fmt)


def row(result: Result) -> tuple[str, ...]:
    bound = "\u2265" if result.censored else ""  # lags of operations still queued are lower bounds
    if result.capped:
        total = result.extrapolated_total
        wall = f"{result.wall:.1f} (~{total:.0f} extrapolated)" if total else f"{result.wall:.1f}"
        finished = f"{result.finished}/{result.n} ({result.waited} done waiting) in {result.budget:.0f}s"
    else:
        wall = f"{result.wall:.1f}"
        finished = f"{result.finished}/{result.n}"
    return (
        str(result.n),
        result.mode,
        _num(result.ops_per_s, ".2f"),
        # A capped run with nothing finished counts the advances of operations done waiting so far.
        _num(result.advances_per_op, ".2f", "\u2265" if result.capped and not result.finished else ""),
        _num(result.queries_per_advance, ".1f"),
        _num(percentile(result.lags, 50), ".3f", bound) + "s",
        _num(percentile(result.lags, 99), ".3f", bound) + "s",
        wall,
        finished,
    )


def print_table(results: list[Result]) -> None:
    rows = [HEADER, *(row(r) for r in results)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    for index, cells in enumerate(rows):
        print(
            " | ".join(
                cell.rjust(width) if i != 1 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
            )
        )
        if index == 0:
            print("-+-".join("-" * width for width in widths))


def print_details(results: list[Result]) -> None:
    for r in results:
        util = r.busy_seconds / r.wall * 100 if r.wall else float("nan")
        print(
            f"  N={r.n} {r.mode}: {r.tasks} advance tasks run by the worker ({r.skipped} skipped), "
            f"{r.busy_seconds:.1f}s inside them ({util:.0f}% of wall), {len(r.lags)} wake-ups, "
            f"lag max {max(r.lags, default=float('nan')):.3f}s ({r.censored} ops still queued at the stop), "
            f"first wake-up of the wait phase p50/p99 {_num(percentile(r.first_lags, 50), '.3f')}s/"
            f"{_num(percentile(r.first_lags, 99), '.3f')}s, "
            f"creating took {r.create_seconds:.1f}s, load average at the end {r.load:.2f}; "
            f"log {r.worker_log}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 100, 1000], help="in-flight operations per run")
    parser.add_argument("--waits", type=int, default=3, help="polls of the wait phase")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    parser.add_argument("--baseline-budget", type=float, default=60.0, help="seconds the baseline may run per N")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds an engine run may take per N")
    parser.add_argument("--sample", type=int, default=10, help="operations in the in-process query sample")
    parser.add_argument("--modes", nargs="+", choices=["engine", "baseline"], default=["engine", "baseline"])
    parser.add_argument("--show-sql", action="store_true", help="print the SQL of one advance per outcome")
    args = parser.parse_args(argv)

    ensure_database(BENCH_DB)
    setup_django(BENCH_DB, "bench/engine.py")
    team = bench_team()
    purge(team)
    print(
        f"engine.selftest: waits={args.waits}, interval={args.interval}s, one solo worker; "
        f"database {BENCH_DB}, baseline budget {args.baseline_budget:.0f}s; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (timings move with it)"
    )

    samples: dict[str, QuerySample] = {}
    for mode in args.modes:
        sample = samples[mode] = measure_queries(team, mode, args.waits, args.sample)
        detail = ", ".join(
            f"{action} {sum(counts) / len(counts):.1f} (x{len(counts)})" for action, counts in sample.by_action.items()
        )
        print(
            f"queries per advance, {mode} ({args.sample} ops in-process): {sample.per_advance:.2f} "
            f"({sample.commits_per_advance:.2f} commits); by outcome: {detail}"
        )
        if args.show_sql:
            for action, statements in sample.sql_by_action.items():
                print(f"--- {mode} advance -> {action}: {len(statements)} statements")
                for statement in statements:
                    print(f"    {statement[:200]}")

    results: list[Result] = []
    for n in args.n:
        batch = [run_scenario(team, n, mode, args, samples[mode].per_advance) for mode in args.modes]
        results.extend(batch)
        print()
        print_table(batch)
        print_details(batch)
        print(flush=True)

    print("Summary. lag = when a wake-up ran minus when it was due; the baseline's inline polls count as")
    print("0-lag wake-ups. A capped run's ops/s counts operations done waiting, its total time is extrapolated,")
    print("and its lags (marked \u2265) count operations still queued at the stop with a lower bound.")
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
