"""Shared helpers for cluster tests: requests, clusters in a given state, waiting for operations,
reading the sandbox, reading portal pages."""

from __future__ import annotations

import json
import re
import urllib.request

from clusters.models import Cluster, ClusterStatus
from clusters.services import create_cluster
from instantstart.operations.models import Operation, OperationStatus
from instantstart.tenancy.services import system_access
from tests.factories import ClusterFactory, InstanceGroupFactory
from tests.support import wait_until

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


def recorded_cluster(team, user, name: str = "train", *, settled: bool = False) -> Cluster:
    """A cluster recorded by the service with its pending `cluster.create` (as REST's create would after
    validation); ``settled``: active with nothing running, its EKS and HyperPod names recorded but
    nothing behind them in the cloud."""
    data = {
        "name": name,
        "region": "us-west-2",
        "availability_zone": "us-west-2a",
        "kubernetes_version": "1.31",
        "storage": "s3",
        "instance_groups": [{**GROUP, "capacity_type": "on_demand", "efa_only": False}],
    }
    cluster, operation, _ = create_cluster(access=system_access(team, user), data=data)
    if settled:
        Operation.objects.filter(pk=operation.pk).update(status=OperationStatus.SUCCEEDED)
        Cluster.objects.filter(pk=cluster.pk).update(
            status=ClusterStatus.ACTIVE, eks_cluster_name=f"{name}-gone", hyperpod_cluster_name=f"{name}-hp-gone"
        )
        cluster.refresh_from_db()
    return cluster


def cluster_with_group(team, name: str = "train", status: str = ClusterStatus.ACTIVE, **fields) -> Cluster:
    """A cluster row with one group, workers (2 × ml.g5.xlarge), written directly: no operation, no cloud."""
    cluster = ClusterFactory(team=team, name=name, status=status, **fields)
    InstanceGroupFactory(cluster=cluster)
    return cluster


# --- portal pages -------------------------------------------------------------------------------

HTMX = {"HTTP_HX_REQUEST": "true"}


def options(html: str, select_name: str) -> list[str]:
    """The option values of one select in a page or partial."""
    match = re.search(rf'<select[^>]*name="{select_name}"[^>]*>(.*?)</select>', html, re.S)
    assert match, f"no select {select_name}"
    return [value for value in re.findall(r'<option value="([^"]*)"', match.group(1)) if value]


def efa_checkbox(html: str) -> str:
    match = re.search(r'<input type="checkbox" id="id_efa_only"[^>]*>', html)
    assert match
    return match.group(0)


def field_block(html: str, name: str) -> str:
    """The text after the input ``name`` inside its field block marked with an error."""
    block = re.search(
        rf'<(?:div|fieldset) class="field has-error">(?:(?!class="field).)*?name="{name}"(.*?)</div>', html, re.S
    )
    assert block, f"no error block for {name}"
    return block.group(1)


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
