"""Invoke latency of a simulated vLLM server: called directly on its loopback port, and through the
Kubernetes API server proxy (what the product's `invoke` will use). Measures, never asserts.

    python bench/inference.py [--requests 200] [--concurrency 8] [--max-tokens 16]

Starts an in-process KubeWorld with one vLLM Deployment and Service, then sends the same chat
completion both ways and prints p50/p99 and requests/s for each, and the proxy's overhead as a
ratio of p50s.

With `--product` (needs PostgreSQL and Redis, the test mode; uses its own database
`instantstart_bench_inference`) it also sends it through the product: REST `POST
/api/v1/clusters/{id}/endpoints/bench/invoke/` with a team token, in-process (Django's test client),
so authentication, team scoping, the serializer, the endpoint lookup and `inference.readers.invoke`
all run. Only the cluster's Kubernetes client is handed in (the bench world has no EKS to describe),
and the ratio printed is the product's p50 over the direct p50.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KEY = "111122223333/us-west-2/bench"
TOKEN = "k8s-aws-v1." + base64.urlsafe_b64encode(b"https://sts.us-west-2.amazonaws.com/").decode().rstrip("=")


def _world() -> tuple[object, str, threading.Event, object]:
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log per request

    from sandbox.kube import KubeWorld

    world = KubeWorld(None, speedup=200)
    world.ensure_cluster(KEY, "1.31")
    world.sync_nodes(
        KEY,
        [
            {
                "name": "hyperpod-i-0000bench",
                "instance_id": "i-0000bench",
                "instance_group": "gpu",
                "instance_type": "ml.g5.12xlarge",
                "zone": "us-west-2a",
                "capacity_type": "on-demand",
                "labels": {},
                "gpus": 4,
                "efa": 0,
                "cpu": 48,
                "memory_gib": 192,
                "ready": True,
            }
        ],
    )
    srv = make_server("127.0.0.1", 0, world.wsgi, threaded=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.02):
            world.tick()

    threading.Thread(target=tick, daemon=True).start()
    return world, f"http://127.0.0.1:{srv.server_port}/k8s/{KEY}", stop, srv


def _request(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _deploy(base: str) -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {
                    "containers": [
                        {
                            "name": "vllm",
                            "image": "vllm/vllm-openai:v0.10.2",
                            "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                            "ports": [{"containerPort": 8000, "name": "http"}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ]
                },
            },
        },
    }
    assert _request(f"{base}/apis/apps/v1/namespaces/default/deployments", "POST", dep)[0] == 201
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "bench"},
        "spec": {"selector": {"app": "bench"}, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}]},
    }
    assert _request(f"{base}/api/v1/namespaces/default/services", "POST", svc)[0] == 201


def _run(url: str, n: int, concurrency: int, body: dict) -> tuple[list[float], float]:
    lat: list[float] = []
    lock = threading.Lock()

    def one(_: int) -> None:
        t = time.perf_counter()
        code, _out = _request(url, "POST", body)
        dt = time.perf_counter() - t
        if code == 200:
            with lock:
                lat.append(dt)

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(n)))
    return lat, time.perf_counter() - start


def _report(name: str, lat: list[float], wall: float, n: int) -> float:
    lat.sort()
    p50 = statistics.median(lat) if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
    print(
        f"{name:<28} ok {len(lat):>4}/{n}  p50 {p50 * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  "
        f"{len(lat) / wall:7.1f} req/s"
    )
    return p50


_PRODUCT: dict = {}


def _product(base: str) -> str:
    """Rows for a team, a token, a cluster and a ready endpoint named bench (the world's Service)."""
    from bench.common import ensure_database, setup_django

    ensure_database("instantstart_bench_inference")
    setup_django("instantstart_bench_inference", "bench/inference.py")
    from django.contrib.auth import get_user_model
    from kubernetes import client as k8s

    import inference.readers.invoke as invoke_reader
    from clusters.models import Cluster, ClusterStatus
    from inference.models import Endpoint, EndpointStatus
    from instantstart.tenancy.models import Membership, Team
    from instantstart.tenancy.roles import Role
    from instantstart.tenancy.services import create_token, system_access

    Team.objects.filter(slug="bench-inference").delete()
    team = Team.objects.create(slug="bench-inference", name="Bench inference")
    user, _ = get_user_model().objects.get_or_create(username="bench-inference")
    Membership.objects.create(team=team, user=user, role=Role.MEMBER)
    _, raw = create_token(access=system_access(team, user), user=user, name="bench", role=Role.MEMBER)
    cluster = Cluster.objects.create(
        team=team,
        name="bench",
        region="us-west-2",
        availability_zone="us-west-2a",
        status=ClusterStatus.ACTIVE,
        eks_cluster_name="bench",
    )
    Endpoint.objects.create(
        cluster=cluster,
        name="bench",
        mode="self_managed",
        engine="vllm",
        model={"source": "huggingface", "id": "Qwen/Qwen3-0.6B"},
        instance_group="gpu",
        namespace="default",
        service="internal",
        status=EndpointStatus.READY,
    )
    configuration = k8s.Configuration(host=base)
    configuration.api_key = {"authorization": f"Bearer {TOKEN}"}
    api = k8s.ApiClient(configuration)
    invoke_reader.kube_of = lambda cluster: api  # the one piece handed in: no EKS to describe here
    _PRODUCT["token"] = raw
    return f"/api/v1/clusters/{cluster.pk}/endpoints/bench/invoke/"


def _run_product(path: str, n: int, concurrency: int, body: dict) -> tuple[list[float], float]:
    from django.db import connection
    from django.test import Client

    lat: list[float] = []
    lock = threading.Lock()
    local = threading.local()
    payload = {k: v for k, v in body.items() if k != "model"}

    def one(_: int) -> None:
        if not hasattr(local, "client"):
            local.client = Client(HTTP_AUTHORIZATION=f"Bearer {_PRODUCT['token']}")
        t = time.perf_counter()
        response = local.client.post(path, json.dumps(payload), content_type="application/json")
        dt = time.perf_counter() - t
        if response.status_code == 200:
            with lock:
                lat.append(dt)

    def run_all() -> None:
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, range(n)))

    start = time.perf_counter()
    run_all()
    wall = time.perf_counter() - start
    connection.close()
    return lat, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--product", action="store_true", help="also through the product's REST invoke")
    args = ap.parse_args()
    world, base, stop, srv = _world()
    try:
        _deploy(base)
        svc = f"{base}/api/v1/namespaces/default/services/bench:8000/proxy"
        deadline = time.monotonic() + 30
        while _request(f"{svc}/v1/models")[0] != 200:
            if time.monotonic() > deadline:
                print("the simulated server did not come up", file=sys.stderr)
                return 1
            time.sleep(0.05)
        port = next(iter(next(iter(world.serving.procs.values())).ports.values()))
        body = {
            "model": "Qwen/Qwen3-0.6B",
            "messages": [{"role": "user", "content": "benchmark me"}],
            "max_tokens": args.max_tokens,
        }
        print(f"{args.requests} chat completions of {args.max_tokens} tokens, {args.concurrency} at a time")
        direct = _report(
            "direct (127.0.0.1 listener)",
            *_run(f"http://127.0.0.1:{port}/v1/chat/completions", args.requests, args.concurrency, body),
            args.requests,
        )
        proxied = _report(
            "API server service proxy",
            *_run(f"{svc}/v1/chat/completions", args.requests, args.concurrency, body),
            args.requests,
        )
        print(f"proxy overhead: {proxied / direct:.2f}x the direct p50")
        if args.product:
            invoke_url = _product(base)
            product = _report(
                "product REST invoke",
                *_run_product(invoke_url, args.requests, args.concurrency, body),
                args.requests,
            )
            print(f"product overhead: {product / direct:.2f}x the direct p50 ({product / proxied:.2f}x the proxy's)")
    finally:
        stop.set()
        world.close()
        srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
