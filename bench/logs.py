"""Benchmark of training log delivery: the log socket against a raw read of the pod log, line latency,
and lines lost with many viewers.

One sandbox cluster (made through the product, with the training operator), one PyTorch job that prints
a few thousand lines over ``--run-seconds`` simulated seconds, a real worker collecting them, and the real
ASGI application under uvicorn, each in a process of its own, and the viewers in another (as deployed: the
web server does not share a GIL with the cluster or the browsers, which in one process put seconds of
thread switching into every number). Prints:

  raw read         lines/s of one GET of the pod log (what `kubectl logs` reads), after the job ended
                   (the median of 15; the first one's rate printed too)
  socket replay    lines/s of one socket from after=0 to its end message (the same lines, from the rows;
                   connect and auth included; the median of 15, and the first)
  ratio            socket replay / raw read (goal >= 0.5)
  latency p50/p99  for every line every live viewer received: receive time - the line's kubelet timestamp
                   (the moment the program printed it), through the collector (the worker follows the
                   pod logs) and the socket (goal p99 < 250 ms); split at the moment each line's row
                   shows in the database (a 10 ms watch): ts -> row is the collector's part (with the
                   sandbox's 0.1 s tick, which puts a printed line in the pod log up to a tick after
                   its ts), row -> viewer the socket's; when the viewers had opened and the first row came;
                   each socket's wait from its opening to its first frame (join); the latency of the
                   lines printed once every viewer had its first frame (after joining: the live
                   latency without the crowd of sockets joining at once); how far apart the
                   collector's writes landed; the socket's p99 and the whole latency's per tenth of the
                   run (the first tenth holds the start: 100 sockets joining, the first burst of lines)
  frames           frames the live viewers got and lines per frame; the replay's frames
  lost             per live viewer, stored lines it never received (goal 0), and duplicates

  summary viewers=<N> raw_lines_per_s=<x> socket_lines_per_s=<x> ratio=<x> p50_ms=<x> p99_ms=<x> lost=<n> dup=<n>
          row_p99_ms=<x> steady_p99_ms=<x> socket_p99_ms=<x> raw_first_lines_per_s=<x> socket_first_lines_per_s=<x>

It measures; it asserts nothing. Needs PostgreSQL and Redis on 127.0.0.1 (the test mode); uses a database
of its own (`instantstart_bench_training_logs`). Other work on the machine moves every number:

  INSTANTSTART_MODE=test DJANGO_SETTINGS_MODULE=instantstart.test_settings \\
      .venv/bin/python bench/logs.py [--viewers 100] [--steps 2000] [--run-seconds 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/mcp.py would shadow the MCP SDK that the ASGI application imports: drop this folder from the path.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    PG_HOST,
    PG_PORT,
    PG_USER,
    BenchWorker,
    dist,
    ensure_database,
    percentile,
    setup_django,
    worker_env,
)

DB = "instantstart_bench_training_logs"
SPEEDUP = 1000.0
REPEATS = 15


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


JOINS: list[tuple[float, float]] = []  # per socket of a run: when it opened and got its first frame


async def _viewer(url: str, token: str, received: list, arrivals: list, frames: list) -> None:
    """One socket to its end message: the seqs it got, (seq, receive time) per line, lines per frame
    (the first entry of ``frames`` is when the socket opened)."""
    from websockets.asyncio.client import connect

    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None) as socket:
        opened = time.time()
        frames.append(-opened)
        first = True
        async for raw in socket:
            now = time.time()
            if first:
                first = False
                JOINS.append((opened, now))
            message = json.loads(raw)
            if "status" in message:
                return
            frames.append(len(message["lines"]))
            for line in message["lines"]:
                received.append(line["seq"])
                arrivals.append((line["seq"], now))


def _viewers(url: str, token: str, n: int) -> tuple[list[list[int]], list[tuple[int, float]], list[int], list[float]]:
    received: list[list[int]] = [[] for _ in range(n)]
    arrivals: list[tuple[int, float]] = []
    frames: list[int] = []

    async def run() -> None:
        await asyncio.gather(*(_viewer(url, token, received[i], arrivals, frames) for i in range(n)))

    JOINS.clear()
    asyncio.run(run())
    opened = [-x for x in frames if x < 0]
    return received, arrivals, [x for x in frames if x >= 0], (opened, list(JOINS))


class RowWatch:
    """When each line's row first shows in the database (a poll every 10 ms in a thread of its own): splits a
    line's latency into kubelet ts -> row stored (the collector) and row stored -> received (the socket)."""

    def __init__(self, db: str, job_id: str) -> None:
        self.db, self.job_id = db, job_id
        self.seen: dict[int, tuple[float, float | None]] = {}  # seq -> (first seen, kubelet ts)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="row-watch", daemon=True)

    def start(self) -> RowWatch:
        self.thread.start()
        return self

    def _run(self) -> None:
        import psycopg

        last = 0
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=self.db, autocommit=True) as conn:
            while not self.stop.is_set():
                rows = conn.execute(
                    "SELECT seq, ts FROM training_logline WHERE job_id = %s AND seq > %s ORDER BY seq",
                    [self.job_id, last],
                ).fetchall()
                now = time.time()
                for seq, ts in rows:
                    self.seen[seq] = (now, ts.timestamp() if ts else None)
                if rows:
                    last = rows[-1][0]
                self.stop.wait(0.01)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(10)


