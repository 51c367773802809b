"""Fixtures for the sandbox tests: a Sandbox on port 0 with a tmp state dir and a high speedup,
and boto3 clients for emulated accounts (assume_role into InstantStartControlPlane, like the product).

These tests never import Django."""

from __future__ import annotations

import base64
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the editable install may predate sandbox/__init__.py
    sys.path.insert(0, str(ROOT))

from sandbox.server import Sandbox  # noqa: E402

SPEEDUP = 5000.0
REGION = "us-west-2"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def sandbox(state_dir: Path) -> Iterator[Sandbox]:
    sb = Sandbox(state_dir, port=0, speedup=SPEEDUP, region=REGION).start()
    try:
        yield sb
    finally:
        sb.stop()


_SESSION: Any = None


def _session() -> Any:
    """One boto3 session for all test accounts: service models are loaded once (clients are then cheap)."""
    global _SESSION
    if _SESSION is None:
        import boto3

        _SESSION = boto3.session.Session()
    return _SESSION


def new_account() -> str:
    return str(random.randint(10**11, 10**12 - 1))


class Account:
    """boto3 clients for one emulated account, reached the way the product does (sts.assume_role)."""

    def __init__(self, sb: Sandbox, account_id: str | None = None, retries: int = 0):
        from botocore.config import Config

        self.id = account_id or new_account()
        self.endpoint = sb.aws_endpoint
        self.config = Config(
            retries={"total_max_attempts": retries + 1, "mode": "standard"}, connect_timeout=5, read_timeout=30
        )
        base = _session().client(
            "sts",
            endpoint_url=self.endpoint,
            aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
            aws_secret_access_key="secret",
            region_name=REGION,
        )
        self.creds = base.assume_role(
            RoleArn=f"arn:aws:iam::{self.id}:role/InstantStartControlPlane", RoleSessionName="tests"
        )["Credentials"]
        self._clients: dict[str, Any] = {}

    def client(self, service: str, **kw: Any) -> Any:
        """A client with these credentials; extra kwargs (e.g. config=) give a fresh, uncached client."""
        if kw or service not in self._clients:
            args = {
                "endpoint_url": self.endpoint,
                "region_name": REGION,
                "config": self.config,
                "aws_access_key_id": self.creds["AccessKeyId"],
                "aws_secret_access_key": self.creds["SecretAccessKey"],
                "aws_session_token": self.creds["SessionToken"],
                **kw,
            }
            client = _session().client(service, **args)
            if kw:
                return client
            self._clients[service] = client
        return self._clients[service]

    def __getattr__(self, service: str) -> Any:
        if service.startswith("_"):
            raise AttributeError(service)
        return self.client(service.replace("_", "-"))


@pytest.fixture
def account(sandbox: Sandbox) -> Account:
    return Account(sandbox)


@pytest.fixture
def make_account(sandbox: Sandbox) -> Callable[..., Account]:
    return lambda **kw: Account(sandbox, **kw)


class slow_time:
    """Within the block, new transitions take (nearly) real time, so intermediate states can be asserted
    without racing the clock; on exit every pending transition is fast-forwarded."""

    def __init__(self, sb: Sandbox):
        self.sb = sb

    def __enter__(self) -> None:
        self.saved = self.sb.world.speedup
        self.sb.world.speedup = 1.0

    def __exit__(self, *exc: Any) -> None:
        self.sb.world.speedup = self.saved
        self.sb.advance()


def wait_for(fn: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll fn until it returns something truthy (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")


def network(acct: Account, zones: tuple[str, ...] = ("us-west-2a", "us-west-2b")) -> dict[str, Any]:
    ec2 = acct.ec2
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{16 * i}.0/20", AvailabilityZone=z)["Subnet"]["SubnetId"]
        for i, z in enumerate(zones)
    ]
    sg = ec2.create_security_group(GroupName="cluster", Description="cluster", VpcId=vpc)["GroupId"]
    return {"vpc": vpc, "subnets": subnets, "sg": sg}


def role(acct: Account, name: str, *policies: str) -> str:
    acct.iam.create_role(RoleName=name, AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[]}')
    for p in policies:
        acct.iam.attach_role_policy(RoleName=name, PolicyArn=f"arn:aws:iam::aws:policy/{p}")
    return f"arn:aws:iam::{acct.id}:role/{name}"


def autoscaling_role(acct: Account, name: str = "hyperpod-karpenter", allow: bool = True) -> str:
    """The ClusterRole managed autoscaling needs: trusted by HyperPod, allowed to add and delete nodes."""
    import json

    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "hyperpod.sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    acct.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    if allow:
        acct.iam.put_role_policy(
            RoleName=name,
            PolicyName="karpenter",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
                            "Resource": "arn:aws:sagemaker:*:*:cluster/*",
                        }
                    ],
                }
            ),
        )
    return f"arn:aws:iam::{acct.id}:role/{name}"


