"""Benchmark of the operation engine: today's engine against the one before issue 16, side by side.

Drives N in-flight `engine.selftest` operations (whose `wait` phase waits `--waits` times,
`--interval` seconds each) through real `celery worker` processes and prints, per N, mode and
number of worker processes:

  advances/s       step runs (Operation.advance_count, summed) / (last operation finished - first created)
  queries/advance  SQL statements per step run, measured in this process on a small sample driven by
                   hand under CaptureQueriesContext; commits/advance counts COMMITs plus writes run
                   in autocommit (each waits for a WAL flush)
  lag p50/p99      for every wake-up of the wait phase: when the step ran minus when it was due
  conns/1k adv     connections opened to the database (pg_stat_database.sessions) per 1,000 advances
  CPU              of the worker processes, of PostgreSQL, and how busy the whole machine was

Modes:
  legacy   the engine before issue 16 (bench/legacy_engine.py, run by bench/legacy_worker.py): one
           advance per message through the ORM, every phase hand-off through the queue, a database
           connection per task; one `--pool solo` worker per process, as it was run then
  queue    this engine with OPERATION_HOLD_SECONDS=0: every wait releases the lease and sends a
           countdown message, and the next advance claims the operation again (how stop 18 ran waits)
  engine   instantstart/operations/engine.py with the worker settings production uses
           (CELERY_WORKER_POOL / CELERY_WORKER_CONCURRENCY unless --pool / --concurrency say otherwise):
           a worker keeps the operations that wait and runs their next advances itself (holding.py),
           one SELECT and one conditional UPDATE per poll

`--workers 1 2 4` repeats each run with that many worker processes (more processes on more machines
is how production grows); the scaling lines say how close to linear each step is and how busy the
machine and PostgreSQL were, i.e. where it saturates. With `--interval 0` every wake-up is due at
once, which measures the most advances/s the workers can do rather than what the workload asks.
`--burst` creates all N operations before the workers start (a burst of N due at once) and times
the run from the first step: without it, creating 1,000 operations in this process can take longer
than the engine needs to run them. For each run one line scripts can read:

  summary mode=<legacy|queue|engine> n=<N> advances_per_s=<x> queries_per_advance=<x> commits_per_advance=<x>
          lag_p99_s=<x> workers=<W> connections_per_1000_advances=<x> start_p99_s=<x> pool=<pool>x<n>

(start = created -> the operation's first step started: a new operation's first message waits behind
those of operations under way, so under a backlog this grows while the wake-up lag stays low.)

It measures; it asserts nothing. Needs PostgreSQL and Redis on 127.0.0.1 (the test mode). Uses a
database of its own (`instantstart_bench`, created and migrated if missing) and a fresh Celery queue
per run; the machine's load average is printed, since other work on it moves every timing:

  INSTANTSTART_MODE=test DJANGO_SETTINGS_MODULE=instantstart.test_settings \\
      .venv/bin/python bench/engine.py [--n 10 100 1000] [--waits 3] [--interval 1.0] [--workers 1 2 4]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    BenchWorker,
    database_sessions,
    drop_queue,
    ensure_database,
    machine_busy_seconds,
    percentile,
    postgres_cpu_seconds,
    setup_django,
    worker_env,
)

BENCH_DB = "instantstart_bench"
KIND = "engine.selftest"
MODES = ("legacy", "queue", "engine")


# --- setup ----------------------------------------------------------------------------------


def use_queue(queue: str) -> None:
    from django.conf import settings

    # enqueue_advance reads the setting on every call.
    settings.CELERY_TASK_DEFAULT_QUEUE = queue


def purge(team) -> None:
    from instantstart.operations.models import AuditEvent, Operation

    Operation.objects.filter(team=team).delete()
    AuditEvent.objects.filter(team=team).delete()


def bench_team():
    """A team of this run's own: two benches at once (or one left from a killed run) don't mix."""
    from instantstart.tenancy.models import Team

    for slug in Team.objects.filter(slug__startswith="bench-").values_list("slug", flat=True):
        pid = slug.removeprefix("bench-")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():  # left by a run that was killed
            Team.objects.filter(slug=slug).delete()
    team, _ = Team.objects.get_or_create(slug=f"bench-{os.getpid()}", defaults={"name": "Engine benchmark"})
    return team


def workers_for(mode: str, count: int, queue: str, args) -> list[BenchWorker]:
    from django.conf import settings

    from bench import legacy_engine

    # --interval means seconds, whatever the environment says.
    env = {**worker_env(BENCH_DB, queue), "OPERATION_POLL_SCALE": "1"}
    if mode == "legacy":
        env.update(legacy_engine.WORKER_ENV)
        pool, concurrency, app = "solo", 1, legacy_engine.WORKER_APP
    else:
        if mode == "queue":
            env["OPERATION_HOLD_SECONDS"] = "0"  # every wait a countdown message, nothing kept
        pool = args.pool or settings.CELERY_WORKER_POOL
        concurrency = args.concurrency or settings.CELERY_WORKER_CONCURRENCY
        app = "instantstart"
    return [BenchWorker(f"{queue}-{i}", queue, env, pool=pool, concurrency=concurrency, app=app) for i in range(count)]


# --- the in-process query sample ------------------------------------------------------------


@dataclass
class QuerySample:
    advances: int = 0
    queries: int = 0
    commits: int = 0
    by_action: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    sql_by_action: dict[str, list[str]] = field(default_factory=dict)

    @property
    def per_advance(self) -> float:
        return self.queries / self.advances if self.advances else float("nan")

    @property
    def commits_per_advance(self) -> float:
        return self.commits / self.advances if self.advances else float("nan")


def count_commits(statements: list[str]) -> int:
    """COMMITs, plus writes outside BEGIN...COMMIT (autocommit: each is a transaction of its own).

    A statement that starts with WITH is a write when it holds an UPDATE (the engine's CTEs).
    """
    commits, in_transaction = 0, False
    for statement in statements:
        text = statement.lstrip().upper()
        head = text[:8]
        if head.startswith("BEGIN"):
            in_transaction = True
        elif head.startswith(("COMMIT", "ROLLBACK")):
            commits += head.startswith("COMMIT")
            in_transaction = False
        elif not in_transaction and (
            head.startswith(("UPDATE", "INSERT", "DELETE")) or (head.startswith("WITH") and "UPDATE " in text)
        ):
            commits += 1
    return commits


def measure_queries(team, mode: str, waits: int, size: int) -> QuerySample:
    """Advance a sample by hand in this process and count the SQL of each advance call per step run.

    Each call is made due first (an UPDATE of wake_at outside the capture). The sample waits 0 s
    per poll, which changes no query; lags are not recorded, so only the engine's own statements
    and the selftest steps' are counted.
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from bench import legacy_engine
    from instantstart.operations import engine, holding
    from instantstart.operations.models import TERMINAL, Operation
    from instantstart.operations.services import start_operation
    from instantstart.tenancy.services import system_access

    advance = legacy_engine.advance if mode == "legacy" else engine.advance
    # As in a worker: the engine keeps the operations that wait (holding.py), and their next
    # advances are run from the holder, by hand here.
    holder = holding.Holder(1, engine.advance_kept, run_threads=False) if mode == "engine" else None
    queue = f"bench-{uuid.uuid4().hex[:10]}-sample"
    use_queue(queue)  # no worker consumes it; the messages advance() sends are dropped below
    sample = QuerySample()
    try:
        access = system_access(team)
        params = {"waits": waits, "interval": 0, "record_lags": False}
        active = [start_operation(access=access, kind=KIND, params=params)[0].pk for _ in range(size)]
        for _ in range(waits + 20):
            if not active:
                break
            kept = dict(holder.due(time.time() + 1e9)) if holder is not None else {}
            for pk in list(active):
                token = kept.get(str(pk))
                if token is None:
                    Operation.objects.filter(pk=pk).update(wake_at=timezone.now() - timedelta(seconds=1))
                with holding.use(holder), CaptureQueriesContext(connection) as captured:
                    outcome = advance(pk) if token is None else holder.run(str(pk), token)
                statements = [q["sql"] for q in captured.captured_queries]
                steps = getattr(outcome, "steps", 0) or (0 if outcome.action == "skipped" else 1)
                sample.advances += steps
                sample.queries += len(statements)
                sample.commits += count_commits(statements)
                sample.by_action[outcome.action].append(len(statements) / max(steps, 1))
                sample.sql_by_action.setdefault(outcome.action, statements)
                if Operation.objects.filter(pk=pk, status__in=TERMINAL).exists():
                    active.remove(pk)
        if active:
            print(f"  warning: {len(active)} sample operations did not finish")
    finally:
        drop_queue(queue)
        purge(team)
    return sample


# --- a run ----------------------------------------------------------------------------------


@dataclass
class Result:
    n: int
    mode: str
    workers: int
    pool: str
    finished: int = 0
    wall: float = float("nan")
    advances: int = 0
    lags: list[float] = field(default_factory=list)
    first_lags: list[float] = field(default_factory=list)  # first wake-up of the wait phase
    start_delays: list[float] = field(default_factory=list)  # created -> its first step started
    censored: int = 0  # operations still waiting for a worker at a timeout (lags counted as lower bounds)
    queries_per_advance: float = float("nan")
    commits_per_advance: float = float("nan")
    tasks: Counter = field(default_factory=Counter)
    busy_seconds: float = 0.0
    sessions: int = 0
    worker_cpu: float = 0.0
    postgres_cpu: float = 0.0
    machine_busy: float = 0.0
    driver_wall: float = 0.0
    create_seconds: float = 0.0
    load: float = 0.0
    logs: list[str] = field(default_factory=list)

    @property
    def advances_per_s(self) -> float:
        return self.advances / self.wall if self.wall > 0 else float("nan")

    @property
    def connections_per_1000(self) -> float:
        return self.sessions / self.advances * 1000 if self.advances else float("nan")

    @property
    def lag_p99(self) -> float:
        return percentile(self.lags, 99)


def run_scenario(team, n: int, mode: str, workers_count: int, args, sample: QuerySample) -> Result:
    from bench import legacy_engine
    from instantstart.operations.models import TERMINAL, Operation
    from instantstart.operations.services import start_operation
    from instantstart.tenancy.services import system_access

    purge(team)
    queue = f"bench-{uuid.uuid4().hex[:10]}"
    use_queue(queue)
    workers = workers_for(mode, workers_count, queue, args)
    result = Result(n=n, mode=mode, workers=workers_count, pool=f"{workers[0].pool} x{workers[0].concurrency}")
    sessions0 = database_sessions(BENCH_DB)
    label = f"[{mode} N={n} workers={workers_count}]"
    access = system_access(team)
    params = {"waits": args.waits, "interval": args.interval, "record_lags": True}

    def create() -> None:
        begun = time.monotonic()
        # One transaction per operation: each is enqueued when its own transaction commits.
        with legacy_engine.starts_as_before() if mode == "legacy" else contextlib.nullcontext():
            for _ in range(n):
                start_operation(access=access, kind=KIND, params=params)
        result.create_seconds = time.monotonic() - begun
        print(f"  {label} created {n} operations in {result.create_seconds:.1f}s", flush=True)

    if args.burst:  # all N wait for the workers, which then start at once
        create()
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.wait_ready()
        cpu0, busy0, started = postgres_cpu_seconds(), machine_busy_seconds(), time.monotonic()
        if not args.burst:
            create()
        last_report = 0.0
        while True:
            done = Operation.objects.filter(team=team, status__in=TERMINAL).count()
            elapsed = time.monotonic() - started
            if done >= n or elapsed >= args.timeout:
                break
            if elapsed - last_report >= 5:
                print(f"  {label} {done}/{n} finished after {elapsed:.0f}s", flush=True)
                last_report = elapsed
            time.sleep(0.2)
        if done < n:
            print(f"  {label} timeout of {args.timeout:.0f}s reached with {done}/{n} finished; stopping", flush=True)
        result.driver_wall = time.monotonic() - started
        result.postgres_cpu = postgres_cpu_seconds() - cpu0
        result.machine_busy = machine_busy_seconds() - busy0
    finally:
        for worker in workers:
            worker.stop()
    result.sessions = database_sessions(BENCH_DB) - sessions0
    result.worker_cpu = sum(w.cpu_seconds - w.startup_cpu_seconds for w in workers)
    for worker in workers:
        counts, seconds = worker.task_stats()
        result.tasks.update(counts)
        result.busy_seconds += seconds
    result.logs = [str(w.log_path) for w in workers]
    result.queries_per_advance, result.commits_per_advance = sample.per_advance, sample.commits_per_advance
    result.load = os.getloadavg()[0]
    summarize(team, result, burst=args.burst)
    purge(team)
    drop_queue(queue)
    return result


def summarize(team, result: Result, *, burst: bool) -> None:
    """Read the run's numbers back from the operations and their wait phases."""
    from django.db.models import Max, Min, Sum
    from django.utils import timezone

    from instantstart.operations.models import TERMINAL, Operation, OperationStatus, Phase, PhaseStatus

    ops = Operation.objects.filter(team=team)
    finished = ops.filter(status__in=TERMINAL)
    failed = finished.exclude(status=OperationStatus.SUCCEEDED).count()
    if failed:
        print(f"  warning: {failed} operations did not succeed")
    span = ops.aggregate(first=Min("created_at"), last=Max("finished_at"), advances=Sum("advance_count"))
    # A burst's clock starts when the workers take the first operation, not when this process began
    # creating them: the run then measures the workers, not how fast operations are created here.
    begin = span["first"]
    if burst:
        begin = Phase.objects.filter(operation__team=team, name="work").aggregate(t=Min("started_at"))["t"]
    result.finished = finished.count()
    result.advances = span["advances"] or 0
    last = span["last"] if result.finished == result.n else timezone.now()
    if begin and last:
        result.wall = (last - begin).total_seconds()
    stopped_at = timezone.now()
    for created, started in Phase.objects.filter(operation__team=team, name="work").values_list(
        "operation__created_at", "started_at"
    ):
        result.start_delays.append(((started or stopped_at) - max(created, begin or created)).total_seconds())
    rows = Phase.objects.filter(operation__team=team, name="wait").values_list(
        "state", "status", "operation__status", "operation__wake_at"
    )
    for state, phase_status, status, wake_at in rows:
        recorded = [float(lag) for lag in (state or {}).get("lags", [])]
        result.lags.extend(recorded)
        result.first_lags.extend(recorded[:1])
        waiting = phase_status != PhaseStatus.SUCCEEDED and status not in TERMINAL
        if waiting and wake_at is not None and wake_at < stopped_at:
            result.censored += 1
            result.lags.append((stopped_at - wake_at).total_seconds())


# --- reporting ------------------------------------------------------------------------------

HEADER = (
    "N",
    "mode",
    "workers",
    "pool",
    "advances/s",
    "queries/adv",
    "commits/adv",
    "lag p50",
    "lag p99",
    "conns/1k adv",
    "wall s",
    "finished",
)


def _num(value: float, fmt: str, prefix: str = "") -> str:
    return "-" if math.isnan(value) else prefix + format(value, fmt)


def row(r: Result) -> tuple[str, ...]:
    bound = "\u2265" if r.censored else ""
    return (
        str(r.n),
        r.mode,
        str(r.workers),
        r.pool,
        _num(r.advances_per_s, ".1f"),
        _num(r.queries_per_advance, ".2f"),
        _num(r.commits_per_advance, ".2f"),
        _num(percentile(r.lags, 50), ".3f", bound) + "s",
        _num(r.lag_p99, ".3f", bound) + "s",
        _num(r.connections_per_1000, ".1f"),
        _num(r.wall, ".1f"),
        f"{r.finished}/{r.n}",
    )


def print_table(results: list[Result]) -> None:
    rows = [HEADER, *(row(r) for r in results)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    for index, cells in enumerate(rows):
        print(
            " | ".join(
                cell.ljust(width) if i in (1, 3) else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
            )
        )
        if index == 0:
            print("-+-".join("-" * width for width in widths))


def print_details(results: list[Result]) -> None:
    cores = os.cpu_count() or 1
    for r in results:
        ran = sum(r.tasks.values())
        outcomes = ", ".join(f"{action} {count}" for action, count in r.tasks.most_common())
        busy = r.machine_busy / r.driver_wall / cores * 100 if r.driver_wall else float("nan")
        print(
            f"  N={r.n} {r.mode} x{r.workers}: {r.advances} step runs in {ran} advance tasks ({outcomes}), "
            f"{r.busy_seconds:.1f}s inside them; {len(r.lags)} wake-ups, "
            f"lag max {max(r.lags, default=float('nan')):.3f}s, "
            f"first wake-up of the wait phase p50/p99 {_num(percentile(r.first_lags, 50), '.3f')}s/"
            f"{_num(percentile(r.first_lags, 99), '.3f')}s; created -> first step p50/p99 "
            f"{_num(percentile(r.start_delays, 50), '.3f')}s/{_num(percentile(r.start_delays, 99), '.3f')}s; "
            f"{r.sessions} connections opened"
        )
        print(
            f"    CPU: workers {r.worker_cpu:.1f}s ({r.worker_cpu / max(r.advances, 1) * 1000:.2f} ms per advance), "
            f"PostgreSQL {r.postgres_cpu:.1f}s, the machine {busy:.0f}% busy on {cores} cores; "
            f"creating took {r.create_seconds:.1f}s; load average at the end {r.load:.2f}; logs {' '.join(r.logs)}"
        )


def print_summary_lines(results: list[Result]) -> None:
    for r in results:
        print(
            f"summary mode={r.mode} n={r.n} advances_per_s={_num(r.advances_per_s, '.1f')} "
            f"queries_per_advance={_num(r.queries_per_advance, '.2f')} "
            f"commits_per_advance={_num(r.commits_per_advance, '.2f')} lag_p99_s={_num(r.lag_p99, '.3f')} "
            f"workers={r.workers} connections_per_1000_advances={_num(r.connections_per_1000, '.1f')} "
            f"start_p99_s={_num(percentile(r.start_delays, 99), '.3f')} pool={r.pool.replace(' ', '')}"
        )


def print_scaling(results: list[Result]) -> None:
    """How close to linear more worker processes get, and what the machine was doing meanwhile."""
    cores = os.cpu_count() or 1
    groups: dict[tuple[int, str], list[Result]] = defaultdict(list)
    for r in results:
        groups[(r.n, r.mode)].append(r)
    for (n, mode), runs in groups.items():
        runs.sort(key=lambda r: r.workers)
        if len(runs) < 2 or runs[0].workers != 1:
            continue
        one = runs[0].advances_per_s
        parts = []
        saturated = None
        for r in runs[1:]:
            speedup = r.advances_per_s / one if one else float("nan")
            linear = speedup / r.workers * 100
            parts.append(f"{r.workers} workers x{speedup:.2f} ({linear:.0f}% of linear)")
            if saturated is None and linear < 70:
                saturated = r
        line = f"  scaling N={n} {mode}: " + ", ".join(parts)
        if saturated is not None:
            share = {
                "the machine": saturated.machine_busy,
                "PostgreSQL": saturated.postgres_cpu,
                "the workers": saturated.worker_cpu,
            }
            shares = {k: v / saturated.driver_wall / cores * 100 for k, v in share.items()}
            other = shares["the machine"] - shares["PostgreSQL"] - shares["the workers"]
            line += (
                f"; saturates at {saturated.workers} workers: the machine was {shares['the machine']:.0f}% busy "
                f"on {cores} cores (PostgreSQL {shares['PostgreSQL']:.0f}%, the workers {shares['the workers']:.0f}%, "
                f"everything else on the machine {other:.0f}%)"
            )
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 100, 1000], help="in-flight operations per run")
    parser.add_argument("--waits", type=int, default=3, help="polls of the wait phase")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="worker processes per run")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--pool", choices=["threads", "prefork", "solo"], help="engine workers' pool")
    parser.add_argument("--concurrency", type=int, help="engine workers' threads/processes")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take")
    parser.add_argument(
        "--burst",
        action="store_true",
        help="create all N operations before the workers start, and time from their first step: "
        "measures the workers rather than this process creating operations while they run",
    )
    parser.add_argument("--sample", type=int, default=10, help="operations in the in-process query sample")
    parser.add_argument("--show-sql", action="store_true", help="print the SQL of one advance per outcome")
    args = parser.parse_args(argv)

    ensure_database(BENCH_DB)
    setup_django(BENCH_DB, "bench/engine.py")
    team = bench_team()
    purge(team)
    print(
        f"engine.selftest: waits={args.waits}, interval={args.interval}s{', burst' if args.burst else ''}; "
        f"database {BENCH_DB}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (timings move with it)"
    )

    samples: dict[str, QuerySample] = {}
    for mode in args.modes:
        sample = samples[mode] = measure_queries(team, mode, args.waits, args.sample)
        detail = ", ".join(
            f"{action} {sum(counts) / len(counts):.1f} (x{len(counts)})" for action, counts in sample.by_action.items()
        )
        print(
            f"statements per advance, {mode} ({args.sample} ops in-process): {sample.per_advance:.2f} "
            f"({sample.commits_per_advance:.2f} commits); per step run, by the call's outcome: {detail}"
        )
        if args.show_sql:
            for action, statements in sample.sql_by_action.items():
                print(f"--- {mode} advance -> {action}: {len(statements)} statements")
                for statement in statements:
                    print(f"    {statement[:300]}")

    results: list[Result] = []
    for n in args.n:
        batch = [
            run_scenario(team, n, mode, count, args, samples[mode]) for count in args.workers for mode in args.modes
        ]
        results.extend(batch)
        print()
        print_table(batch)
        print_details(batch)
        print_scaling(batch)
        print(flush=True)

    print("Summary. advances = step runs; lag = when a wake-up ran minus when it was due (\u2265: lower bound,")
    print("operations still waiting at a timeout); queries and commits per advance from the in-process sample.")
    print_table(results)
    print_scaling(results)
    print_summary_lines(results)
    team.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
