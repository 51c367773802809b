"""What the benchmarks share: their own PostgreSQL database, Django in test mode, Celery queues,
worker processes (started with the command line `make run` and the tests use), percentiles, and
CPU readings from /proc."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def database_url(name: str) -> str:
    return f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


def ensure_database(name: str) -> None:
    """Create the benchmark's own database when missing (it never touches the test databases)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"created database {name}")


def setup_django(db_name: str, script: str) -> None:
    """Django in test mode on the benchmark's database, migrated."""
    os.environ.setdefault("INSTANTSTART_MODE", "test")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.test_settings")
    os.environ["DATABASE_URL"] = database_url(db_name)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if not getattr(settings, "REDIS_URL", None) or settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        sys.exit(f"{script} needs the test mode (PostgreSQL + Redis): set INSTANTSTART_MODE=test")
    call_command("migrate", verbosity=0)


def drop_queue(queue: str) -> None:
    """Delete the queue's Redis keys (its list, priority lists, binding): leftovers go nowhere."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in list(client.scan_iter(match=f"*{queue}*")):
        client.delete(key)
    client.close()


def database_sessions(db_name: str) -> int:
    """Connections ever opened to the database (PostgreSQL's pg_stat_database.sessions)."""
    import psycopg

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s", [db_name]).fetchone()
    return int(row[0]) if row else 0


# --- numbers ----------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def dist(values: list[float]) -> str:
    if not values:
        return "n=0"
    return (
        f"p50 {percentile(values, 50):7.3f}s  p99 {percentile(values, 99):7.3f}s  "
        f"max {max(values):7.3f}s  n={len(values)}"
    )


def _stat_fields(pid: str) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return [raw[raw.index("(") + 1 : raw.rindex(")")], *raw[raw.rindex(")") + 2 :].split()]


def proc_cpu_seconds(pgid: int) -> float:
    """utime+stime of every live process in the process group, plus what they reaped (cutime+cstime)."""
    total = 0
    for entry in os.listdir("/proc"):
        fields = _stat_fields(entry) if entry.isdigit() else None
        if fields is None or int(fields[3]) != pgid:  # pgrp
            continue
        total += sum(int(v) for v in fields[12:16])  # utime stime cutime cstime
    return total / CLK_TCK


def postgres_cpu_seconds() -> float:
    """CPU seconds of the running PostgreSQL processes (the database's share of the machine)."""
    total = 0
    for entry in os.listdir("/proc"):
        fields = _stat_fields(entry) if entry.isdigit() else None
        if fields is not None and fields[0].startswith("postgres"):
            total += sum(int(v) for v in fields[12:14])
    return total / CLK_TCK


def machine_busy_seconds() -> float:
    """CPU seconds spent not idle on the whole machine since boot (all cores), from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / CLK_TCK


# --- workers ----------------------------------------------------------------------------------


def worker_env(db_name: str, queue: str) -> dict[str, str]:
    """What a bench worker needs in its environment: test mode, the bench database, the run's queue."""
    from django.conf import settings

    return {
        "DJANGO_SETTINGS_MODULE": "instantstart.test_settings",
        "INSTANTSTART_MODE": "test",
        "DATABASE_URL": database_url(db_name),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_QUEUE": queue,
    }


class BenchWorker:
    """One `celery worker` subprocess on the bench database and a queue of its own.

    Started with `worker_argv`, the command line `make run` and the tests use; ``app`` may name a
    bench module that swaps the engine (bench/legacy_worker.py).
    """

    def __init__(
        self,
        name: str,
        queue: str,
        env: dict[str, str],
        *,
        pool: str,
        concurrency: int,
        app: str = "instantstart",
    ) -> None:
        self.name, self.queue, self.extra_env = name, queue, env
        self.pool, self.concurrency, self.app = pool, concurrency, app
        self.proc: subprocess.Popen | None = None
        fd, path = tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".log")
        os.close(fd)
        self.log_path = Path(path)
        self.cpu_seconds = float("nan")
        self.startup_cpu_seconds = float("nan")

    def start(self) -> BenchWorker:
        from instantstart.operations.worker_command import worker_argv

        argv = worker_argv(
            queue=self.queue,
            pool=self.pool,
            concurrency=self.concurrency,
            hostname=f"{self.name}@%h",
            app=self.app,
        )
        with open(self.log_path, "w") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env={**os.environ, **self.extra_env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def wait_ready(self, timeout: float = 90) -> BenchWorker:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "ready." in self.log():
                self.startup_cpu_seconds = proc_cpu_seconds(self.proc.pid)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log()[-3000:]}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"worker did not start: {self.log()[-3000:]}")

    def stop(self) -> None:
        """Read the CPU time, then warm shutdown (finishes the task in hand, gives unacked messages
        back), then SIGKILL."""
        if self.proc and self.proc.poll() is None:
            self.cpu_seconds = proc_cpu_seconds(self.proc.pid)
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def task_stats(self) -> tuple[Counter, float]:
        """(advance tasks run by outcome, seconds spent inside them) from the worker's log."""
        from instantstart.operations.worker_command import ADVANCE_LOG_LINE

        runs = [(float(seconds), action) for seconds, action in ADVANCE_LOG_LINE.findall(self.log())]
        return Counter(action for _, action in runs), sum(s for s, _ in runs)

    def problems(self) -> Counter:
        """Log lines at WARNING and above, keyed by their first 110 characters after the level."""
        found: Counter = Counter()
        for line in self.log().splitlines():
            match = re.search(r"\b(WARNING|ERROR|CRITICAL)\b[/:\]]?\s*(.*)", line)
            if match:
                text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", match.group(2))
                found[f"{match.group(1)} {text[:110]}"] += 1
        return found