def eks_cluster(
    acct: Account, name: str = "ml", net: dict[str, Any] | None = None, wait: bool = True
) -> dict[str, Any]:
    net = net or network(acct)
    role_arn = role(acct, f"{name}-eks-role", "AmazonEKSClusterPolicy")
    acct.eks.create_cluster(
        name=name,
        version="1.32",
        roleArn=role_arn,
        resourcesVpcConfig={"subnetIds": net["subnets"], "securityGroupIds": [net["sg"]]},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
    )
    if wait:
        wait_for(lambda: acct.eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE")
    return {**acct.eks.describe_cluster(name=name)["cluster"], "net": net}


def hyperpod(
    acct: Account, name: str, eks: dict[str, Any], groups: list[dict[str, Any]] | None = None, **extra: Any
) -> str:
    exec_role = role(acct, f"{name}-exec", "AmazonSageMakerClusterInstanceRolePolicy")
    groups = groups or [{"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}]
    for g in groups:
        g.setdefault("ExecutionRole", exec_role)
        g.setdefault("LifeCycleConfig", {"SourceS3Uri": "s3://my-bucket/lifecycle/", "OnCreate": "on_create.sh"})
    return acct.sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=groups,
        Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
        VpcConfig={"SecurityGroupIds": [eks["net"]["sg"]], "Subnets": eks["net"]["subnets"][1:2]},
        **extra,
    )["ClusterArn"]


def eks_token(acct, cluster: str) -> str:
    """The token `aws eks get-token` makes: a presigned STS GetCallerIdentity URL."""
    from botocore.signers import RequestSigner

    sts = acct.client("sts")
    signer = RequestSigner(
        sts.meta.service_model.service_id, "us-west-2", "sts", "v4", sts._request_signer._credentials, sts.meta.events
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{acct.endpoint}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster},
            "context": {},
        },
        region_name="us-west-2",
        expires_in=60,
        operation_name="",
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def kube_client(acct: Account, eks: dict[str, Any]) -> Any:
    """The official kubernetes client for an EKS cluster of the sandbox, authenticated as the product is."""
    from kubernetes import client

    cfg = client.Configuration(host=eks["endpoint"])
    cfg.api_key = {"authorization": f"Bearer {eks_token(acct, eks['name'])}"}
    return client.ApiClient(cfg)


def control(sb: Sandbox, method: str, path: str, body: Any = None) -> Any:
    """A call to the sandbox's control API (/_sandbox/...), as a test harness or the product's tests make it."""
    import json
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"{sb.aws_endpoint}/_sandbox/{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def _aws_cli_path() -> str | None:
    import shutil

    beside = Path(sys.executable).parent / "aws"
    return str(beside) if beside.exists() else shutil.which("aws")


AWS_CLI = _aws_cli_path()


def aws_cli(sb: Sandbox, acct: Account, *args: str) -> Any:
    """Run the aws CLI against the sandbox as `acct` (JSON output, parsed); fails the test on an error."""
    import json
    import os
    import subprocess

    assert AWS_CLI, "aws CLI not installed"
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": acct.creds["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": acct.creds["SecretAccessKey"],
        "AWS_SESSION_TOKEN": acct.creds["SessionToken"],
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    out = subprocess.run(
        [AWS_CLI, "--endpoint-url", sb.aws_endpoint, *args, "--output", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else {}


def nodepool_manifest(name: str, nodeclass: str, **spec: Any) -> dict[str, Any]:
    """A NodePool of HyperPod's managed Karpenter for a HyperpodNodeClass (empty nodes go after 30 s)."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.sagemaker.amazonaws.com",
                        "kind": "HyperpodNodeClass",
                        "name": nodeclass,
                    },
                    "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Exists"}],
                }
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
            **spec,
        },
    }
