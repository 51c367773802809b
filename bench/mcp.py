"""Benchmark of the MCP face against REST, and of waiting with wait_for_operation.

Starts the ASGI application (``uvicorn instantstart.asgi:application``, as deployed) in a
subprocess on its own database, then prints:

  per call        the same read — get_operation over MCP (the SDK's streamable-HTTP client, one
                  session) and GET /api/v1/operations/{id}/ over REST (one keep-alive client) —
                  --calls times each, interleaved: median, p99 and the MCP/REST ratio (goal ≤ 1.2×)
  waiting         --waiters concurrent wait_for_operation calls (timeout --wait-seconds) on running
                  operations: the server process's threads and its open database connections
                  (pg_stat_activity), before and at the peak while they wait

It measures; it asserts nothing. Needs PostgreSQL and Redis on 127.0.0.1 (the test mode); uses the
database ``instantstart_bench_mcp`` (created and migrated if missing):

  INSTANTSTART_MODE=test DJANGO_SETTINGS_MODULE=instantstart.test_settings \\
      .venv/bin/python bench/mcp.py [--calls 300] [--waiters 100] [--wait-seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# This file is named like the MCP SDK's package: its own directory must not shadow ``mcp``.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import PG_HOST, PG_PORT, PG_USER, database_url, ensure_database, percentile, setup_django  # noqa: E402

DB_NAME = "instantstart_bench_mcp"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fixtures(waiters: int) -> tuple[str, str, list[str]]:
    """A bench team with an admin token, one operation to read and ``waiters`` running ones."""
    from instantstart.operations.models import Operation, OperationStatus
    from instantstart.tenancy.models import Team
    from instantstart.tenancy.roles import Role
    from tests.factories import OperationFactory, TeamFactory, member, token

    Team.objects.filter(slug="bench-mcp").delete()
    team = TeamFactory(slug="bench-mcp", name="Bench MCP")
    user = member(team, f"bench-mcp-{int(time.time())}", Role.ADMIN)
    raw = token(team, user, Role.ADMIN)
    read = OperationFactory(team=team, requested_by=user, status=OperationStatus.SUCCEEDED)
    running = [OperationFactory(team=team, requested_by=user, status=OperationStatus.RUNNING) for _ in range(waiters)]
    assert Operation.objects.filter(team=team).count() == waiters + 1
    return raw, str(read.pk), [str(op.pk) for op in running]


def server_threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def open_connections() -> int:
    import psycopg

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [DB_NAME]
        ).fetchone()
    return int(row[0])


def start_server(port: int) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url(DB_NAME), "MCP_WAIT_POLL_SECONDS": "0.5"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "instantstart.asgi:application",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    sys.exit("uvicorn did not start")


async def per_call(url: str, raw: str, operation: str, calls: int) -> tuple[list[float], list[float]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {raw}"}
    mcp_times, rest_times = [], []
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        httpx2.AsyncClient(headers=headers, timeout=30) as rest,
    ):
        async with Client(streamable_http_client(f"{url}/mcp/", http_client=http)) as client:
            for _ in range(10):  # warm both paths
                await client.call_tool("get_operation", {"id": operation})
                await rest.get(f"{url}/api/v1/operations/{operation}/")
            for _ in range(calls):
                start = time.perf_counter()
                result = await client.call_tool("get_operation", {"id": operation})
                mcp_times.append(time.perf_counter() - start)
                assert not result.is_error
                start = time.perf_counter()
                response = await rest.get(f"{url}/api/v1/operations/{operation}/")
                rest_times.append(time.perf_counter() - start)
                assert response.status_code == 200
    return mcp_times, rest_times


async def waiting(url: str, raw: str, operations: list[str], seconds: int, pid: int) -> dict:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    samples: list[tuple[int, int]] = []
    base = (server_threads(pid), open_connections())

    async def sample():
        while True:
            samples.append((server_threads(pid), await asyncio.to_thread(open_connections)))
            await asyncio.sleep(0.25)

    async def wait_one(http, operation):
        async with Client(streamable_http_client(f"{url}/mcp/", http_client=http)) as client:
            return await client.call_tool("wait_for_operation", {"id": operation, "timeout_seconds": seconds})

    limits = httpx2.Limits(max_connections=len(operations) + 10)
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {raw}"}, timeout=seconds + 30, limits=limits
    ) as http:
        sampler = asyncio.ensure_future(sample())
        start = time.perf_counter()
        results = await asyncio.gather(*(wait_one(http, op) for op in operations))
        wall = time.perf_counter() - start
        sampler.cancel()
    timed_out = sum(1 for result in results if result.structured_content.get("timed_out"))
    return {
        "base": base,
        "peak_threads": max(s[0] for s in samples),
        "peak_connections": max(s[1] for s in samples),
        "timed_out": timed_out,
        "wall": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--waiters", type=int, default=100)
    parser.add_argument("--wait-seconds", type=int, default=5)
    args = parser.parse_args()

    ensure_database(DB_NAME)
    setup_django(DB_NAME, "bench/mcp.py")
    raw, read, running = fixtures(args.waiters)
    port = free_port()
    server = start_server(port)
    url = f"http://127.0.0.1:{port}"
    try:
        mcp_times, rest_times = asyncio.run(per_call(url, raw, read, args.calls))
        wait = asyncio.run(waiting(url, raw, running, args.wait_seconds, server.pid))
    finally:
        server.terminate()
        server.wait(10)

    m50, r50 = statistics.median(mcp_times), statistics.median(rest_times)
    m99, r99 = percentile(mcp_times, 99), percentile(rest_times, 99)
    print(f"get_operation, {args.calls} calls each, one client each, interleaved (load {os.getloadavg()[0]:.2f})")
    print(f"  REST  GET /api/v1/operations/{{id}}/   median {r50 * 1000:7.2f} ms   p99 {r99 * 1000:7.2f} ms")
    print(f"  MCP   tools/call get_operation       median {m50 * 1000:7.2f} ms   p99 {m99 * 1000:7.2f} ms")
    print(f"  ratio MCP/REST                        median {m50 / r50:7.2f}x     p99 {m99 / r99:7.2f}x   (goal ≤ 1.2x)")
    base_threads, base_connections = wait["base"]
    print(f"{args.waiters} concurrent wait_for_operation (timeout {args.wait_seconds}s), server process:")
    print(f"  threads          before {base_threads:4d}   peak while waiting {wait['peak_threads']:4d}")
    print(f"  DB connections   before {base_connections:4d}   peak while waiting {wait['peak_connections']:4d}")
    print(f"  {wait['timed_out']}/{args.waiters} timed out as expected; wall {wait['wall']:.2f}s")


if __name__ == "__main__":
    main()
