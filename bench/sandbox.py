"""Describe-heavy polling load against the sandbox (what many product pollers do): measures, never asserts.

    python bench/sandbox.py [--threads 8] [--seconds 10] [--endpoint http://127.0.0.1:PORT]

Without --endpoint an in-process Sandbox is started (tmp state dir). Prints p50/p99 latency per
operation and overall requests/s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


_SESSION: Any = None


def _clients(endpoint: str, account: str) -> dict[str, Any]:
    import boto3
    from botocore.config import Config

    global _SESSION
    if _SESSION is None:  # one session: service models load once, clients are cheap afterwards
        _SESSION = boto3.session.Session()
    session = _SESSION
    sts = session.client(
        "sts", endpoint_url=endpoint, region_name="us-west-2", aws_access_key_id="AKIABENCH", aws_secret_access_key="x"
    )
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/InstantStartControlPlane", RoleSessionName="bench")[
        "Credentials"
    ]
    cfg = Config(retries={"total_max_attempts": 1}, max_pool_connections=64)
    kw = {
        "endpoint_url": endpoint,
        "region_name": "us-west-2",
        "config": cfg,
        "aws_access_key_id": creds["AccessKeyId"],
        "aws_secret_access_key": creds["SecretAccessKey"],
        "aws_session_token": creds["SessionToken"],
    }
    return {s: session.client(s, **kw) for s in ("eks", "sagemaker", "ec2", "iam")}


def _setup(c: dict[str, Any], account: str) -> None:
    ec2, iam, eks, sm = c["ec2"], c["iam"], c["eks"], c["sagemaker"]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20", AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName="bench", Description="bench", VpcId=vpc)["GroupId"]
    iam.create_role(RoleName="bench", AssumeRolePolicyDocument="{}")
    role = f"arn:aws:iam::{account}:role/bench"
    eks.create_cluster(name="bench", roleArn=role, resourcesVpcConfig={"subnetIds": [subnet]})
    while eks.describe_cluster(name="bench")["cluster"]["status"] != "ACTIVE":
        time.sleep(0.05)
    eks.create_addon(clusterName="bench", addonName="vpc-cni")
    arn = eks.describe_cluster(name="bench")["cluster"]["arn"]
    sm.create_cluster(
        ClusterName="bench",
        Orchestrator={"Eks": {"ClusterArn": arn}},
        VpcConfig={"SecurityGroupIds": [sg], "Subnets": [subnet]},
        InstanceGroups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.p5.48xlarge",
                "InstanceCount": 16,
                "ExecutionRole": role,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/lc", "OnCreate": "x.sh"},
            }
        ],
    )
    while sm.describe_cluster(ClusterName="bench")["ClusterStatus"] != "InService":
        time.sleep(0.05)


def _startup_seconds() -> float:
    """Time from launching `python -m sandbox` to its first stdout line (its endpoint JSON)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as state:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox", "--port", "0", "--state", state],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=root,
            text=True,
        )
        try:
            proc.stdout.readline()
            return time.monotonic() - started
        finally:
            proc.terminate()
            proc.wait(15)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--endpoint", default=None)
    args = ap.parse_args()
    print(f"python -m sandbox: first line after {_startup_seconds():.2f}s (the contract: under 2 s)")
    sb = None
    endpoint = args.endpoint
    if endpoint is None:
        from sandbox.server import Sandbox

        sb = Sandbox(Path(tempfile.mkdtemp(prefix="sandbox-bench-")), speedup=2000).start()
        endpoint = sb.aws_endpoint
    account = "210987654321"
    try:
        _setup(_clients(endpoint, account), account)
        ops = {
            "eks:DescribeCluster": lambda c: c["eks"].describe_cluster(name="bench"),
            "eks:DescribeAddon": lambda c: c["eks"].describe_addon(clusterName="bench", addonName="vpc-cni"),
            "sagemaker:DescribeCluster": lambda c: c["sagemaker"].describe_cluster(ClusterName="bench"),
            "sagemaker:ListClusterNodes": lambda c: c["sagemaker"].list_cluster_nodes(ClusterName="bench"),
        }
        lat: dict[str, list[float]] = {k: [] for k in ops}
        errors = [0]
        lock = threading.Lock()
        clients = [_clients(endpoint, account) for _ in range(args.threads)]  # built before the clock starts
        stop = time.monotonic() + args.seconds

        def worker(i: int) -> None:
            c = clients[i]
            names = list(ops)
            n = i
            while time.monotonic() < stop:
                name = names[n % len(names)]
                n += 1
                t0 = time.perf_counter()
                try:
                    ops[name](c)
                except Exception:
                    with lock:
                        errors[0] += 1
                    continue
                dt = time.perf_counter() - t0
                with lock:
                    lat[name].append(dt)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
        t0 = time.monotonic()
        stop = t0 + args.seconds
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        total = sum(len(v) for v in lat.values())
        print(f"{args.threads} threads, {wall:.1f}s, {total} requests, {total / wall:.0f} req/s, {errors[0]} errors")
        print(f"{'operation':30} {'n':>7} {'p50 ms':>8} {'p99 ms':>8}")
        everything: list[float] = []
        for name, v in lat.items():
            everything += v
            if v:
                q = statistics.quantiles(v, n=100)
                print(f"{name:30} {len(v):7d} {statistics.median(v) * 1000:8.1f} {q[98] * 1000:8.1f}")
        if everything:
            q = statistics.quantiles(everything, n=100)
            print(f"{'all':30} {len(everything):7d} {statistics.median(everything) * 1000:8.1f} {q[98] * 1000:8.1f}")
    finally:
        if sb is not None:
            sb.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
