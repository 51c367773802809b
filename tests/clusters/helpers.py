"""Shared helpers for cluster tests: requests, waiting for operations, reading the sandbox."""

from __future__ import annotations

import json
import urllib.request

from instantstart.operations.models import Operation
from tests.conftest import wait_until

GROUP = {"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 2}

# Every create action a one-zone cluster with one instance group and S3 storage issues: each
# resource once (four base subnets and one /20 compute subnet; two roles; the lifecycle and the
# shared bucket; five add-ons).
EXPECTED_CREATES = {
    "ec2:AllocateAddress": 1,
    "ec2:CreateInternetGateway": 1,
    "ec2:CreateNatGateway": 1,
    "ec2:CreateRoute": 2,
    "ec2:CreateRouteTable": 2,
    "ec2:CreateSecurityGroup": 1,
    "ec2:CreateSubnet": 5,
    "ec2:CreateVpc": 1,
    "ec2:CreateVpcEndpoint": 1,
    "eks:CreateAddon": 5,
    "eks:CreateCluster": 1,
    "iam:CreateRole": 2,
    "s3:CreateBucket": 2,
    "sagemaker:CreateCluster": 1,
}


def creates_in(calls: dict[str, int]) -> dict[str, int]:
    return {action: n for action, n in calls.items() if ":Create" in action or ":Allocate" in action}


def cluster_body(name: str = "train", zone: str = "us-west-2a", **extra) -> dict:
    return {"name": name, "region": "us-west-2", "availability_zone": zone, "instance_groups": [GROUP], **extra}


def wait_for_operation(operation_id: str, statuses=("succeeded",), timeout: float = 120) -> Operation:
    def done():
        op = Operation.objects.get(pk=operation_id)
        return op if op.is_terminal else None

    op = wait_until(done, timeout=timeout, interval=0.2, message=f"operation {operation_id} to end")
    assert op.status in statuses, (
        op.status,
        op.error_code,
        op.error_message,
        [(p.name, p.status, p.message) for p in op.phases.all()],
    )
    return op


def sandbox_calls(sandbox, account: str) -> dict[str, int]:
    url = f"{sandbox.aws_endpoint}/_sandbox/calls?account={account}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())["calls"]


def add_fault(sandbox, **spec) -> None:
    request = urllib.request.Request(
        f"{sandbox.aws_endpoint}/_sandbox/faults",
        data=json.dumps(spec).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=5).read()
