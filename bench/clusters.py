"""Benchmark of `cluster.create` at scale: many clusters in many teams, end to end, in the sandbox.

Creates --clusters clusters (one instance group of one ml.g5.xlarge, S3 storage) spread over
--teams teams (each team is its own emulated AWS account) through `clusters.services.create_cluster`,
driven by --workers real `celery worker` subprocesses against an in-process Sandbox, and prints:

  outcome          clusters succeeded / failed / unfinished, wall time (first create -> last finish)
  AWS calls        per cluster, by "service:Action": the sandbox's call counters summed over the
                   teams' accounts and divided by the number of clusters (top 30, then the total)
  CPU              CPU seconds of the worker processes (and their children), read from /proc just
                   before they are stopped; also this process (the sandbox + the driver) and the machine
  ready -> next    per awaited resource (NAT gateway, EKS control plane, add-ons, HyperPod cluster,
                   nodes): when the sandbox made it ready -> when the next phase started (p50/p99)
  hand-off         for every phase transition: Phase[i].finished_at -> Phase[i+1].started_at
  summary          one line with the hand-off and ready -> next-phase percentiles, for scripts

`--engine legacy` runs the engine before issue 16 (bench/legacy_engine.py) in the same workers, to
compare with today's engine on the same machine.

Reading it: with the poll scale at 1/speedup the steps poll as often, relative to how long the
sandbox takes, as they would against AWS. When the workers or the sandbox cannot keep up, a poll
runs later than due, fewer polls happen, and the lags grow: the AWS calls per cluster then
undercount the polls a cluster makes at AWS's pace (compare a small run at --speedup 20). The
sandbox runs in this process and shares its CPU (and the GIL) with the driver; the machine's load
average is printed, since other work on it skews every time measured here (CPU seconds less so).

It measures; it asserts nothing. Needs PostgreSQL and Redis on 127.0.0.1 (the test mode). Uses a
database of its own (`instantstart_bench_clusters`, created and migrated if missing), a Celery queue
of its own per run, and deletes the bench teams (`bench-c-*`) of the previous run when it starts (the
last run's teams, clusters and operations stay in that database for inspection; worker logs stay in /tmp):

  INSTANTSTART_MODE=test DJANGO_SETTINGS_MODULE=instantstart.test_settings \\
      .venv/bin/python bench/clusters.py [--clusters 200] [--teams 20] [--workers 2] [--speedup 200] \\
      [--engine engine|legacy] [--pool threads] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    BenchWorker,
    dist,
    drop_queue,
    ensure_database,
    machine_busy_seconds,
    percentile,
    setup_django,
    worker_env,
)

BENCH_DB = "instantstart_bench_clusters"
TEAM_PREFIX = "bench-c-"
REGION, ZONE = "us-west-2", "us-west-2a"


# --- setup ----------------------------------------------------------------------------------


def engine_knobs(args) -> dict[str, str]:
    """The engine settings of the run, as the OPERATION_* environment the workers read."""
    return {
        "OPERATION_POLL_SCALE": repr(args.poll_scale if args.poll_scale is not None else 1.0 / args.speedup),
        "OPERATION_BACKOFF_BASE": "0.05",
        "OPERATION_BACKOFF_MAX": "0.5",
        "OPERATION_LEASE_SECONDS": str(args.lease),
        "OPERATION_POLL_SECONDS": repr(10.0),
        "OPERATION_TRANSIENT_RETRIES": "8",
    }


def make_teams(count: int) -> list:
    from instantstart.tenancy.models import Cloud, Team

    old = Team.objects.filter(slug__startswith=TEAM_PREFIX)
    if old.exists():
        print(f"deleting {old.count()} bench teams of a previous run (and their clusters and operations)")
        old.delete()
    return [
        Team.objects.create(slug=f"{TEAM_PREFIX}{i:02d}", name=f"Cluster bench {i:02d}", cloud=Cloud.SANDBOX)
        for i in range(count)
    ]


def validated_body(team) -> dict:
    """The request body, validated once by ClusterCreateSerializer (it reads the sandbox's catalog)."""
    from clusters.serializers import ClusterCreateSerializer
    from instantstart.tenancy.services import system_access

    body = {
        "name": "template",
        "region": REGION,
        "availability_zone": ZONE,
        "storage": "s3",
        "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 1}],
    }
    serializer = ClusterCreateSerializer(data=body, context={"access": system_access(team)})
    if not serializer.is_valid():
        sys.exit(f"the cluster body does not validate against the sandbox: {serializer.errors}")
    return serializer.validated_data


def create_phases() -> tuple[str, ...]:
    from instantstart.operations.registry import get_kind

    return tuple(step.name for step in get_kind("cluster.create").steps)


def poll_seconds() -> dict[str, float]:
    """The unscaled poll interval of each phase that waits for a resource, from the step modules."""
    from clusters.steps import dependencies, eks, hyperpod, network, verify

    return {
        "network": getattr(network, "NAT_POLL_SECONDS", float("nan")),
        "eks": getattr(eks, "POLL_SECONDS", float("nan")),
        "dependencies": getattr(dependencies, "POLL_SECONDS", float("nan")),
        "hyperpod": getattr(hyperpod, "POLL_SECONDS", float("nan")),
        "verify": getattr(verify, "POLL_SECONDS", float("nan")),
    }


# --- the sandbox ----------------------------------------------------------------------------


def sandbox_get(sandbox, path: str):
    with urllib.request.urlopen(f"{sandbox.aws_endpoint}{path}", timeout=30) as response:
        return json.loads(response.read())


def sandbox_reset_calls(sandbox) -> None:
    request = urllib.request.Request(f"{sandbox.aws_endpoint}/_sandbox/calls", method="DELETE")
    urllib.request.urlopen(request, timeout=30).read()


class ReadyRecorder:
    """When each timed sandbox resource became ready, recorded by wrapping the sandbox's controller tick.

    Timed transitions (NAT gateway available, EKS control plane ACTIVE, add-on ACTIVE, HyperPod
    InService, a HyperPod node Running) are applied only inside `sandbox.aws.lifecycle.tick`, which
    the sandbox's controller thread calls every 0.1 s under the world's lock. The wrapper lists the
    pending timers before each tick and again after it: a timer that was pending before and is gone
    after was applied by that tick, at that moment. From then on a Describe call sees it ready.
    """

    def __init__(self, world) -> None:
        from sandbox.aws import lifecycle

        self.world, self.lifecycle = world, lifecycle
        self.original = lifecycle.tick
        self.ready_at: dict[tuple, float] = {}
        self.ticks = 0
        self.seconds = 0.0  # spent in the wrapper's own bookkeeping

    def install(self) -> None:
        def tick(world):
            with world.lock:
                started = time.perf_counter()
                before = self.pending(world)
                middle = time.perf_counter()
                plan = self.original(world)
                resumed = time.perf_counter()
                after = self.pending(world)
                now = time.time()
                for key in before.keys() - after.keys():
                    self.ready_at.setdefault(key, now)
                self.ticks += 1
                self.seconds += (middle - started) + (time.perf_counter() - resumed)
            return plan

        self.lifecycle.tick = tick

    def uninstall(self) -> None:
        self.lifecycle.tick = self.original

    @staticmethod
    def pending(world) -> dict[tuple, float]:
        """Every timer still to fire: key -> its due time (called under world.lock)."""
        out: dict[tuple, float] = {}
        for account, _region, table in world.tables("nat_gateways"):
            for nat_id, rec in table.items():
                if rec.get("due") and rec.get("to") is None:
                    out[("nat", account, nat_id)] = rec["due"]
        for account, _region, table in world.tables("eks_clusters"):
            for name, meta in table.items():
                if meta.get("due") and meta.get("phase") == "CREATING":
                    out[("eks", account, name)] = meta["due"]
        for account, _region, table in world.tables("eks_addons"):
            for key, addon in table.items():
                if addon.get("_due") and addon.get("status") == "CREATING":
                    out[("addon", account, key)] = addon["_due"]
        for account, _region, table in world.tables("hp_clusters"):
            for name, cluster in table.items():
                if cluster.get("_due") and cluster.get("_op") == "create":
                    out[("hyperpod", account, name)] = cluster["_due"]
                for iid, node in cluster.get("_nodes", {}).items():
                    if node.get("Status") in ("Pending", "DeepHealthCheckInProgress") and node.get("_ready_at"):
                        out[("node", account, name, iid)] = node["_ready_at"]
        return out

    def when(self, key: tuple) -> float | None:
        return self.ready_at.get(key)

    def matching(self, kind: str, account: str, test) -> list[float]:
        return [v for k, v in self.ready_at.items() if k[0] == kind and k[1] == account and test(k)]


# --- the workers ----------------------------------------------------------------------------


def workers_env(args, queue: str, sandbox_endpoint: str) -> dict[str, str]:
    from bench import legacy_engine

    env = {**worker_env(BENCH_DB, queue), "SANDBOX_AWS_ENDPOINT": sandbox_endpoint, **engine_knobs(args)}
    return {**env, **legacy_engine.WORKER_ENV} if args.engine == "legacy" else env


# --- running --------------------------------------------------------------------------------


def progress(teams, started: float) -> tuple[int, int]:
    from django.db.models import Count

    from instantstart.operations.models import TERMINAL, Operation, OperationStatus, Phase, PhaseStatus

    ops = Operation.objects.filter(team__in=teams, kind="cluster.create")
    by_status = dict(ops.values_list("status").annotate(n=Count("pk")))
    running = dict(
        Phase.objects.filter(operation__in=ops.exclude(status__in=TERMINAL), status=PhaseStatus.RUNNING)
        .values_list("name")
        .annotate(n=Count("pk"))
    )
    phases = " ".join(f"{name}={running[name]}" for name in create_phases() if running.get(name))
    between = by_status.get(OperationStatus.RUNNING, 0) - sum(running.values())
    done = sum(by_status.get(s, 0) for s in TERMINAL)
    print(
        f"  [{time.monotonic() - started:6.1f}s] succeeded {by_status.get(OperationStatus.SUCCEEDED, 0)}, "
        f"failed {by_status.get(OperationStatus.FAILED, 0)}, pending {by_status.get(OperationStatus.PENDING, 0)}, "
        f"running {by_status.get(OperationStatus.RUNNING, 0)}"
        + (f" (in phase: {phases}" if phases else "")
        # A phase's start is saved with its first step's result: until then no phase shows running.
        + (f"; in a phase's first step, or between phases: {between})" if phases else ""),
        flush=True,
    )
    return done, ops.count()


def run(args) -> int:
    from django.conf import settings

    from bench import legacy_engine
    from clusters.services import create_cluster
    from instantstart.cloud.aws import forget_credentials
    from instantstart.operations import engine
    from instantstart.operations.models import TERMINAL, Operation
    from instantstart.tenancy.services import system_access
    from sandbox.server import Sandbox

    state_dir = tempfile.mkdtemp(prefix="bench-clusters-sandbox-") if args.persist else None
    sandbox = Sandbox(state_dir=state_dir, port=0, speedup=args.speedup).start()
    settings.SANDBOX_AWS_ENDPOINT = sandbox.aws_endpoint
    settings.OPERATIONS = {
        **settings.OPERATIONS,
        "POLL_SCALE": float(engine_knobs(args)["OPERATION_POLL_SCALE"]),
    }
    forget_credentials()
    queue = f"bench-clusters-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue  # enqueue_advance reads it on every call
    env = workers_env(args, queue, sandbox.aws_endpoint)
    workers = [
        BenchWorker(
            f"{queue}-{i}",
            queue,
            env,
            pool=args.pool,
            concurrency=args.concurrency,
            app=legacy_engine.WORKER_APP if args.engine == "legacy" else "instantstart",
        ).start()
        for i in range(args.workers)
    ]
    recorder = ReadyRecorder(sandbox.world)
    recorder.install()
    swept, finished = 0, False
    try:
        teams = make_teams(args.teams)
        template = validated_body(teams[0])
        for worker in workers:
            worker.wait_ready()
        print(
            f"{args.clusters} clusters over {len(teams)} teams; sandbox speedup {args.speedup:g} at "
            f"{sandbox.aws_endpoint} (state dir {state_dir or 'none'}); {args.workers} worker(s) --pool {args.pool} "
            f"--concurrency {args.concurrency}; poll scale {settings.OPERATIONS['POLL_SCALE']:.4g}; sweep every "
            f"{args.sweep_interval:g}s; queue {queue}; load average now "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
            flush=True,
        )
        sandbox_reset_calls(sandbox)  # the serializer's catalog reads are not part of the creates
        cpu_self0, busy0 = sum(os.times()[:2]), machine_busy_seconds()
        started = time.monotonic()
        with legacy_engine.starts_as_before() if args.engine == "legacy" else contextlib.nullcontext():
            for index in range(args.clusters):
                team = teams[index % len(teams)]
                data = copy.deepcopy(template)
                data["name"] = f"c{index // len(teams):03d}"
                create_cluster(access=system_access(team), data=data)
        create_seconds = time.monotonic() - started
        print(f"  created {args.clusters} clusters (and their operations) in {create_seconds:.1f}s", flush=True)
        last_report = last_sweep = time.monotonic()
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            if args.sweep_interval > 0 and now - last_sweep >= args.sweep_interval:
                swept += engine.sweep()  # what celery beat does in production
                last_sweep = now
            if now - last_report >= args.report_every:
                last_report = now
                done, total = progress(teams, started)
            else:
                ops = Operation.objects.filter(team__in=teams, kind="cluster.create")
                done, total = ops.filter(status__in=TERMINAL).count(), ops.count()
            if done >= total:
                break
            if now - started >= args.timeout:
                print(f"  timeout of {args.timeout:.0f}s reached with {done}/{total} finished; stopping", flush=True)
                break
        wall_driver = time.monotonic() - started
        cpu_self = sum(os.times()[:2]) - cpu_self0
        busy = machine_busy_seconds() - busy0
        progress(teams, started)
        print(f"  load average at the end: {os.getloadavg()[0]:.1f} (other work on the machine shares its cores)")
        finished = True
    finally:
        for worker in workers:
            worker.stop()
        recorder.uninstall()
        if not finished:  # interrupted or failed: leave nothing running or queued behind
            sandbox.stop()
            if state_dir:
                shutil.rmtree(state_dir, ignore_errors=True)
            drop_queue(queue)
    calls = total_calls(sandbox, teams)
    sandbox.stop()
    if state_dir:
        shutil.rmtree(state_dir, ignore_errors=True)  # the snapshot grows to tens of MB
    drop_queue(queue)
    report(args, teams, workers, recorder, calls, cpu_self, busy, wall_driver, create_seconds, swept)
    return 0


def total_calls(sandbox, teams) -> Counter:
    calls: Counter = Counter()
    for team in teams:
        calls.update(sandbox_get(sandbox, f"/_sandbox/calls?account={team.sandbox_account_id}")["calls"])
    return calls


# --- reporting ------------------------------------------------------------------------------


def report(args, teams, workers, recorder, calls, cpu_self, busy, wall_driver, create_seconds, swept) -> None:
    from django.db.models import Max, Min

    from clusters.models import Cluster
    from clusters.steps.hyperpod import hyperpod_name
    from instantstart.operations.models import Operation, OperationStatus, Phase
    from sandbox.aws.world import DURATIONS

    ops = list(Operation.objects.filter(team__in=teams, kind="cluster.create").select_related("team"))
    order = create_phases()
    n = len(ops)
    succeeded = [op for op in ops if op.status == OperationStatus.SUCCEEDED]
    failed = [op for op in ops if op.status == OperationStatus.FAILED]
    span = Operation.objects.filter(team__in=teams, kind="cluster.create").aggregate(
        first=Min("created_at"), last=Max("finished_at")
    )
    wall = (span["last"] - span["first"]).total_seconds() if span["first"] and span["last"] else float("nan")

    print()
    print("=" * 100)
    print(
        f"OUTCOME  {len(succeeded)} succeeded, {len(failed)} failed, {n - len(succeeded) - len(failed)} unfinished "
        f"of {n} clusters ({len(teams)} teams, {args.engine} engine, {args.workers} worker(s) --pool {args.pool} "
        f"--concurrency {args.concurrency}, sandbox speedup {args.speedup:g})"
    )
    print(
        f"  wall time (first operation created -> last finished): {wall:.1f}s; creating the {n} clusters in "
        f"this process took {create_seconds:.1f}s; the driver waited {wall_driver:.1f}s"
    )
    durations = [(op.finished_at - op.created_at).total_seconds() for op in succeeded]
    print(f"  per cluster, created -> succeeded: {dist(durations)}")
    minimum = sum(DURATIONS[k] for k in ("nat_gateway", "eks_cluster_create", "addon_create", "hp_create"))
    print(
        f"  (the sandbox's own waits add up to {minimum / args.speedup:.1f}s per cluster at this speedup: NAT, EKS, "
        f"one add-on wave, HyperPod)"
    )
    errors = Counter((op.error_code, (op.error_message or "")[:140]) for op in failed)
    for (code, message), count in errors.most_common(10):
        print(f"  failed x{count}: [{code}] {message}")

    # --- AWS calls
    total = sum(calls.values())
    print()
    print(
        f"AWS CALLS PER CLUSTER  (the sandbox's per-account counters summed over {len(teams)} accounts, / {n}; "
        f"counted from the first create, so retries and polls are included)"
    )
    for action, count in sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))[:30]:
        print(f"  {count / n:8.2f}  {action}")
    rest = sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))[30:]
    if rest:
        print(
            f"  {sum(c for _, c in rest) / n:8.2f}  ({len(rest)} other actions: "
            + ", ".join(f"{action} {count / n:.2f}" for action, count in rest)
            + ")"
        )
    print(f"  {total / n:8.2f}  TOTAL ({total} calls, {len(calls)} distinct actions)")
    by_service: Counter = Counter()
    for action, count in calls.items():
        by_service[action.split(":")[0]] += count
    print("  by service: " + ", ".join(f"{s} {c / n:.1f}" for s, c in by_service.most_common()))
    reads = sum(c for a, c in calls.items() if re.match(r"\w+:(Describe|List|Get|Head)", a))
    print(f"  reads (Describe/List/Get/Head): {reads / n:.1f} per cluster; everything else: {(total - reads) / n:.1f}")

    # --- CPU
    print()
    cpus = [w.cpu_seconds for w in workers]
    startup = sum(w.startup_cpu_seconds for w in workers)
    tasks: Counter = Counter()
    inside = 0.0
    for worker in workers:
        counts, seconds = worker.task_stats()
        tasks.update(counts)
        inside += seconds
    ran = sum(tasks.values())
    print(
        f"CPU  workers: {sum(cpus):.1f} CPU-s in total ({', '.join(f'{c:.1f}' for c in cpus)}), "
        f"{sum(cpus) / max(n, 1):.2f} CPU-s per cluster "
        "(utime+stime of each worker's process group, children included, read from /proc before stopping)"
    )
    print(
        f"  of which {startup:.1f} CPU-s were spent starting the workers (Django + Celery imports, before the first "
        f"create): {(sum(cpus) - startup) / max(n, 1):.2f} CPU-s per cluster without it"
    )
    print(
        f"  this process (the in-process sandbox, moto and its kube half, plus the driver): {cpu_self:.1f} CPU-s; "
        f"the whole machine was busy {busy:.1f} CPU-s over {wall_driver:.1f}s on {os.cpu_count()} cores "
        f"({busy / wall_driver / (os.cpu_count() or 1) * 100:.0f}% of capacity; PostgreSQL and Redis included; "
        "from the first create to the last finish)"
    )
    print(
        f"  advance tasks run: {ran} ({ran / max(n, 1):.1f} per cluster; by outcome "
        f"{', '.join(f'{a} {c}' for a, c in tasks.most_common())}), {inside:.1f}s wall inside them; "
        f"leases taken per cluster (Operation.advance_count) "
        f"{sum(op.advance_count for op in ops) / max(n, 1):.1f}; the sweep re-enqueued {swept}"
    )

    # --- phases and lags
    phases = defaultdict(dict)
    for phase in Phase.objects.filter(operation__in=[op.pk for op in ops]).order_by("index"):
        phases[phase.operation_id][phase.name] = phase
    print()
    print("PHASE DURATIONS  (Phase.started_at -> finished_at, succeeded phases; attempts > 1 = transient retries)")
    for name in order:
        values = [
            (p.finished_at - p.started_at).total_seconds()
            for per_op in phases.values()
            if (p := per_op.get(name)) and p.started_at and p.finished_at and p.status == "succeeded"
        ]
        retried = sum(1 for per_op in phases.values() if (p := per_op.get(name)) and p.attempts > 1)
        print(f"  {name:13s} {dist(values)}  retried in {retried}")

    handoff: dict[str, list[float]] = defaultdict(list)
    for per_op in phases.values():
        for a, b in zip(order, order[1:], strict=False):
            pa, pb = per_op.get(a), per_op.get(b)
            if pa and pb and pa.finished_at and pb.started_at:
                handoff[f"{a} -> {b}"].append((pb.started_at - pa.finished_at).total_seconds())
    print()
    print(
        "HAND-OFF LAG  Phase[i].finished_at -> Phase[i+1].started_at: the engine's own scheduling delay between phases"
    )
    print(
        "  (the next phase runs in the same task while within OPERATION_HANDOFF_SECONDS; past it a Done re-enqueues"
        " with countdown 0)"
    )
    everything = handoffs = [v for values in handoff.values() for v in values]
    for key, values in handoff.items():
        print(f"  {key:26s} {dist(values)}")
    print(f"  {'all transitions':26s} {dist(everything)}")

    clusters = {str(c.pk): c for c in Cluster.objects.filter(team__in=teams).select_related("team")}
    ready_lags: dict[str, list[float]] = defaultdict(list)
    detect_lags: dict[str, list[float]] = defaultdict(list)
    missing: Counter = Counter()
    for op in ops:
        cluster = clusters.get(op.target_id)
        per_op = phases.get(op.pk, {})
        if cluster is None:
            continue
        account = op.team.sandbox_account_id
        nat = (per_op.get("network").state or {}).get("nat_gateway_id") if per_op.get("network") else None
        prefix, hp_name = cluster.resource_prefix, hyperpod_name(cluster)
        addons = recorder.matching("addon", account, lambda k, prefix=prefix: k[2].startswith(f"{prefix}/"))
        nodes = recorder.matching("node", account, lambda k, hp_name=hp_name: k[2] == hp_name)
        ready = {
            "network": recorder.when(("nat", account, nat)),
            "eks": recorder.when(("eks", account, prefix)),
            "dependencies": max(addons) if addons else None,
            "hyperpod": recorder.when(("hyperpod", account, hp_name)),
            "verify": max(nodes) if nodes else None,
        }
        for name, ready_at in ready.items():
            phase = per_op.get(name)
            if phase is None or phase.finished_at is None or phase.status != "succeeded":
                continue
            if ready_at is None:
                missing[name] += 1
                continue
            following = order.index(name) + 1
            nxt = per_op.get(order[following]) if following < len(order) else None
            next_start = nxt.started_at if nxt is not None else op.finished_at
            if next_start is None:
                continue
            # A resource already ready when its phase started (the nodes, usually) is waited for by no one.
            ready_at = max(ready_at, phase.started_at.timestamp())
            ready_lags[name].append(next_start.timestamp() - ready_at)
            detect_lags[name].append(phase.finished_at.timestamp() - ready_at)
    poll = float(engine_knobs(args)["OPERATION_POLL_SCALE"])
    print()
    print("READY -> NEXT PHASE  when the sandbox made the awaited resource ready -> when the next phase started")
    print(
        "  'ready' = the sandbox controller tick that applied the transition (recorded by wrapping the tick "
        "in-process; from then on a"
    )
    print(
        "  Describe sees it). For add-ons: the last of the cluster's add-ons; for verify: the last node Running, or "
        "the phase's start if later."
    )
    print(
        "  lag = what is left of the poll interval at that moment + queueing for a worker + the last poll's run "
        "+ the hand-off;"
    )
    print("  'detected' = the same up to the phase's finished_at (everything but the hand-off).")
    waits = poll_seconds()
    awaited = {
        "network": "NAT gateway available",
        "eks": "EKS control plane ACTIVE",
        "dependencies": "last add-on ACTIVE",
        "hyperpod": "HyperPod InService",
        "verify": "nodes Running",
    }
    everything = []
    for name in (n for n in awaited if n in order):
        following = order[order.index(name) + 1] if order.index(name) + 1 < len(order) else "(operation finished)"
        values = ready_lags.get(name, [])
        everything.extend(values)
        print(
            f"  {name + ' -> ' + following:32s} {dist(values)}   [{awaited[name]}; poll every "
            f"{waits[name] * poll:.3f}s]"
        )
        print(f"  {'  detected (-> finished_at)':32s} {dist(detect_lags.get(name, []))}")
    print(f"  {'all awaited resources':32s} {dist(everything)}")
    ready_everything = everything
    if missing:
        print(f"  (no sandbox ready time recorded for: {dict(missing)})")
    print(f"  recorder: {recorder.ticks} sandbox ticks wrapped, {recorder.seconds:.2f}s spent in its own bookkeeping")

    print()
    print("SHARED RESOURCES  distinct ids recorded by the clusters (each cluster should own one of each)")
    owned = {
        key: {c.network.get(key) for c in clusters.values() if c.network.get(key)}
        for key in ("vpc_id", "nat_gateway_id", "internet_gateway_id", "security_group_id")
    }
    owned["hyperpod_cluster_arn"] = {c.hyperpod_cluster_arn for c in clusters.values() if c.hyperpod_cluster_arn}
    with_network = sum(1 for c in clusters.values() if c.network)
    print(
        "  " + ", ".join(f"{key} {len(ids)}" for key, ids in owned.items()) + f" for {with_network} clusters "
        "with a network"
        + (
            ""
            if all(len(ids) == with_network for ids in owned.values())
            else "  <- fewer ids than clusters: some clusters adopted another cluster's resource"
        )
    )

    problems: Counter = Counter()
    for worker in workers:
        problems.update(worker.problems())
    print()
    print(f"WORKER LOG WARNINGS/ERRORS: {sum(problems.values())} lines" + ("" if problems else " (none)"))
    for line, count in problems.most_common(12):
        print(f"  x{count:<5d} {line}")
    print("worker logs: " + ", ".join(str(w.log_path) for w in workers))
    polls = [waits[name] * poll for name in awaited if name in order and not math.isnan(waits[name])]
    print(
        f"summary clusters={n} succeeded={len(succeeded)} wall_s={wall:.1f} "
        f"handoff_p50_s={percentile(handoffs, 50):.3f} handoff_p99_s={percentile(handoffs, 99):.3f} "
        f"ready_next_p50_s={percentile(ready_everything, 50):.3f} "
        f"ready_next_p99_s={percentile(ready_everything, 99):.3f} "
        f"shortest_poll_s={min(polls, default=float('nan')):.3f} "
        f"workers={args.workers} pool={args.pool} concurrency={args.concurrency} engine={args.engine}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=200, help="clusters to create")
    parser.add_argument("--teams", type=int, default=20, help="teams (each an emulated AWS account)")
    parser.add_argument("--workers", type=int, default=2, help="celery worker processes")
    parser.add_argument(
        "--engine",
        choices=["engine", "legacy"],
        default="engine",
        help="legacy: the engine before issue 16 (bench/legacy_engine.py), for comparison",
    )
    parser.add_argument("--pool", choices=["threads", "prefork", "solo"], default="threads", help="celery pool")
    parser.add_argument("--concurrency", type=int, default=8, help="threads/processes per worker")
    parser.add_argument("--speedup", type=float, default=200.0, help="sandbox speedup (real-world s / sandbox s)")
    parser.add_argument("--poll-scale", type=float, default=None, help="OPERATION_POLL_SCALE (default 1/speedup)")
    parser.add_argument("--lease", type=int, default=60, help="OPERATION_LEASE_SECONDS")
    parser.add_argument(
        "--sweep-interval",
        type=float,
        default=15.0,
        help="seconds between sweeps run by this process, as celery beat does (production 15; 0: none)",
    )
    parser.add_argument("--report-every", type=float, default=10.0, help="seconds between progress lines")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the operations")
    parser.add_argument(
        "--no-persist",
        dest="persist",
        action="store_false",
        help="run the sandbox without a state dir (no periodic snapshots)",
    )
    args = parser.parse_args(argv)
    if args.clusters < 1 or args.teams < 1 or args.workers < 1:
        parser.error("--clusters, --teams and --workers must be at least 1")
    ensure_database(BENCH_DB)
    os.environ.update(engine_knobs(args))  # this process runs the sweep: same knobs as the workers
    setup_django(BENCH_DB, "bench/clusters.py")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