def _viewing(conn) -> None:
    """The viewers' process (apart from the sandbox's and the web server's, as a browser would be): runs
    what the bench sends, ("live", url, token, n) or ("replay", url, token), and sends back what the
    viewers got; None ends it."""
    while (command := conn.recv()) is not None:
        if command[0] == "live":
            _, url, token, n = command
            conn.send(_viewers(url, token, n))
        else:
            _, url, token = command
            started = time.monotonic()
            received, _, frames, _ = _viewers(url, token, 1)
            conn.send((received[0], frames, time.monotonic() - started))


def _watching(conn, db: str, job_id: str) -> None:
    """The row watch's process (its clock read as soon as a row shows, not when another thread lets it):
    watches until told to stop, then sends back what it saw."""
    watch = RowWatch(db, job_id).start()
    conn.recv()
    watch.finish()
    conn.send(watch.seen)


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """The ASGI application under uvicorn in a process of its own, as deployed (connections from the
    pool, which production turns on and the test mode does not): (the process, its port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "uvicorn", "instantstart.asgi:application", "--port", str(port)]
    process = subprocess.Popen(
        [*argv, "--log-level", "warning", "--lifespan", "off"], cwd=ROOT, env={**os.environ, "DB_POOL": "1", **env}
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("uvicorn did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--run-seconds", type=float, default=20000, help="simulated seconds the job runs")
    args = parser.parse_args()

    # The product's defaults unless set: the worker watches the job's pods and follows each running pod's
    # log (TRAINING_LOG_FOLLOW), and polls the job every TRAINING_LOG_POLL_SECONDS (0.25).
    collector_env = {k: v for k, v in os.environ.items() if k.startswith("TRAINING_LOG_")}
    ensure_database(DB)
    setup_django(DB, "bench/logs.py")
    from django.conf import settings

    from clusters.models import Cluster
    from clusters.services import create_cluster
    from instantstart.cloud.aws import forget_credentials
    from instantstart.operations.models import Operation
    from instantstart.tenancy.models import Team
    from instantstart.tenancy.roles import Role
    from instantstart.tenancy.services import system_access
    from sandbox.server import Sandbox
    from tests.factories import member, token
    from tests.training.helpers import enable_training_features
    from training.models import Job, LogLine
    from training.readers.logs import read_pod_log
    from training.serializers import validated_submission
    from training.services import submit_job

    sandbox = Sandbox(Path(tempfile.mkdtemp(prefix="bench-logs-")), port=0, speedup=SPEEDUP).start()
    settings.SANDBOX_AWS_ENDPOINT = sandbox.aws_endpoint
    poll_scale = 5 / SPEEDUP
    settings.OPERATIONS = {**settings.OPERATIONS, "POLL_SCALE": poll_scale, "BACKOFF_BASE_SECONDS": 0.05}
    settings.TRAINING_POD_ANNOTATIONS = {"sandbox.instantstart.io/run-seconds": str(args.run_seconds)}
    forget_credentials()
    queue = f"bench-logs-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    env = {
        **worker_env(DB, queue),
        "SANDBOX_AWS_ENDPOINT": sandbox.aws_endpoint,
        "OPERATION_POLL_SCALE": str(poll_scale),
        "OPERATION_BACKOFF_BASE": "0.05",
        **collector_env,
    }
    worker = BenchWorker("logs", queue, env, pool="threads", concurrency=4).start().wait_ready()
    # The web server takes its connections from the pool, as deployed (_serve sets DB_POOL=1).
    web_env = {k: v for k, v in os.environ.items() if k.startswith("TRAINING_SOCKET_")}
    spawn = multiprocessing.get_context("spawn")
    viewing, child = spawn.Pipe()
    viewers = spawn.Process(target=_viewing, args=(child,), daemon=True)
    web = None
    try:
        web, port = _serve({**env, **web_env})
        viewers.start()
        slug = f"bench-{uuid.uuid4().hex[:6]}"
        team = Team.objects.create(slug=slug, name=slug)
        user = member(team, f"{slug}-user", Role.ADMIN)
        raw_token = token(team, user, Role.ADMIN)
        access = system_access(team, user)
        data = {
            "name": "bench",
            "region": "us-west-2",
            "availability_zone": "us-west-2a",
            "kubernetes_version": "1.31",
            "storage": "s3",
            "instance_groups": [
                {
                    "name": "gpu",
                    "instance_type": "ml.g5.12xlarge",
                    "count": 2,
                    "capacity_type": "on_demand",
                    "efa_only": False,
                }
            ],
        }
        cluster, operation, _ = create_cluster(access=access, data=data)
        _wait(lambda: Operation.objects.get(pk=operation.pk).is_terminal, 300, "the cluster")
        cluster = Cluster.objects.get(pk=cluster.pk)
        enable_training_features(cluster)
        from instantstart.cloud.aws import team_cloud
        from training.readers.files import shared_bucket

        team_cloud(team, cluster.region).client("s3").put_object(
            Bucket=shared_bucket(cluster), Key="bench/train.py", Body=b"print(1)\n"
        )
        spec = validated_submission(
            {
                "name": "logbench",
                "recipe": "pytorch",
                "instance_group": "gpu",
                "nodes": 2,
                "script": "/s3/bench/train.py",
                "args": ["--max_steps", str(args.steps)],
                "hang_detection": [],
                "mlflow": False,
            },
            cluster,
        )
        job, _ = submit_job(access=access, cluster=cluster, spec=spec)
        url = f"ws://127.0.0.1:{port}/ws/jobs/{job.pk}/logs/?after=0"
        print(
            f"job {job.k8s_name}: {args.viewers} live viewers, {args.steps} steps over {args.run_seconds:g} s simulated"
        )
        watching, child = spawn.Pipe()
        watcher = spawn.Process(target=_watching, args=(child, DB, str(job.pk)), daemon=True)
        watcher.start()
        started, submitted = time.monotonic(), time.time()
        viewing.send(("live", url, raw_token, args.viewers))
        received, arrivals, live_frames, (opened, joins) = viewing.recv()
        live_wall = time.monotonic() - started
        watching.send("stop")
        seen = watching.recv()
        watcher.join(10)
        batches = sorted({at for at, _ in seen.values()})
        gaps = [b - a for a, b in zip(batches, batches[1:], strict=False)]
        latencies, socket_part = [], []
        for seq, now in arrivals:
            stored_at, ts = seen.get(seq, (None, None))
            if ts is None:
                continue
            latencies.append(now - ts)
            if stored_at is not None:
                socket_part.append(now - stored_at)
        collector = [at - ts for at, ts in seen.values() if ts is not None]
        job.refresh_from_db()
        stored = list(LogLine.objects.filter(job=job).order_by("seq").values_list("seq", flat=True))
        lost = sum(len(set(stored) - set(r)) for r in received)
        dup = sum(len(r) - len(set(r)) for r in received)
        print(
            f"job {job.status}: {len(stored)} lines stored in {live_wall:.1f} s; viewers got {sum(map(len, received))}"
        )

        # Raw read of the pod log stream vs the socket's replay of the same job: the median of REPEATS
        # each (one read is a few milliseconds, and a single one swings with whatever else runs).
        pods = sorted({p["name"] for p in Job.objects.get(pk=job.pk).pods})
        raw_walls = []
        for _ in range(REPEATS):
            t0 = time.monotonic()
            raw_lines = sum(len(read_pod_log(cluster, job.namespace, pod, None)) for pod in pods)
            raw_walls.append(time.monotonic() - t0)
        replays = []
        for _ in range(REPEATS):
            viewing.send(("replay", url, raw_token))
            replays.append(viewing.recv())
        raw_wall = sorted(raw_walls)[REPEATS // 2]
        replayed, replay_frames, socket_wall = sorted(replays, key=lambda r: r[2])[REPEATS // 2]
        raw_first = raw_lines / raw_walls[0] if raw_walls[0] else float("nan")
        socket_first = len(replayed) / replays[0][2] if replays[0][2] else float("nan")
        raw_rate = raw_lines / raw_wall if raw_wall else float("nan")
        socket_rate = len(replayed) / socket_wall if socket_wall else float("nan")
        ms = [x * 1000 for x in latencies]
        print(f"raw read         {raw_lines} lines in {raw_wall:.3f} s = {raw_rate:,.0f} lines/s")
        print(f"socket replay    {len(replayed)} lines in {socket_wall:.3f} s = {socket_rate:,.0f} lines/s")
        print(f"  the first of each: raw {raw_first:,.0f} lines/s, socket {socket_first:,.0f} lines/s")
        print(f"ratio            {socket_rate / raw_rate:.2f}x (goal >= 0.5)")
        print(f"latency          {dist(latencies)} (goal p99 < 0.250s)")
        print(f"  ts -> row      {dist(collector)} (the collector: pod log streamed, rows stored; 10 ms watch)")
        print(
            f"  start          viewers open {max(opened, default=submitted) - submitted:.2f} s after the submit, "
            f"first row {min(batches, default=submitted) - submitted:.2f} s after"
        )
        waits = [got - opened for opened, got in joins]
        print(f"  join           {dist(waits)} from a socket's opening to its first frame")
        joined = max((got for _, got in joins), default=submitted)
        printed = {seq: ts for seq, (_, ts) in seen.items() if ts is not None}
        steady = [now - printed[seq] for seq, now in arrivals if printed.get(seq, 0) > joined]
        print(f"  after joining  {dist(steady)} (lines printed once every viewer had its first frame)")
        print(f"  collector      {len(batches)} batches of rows, {dist(gaps)} apart")
        print(f"  row -> viewer  {dist(socket_part)} (the socket: tail poll, frames sent, received)")
        tenths: list[list[float]] = [[] for _ in range(10)]
        totals: list[list[float]] = [[] for _ in range(10)]
        top = max(stored, default=1)
        for seq, now in arrivals:
            stored_at, ts = seen.get(seq, (None, None))
            if stored_at is not None:
                tenths[min(9, (seq - 1) * 10 // top)].append((now - stored_at) * 1000)
            if ts is not None:
                totals[min(9, (seq - 1) * 10 // top)].append((now - ts) * 1000)
        print("  row -> viewer p99 ms by tenth of the run: " + " ".join(f"{percentile(t, 99):.0f}" for t in tenths))
        print("  latency p99 ms by tenth of the run:       " + " ".join(f"{percentile(t, 99):.0f}" for t in totals))
        per_frame = sum(live_frames) / len(live_frames) if live_frames else 0
        print(
            f"frames           live {len(live_frames)} ({per_frame:.1f} lines each), "
            f"replay {len(replay_frames)} ({max(replay_frames, default=0)} lines at most)"
        )
        print(f"lost             {lost} (goal 0), duplicates {dup}, over {args.viewers} viewers")
        print(
            f"summary viewers={args.viewers} raw_lines_per_s={raw_rate:.0f} socket_lines_per_s={socket_rate:.0f} "
            f"ratio={socket_rate / raw_rate:.2f} p50_ms={percentile(ms, 50):.0f} p99_ms={percentile(ms, 99):.0f} "
            f"lost={lost} dup={dup} row_p99_ms={percentile([x * 1000 for x in collector], 99):.0f} "
            f"socket_p99_ms={percentile([x * 1000 for x in socket_part], 99):.0f} "
            f"raw_first_lines_per_s={raw_first:.0f} socket_first_lines_per_s={socket_first:.0f}"
        )
    finally:
        if viewers.is_alive():
            viewing.send(None)
            viewers.join(10)
        if web is not None:
            web.terminate()
            web.wait(10)
        worker.stop()
        sandbox.stop()
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    raise SystemExit(main())
