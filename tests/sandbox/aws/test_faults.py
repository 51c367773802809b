"""Injected faults surface exactly as the real services answer (codes botocore understands)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

from tests.sandbox.conftest import Account, eks_cluster
from tests.sandbox.conftest import control as _control


@pytest.mark.parametrize(
    ("service", "action", "call", "code"),
    [
        ("eks", "ListClusters", lambda a: a.eks.list_clusters(), "ThrottlingException"),
        ("sagemaker", "ListClusters", lambda a: a.sagemaker.list_clusters(), "ThrottlingException"),
        ("ec2", "DescribeVpcs", lambda a: a.ec2.describe_vpcs(), "RequestLimitExceeded"),
        ("iam", "ListRoles", lambda a: a.iam.list_roles(), "Throttling"),
        (
            "service-quotas",
            "ListServiceQuotas",
            lambda a: a.service_quotas.list_service_quotas(ServiceCode="ec2"),
            "ThrottlingException",
        ),
    ],
)
def test_throttle_shapes(sandbox, account, service, action, call, code):
    sandbox.faults.add("throttle", service=service, action=action, count=1)
    with pytest.raises(ClientError) as e:
        call(account)
    assert e.value.response["Error"]["Code"] == code
    call(account)  # count exhausted


def test_throttle_is_retried_by_botocore(sandbox, make_account, monkeypatch):
    from botocore.retries.standard import ExponentialBackoff

    # botocore's own retry handler decides to retry; only its jittered sleep is shortened for speed
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.01)
    acct = make_account(retries=4)
    sandbox.faults.add("throttle", service="eks", action="ListClusters", count=3, account=acct.id)
    assert acct.eks.list_clusters()["ResponseMetadata"]["RetryAttempts"] == 3
    assert sandbox.world.get_calls(acct.id)["eks:ListClusters"] == 4


def test_server_error_shapes(sandbox, account):
    sandbox.faults.add("server_error", service="sagemaker", action="ListClusters", count=1)
    with pytest.raises(ClientError) as e:
        account.sagemaker.list_clusters()
    assert e.value.response["Error"]["Code"] == "InternalFailure"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    sandbox.faults.add("server_error", service="eks", action="ListClusters", count=1, status=503)
    with pytest.raises(ClientError) as e:
        account.eks.list_clusters()
    assert e.value.response["Error"]["Code"] == "ServiceUnavailableException"


def test_faults_over_http(sandbox, account):
    added = _control(
        sandbox, "POST", "faults", [{"kind": "throttle", "service": "eks", "action": "ListClusters", "count": 2}]
    )["faults"]
    assert added[0]["kind"] == "throttle" and added[0]["id"]
    assert _control(sandbox, "GET", "faults")["faults"][0]["count"] == 2
    with pytest.raises(ClientError):
        account.eks.list_clusters()
    assert _control(sandbox, "GET", "faults")["faults"][0]["count"] == 1
    assert _control(sandbox, "DELETE", "faults")["faults"] == []
    account.eks.list_clusters()
    with pytest.raises(urllib.error.HTTPError) as e:
        _control(sandbox, "POST", "faults", {"kind": "meteor"})
    assert e.value.code == 400


def test_call_counts_over_http(sandbox, account):
    eks_cluster(account, "cc")
    calls = _control(sandbox, "GET", f"calls?account={account.id}")["calls"]
    assert calls["eks:CreateCluster"] == 1
    assert calls["ec2:CreateVpc"] == 1
    assert "sagemaker:UpdateCluster" not in calls
    _control(sandbox, "DELETE", "calls")
    assert _control(sandbox, "GET", f"calls?account={account.id}")["calls"] == {}


def test_env_faults_applied_at_start(monkeypatch, tmp_path):
    from sandbox.server import Sandbox

    monkeypatch.setenv(
        "SANDBOX_FAULTS", json.dumps([{"kind": "throttle", "service": "eks", "action": "ListClusters", "count": 1}])
    )
    sb = Sandbox(tmp_path, speedup=2000).start()
    try:
        with pytest.raises(ClientError) as e:
            Account(sb).eks.list_clusters()
        assert e.value.response["Error"]["Code"] == "ThrottlingException"
    finally:
        sb.stop()


def test_pod_crash_is_forwarded_to_kube(sandbox, account, monkeypatch):
    seen = []
    monkeypatch.setattr(sandbox.kube, "inject_pod_crash", lambda *a, **k: seen.append(a) or [])
    _control(
        sandbox,
        "POST",
        "faults",
        {
            "kind": "pod_crash",
            "account": account.id,
            "cluster": "ml",
            "namespace": "team",
            "name_prefix": "train-",
            "count": 2,
        },
    )
    assert seen == [(f"{account.id}/us-west-2/ml", "team", "train-", 2)]


def test_one_sandbox_per_process(sandbox, tmp_path):
    from sandbox.server import Sandbox

    with pytest.raises(RuntimeError):
        Sandbox(tmp_path).start()


def test_job_hang_is_forwarded_to_kube_and_validated(sandbox, account, monkeypatch):
    seen = []
    monkeypatch.setattr(sandbox.kube, "inject_job_hang", lambda *a, **k: seen.append(a) or [])
    fault = {"kind": "job_hang", "account": account.id, "cluster": "ml", "namespace": "team", "job": "llama"}
    _control(sandbox, "POST", "faults", {**fault, "count": 3, "after_steps": 0})
    assert seen == [(f"{account.id}/us-west-2/ml", "team", "llama", 3, 0)]
    with pytest.raises(urllib.error.HTTPError) as e:
        _control(sandbox, "POST", "faults", {k: v for k, v in fault.items() if k != "job"})
    assert e.value.code == 400 and json.loads(e.value.read())["error"] == "fault job_hang needs ['job']"
