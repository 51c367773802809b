"""Accounts are isolated; state survives a restart with the same state dir."""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from sandbox.server import Sandbox
from tests.sandbox.conftest import Account, eks_cluster, hyperpod, wait_for


def test_two_accounts_cannot_see_each_other(make_account):
    a, b = make_account(), make_account()
    assert a.sts.get_caller_identity()["Account"] == a.id
    assert b.sts.get_caller_identity()["Account"] == b.id
    eks_cluster(a, "only-a")
    a.s3.create_bucket(Bucket="bucket-of-a", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    assert b.eks.list_clusters()["clusters"] == []
    with pytest.raises(ClientError):
        b.eks.describe_cluster(name="only-a")
    assert [v["VpcId"] for v in b.ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] == []
    assert "bucket-of-a" not in [x["Name"] for x in b.s3.list_buckets()["Buckets"]]
    assert b.sagemaker.list_clusters()["ClusterSummaries"] == []


def test_state_survives_restart(tmp_path):
    state = tmp_path / "state"
    sb = Sandbox(state, speedup=2000).start()
    try:
        acct = Account(sb)
        eks = eks_cluster(acct, "keep")
        hyperpod(acct, "hp", eks)
        wait_for(lambda: acct.sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService")
        acct.eks.create_addon(clusterName="keep", addonName="coredns")
        acct.s3.create_bucket(Bucket="kept-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        acct.s3.put_object(Bucket="kept-bucket", Key="a/b.txt", Body=b"hello")
        acct.logs.create_log_group(logGroupName="/instantstart/kept")
        acct.logs.create_log_stream(logGroupName="/instantstart/kept", logStreamName="s")
        acct.logs.put_log_events(
            logGroupName="/instantstart/kept",
            logStreamName="s",
            logEvents=[{"timestamp": int(time.time() * 1000), "message": "kept line"}],
        )
        vpc = eks["net"]["vpc"]
        endpoint, port = eks["endpoint"], sb.port
        nodes = {n["InstanceId"] for n in acct.sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]}
    finally:
        sb.stop()
    assert (state / "aws-state.pickle").exists()

    sb2 = Sandbox(state, speedup=2000).start()
    try:
        again = Account(sb2, account_id=acct.id)
        assert [v["VpcId"] for v in again.ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"]] == [vpc]
        c = again.eks.describe_cluster(name="keep")["cluster"]
        # the same addresses as before the restart: recorded endpoints keep working
        assert sb2.port == port and c["status"] == "ACTIVE" and c["endpoint"] == endpoint
        wait_for(
            lambda: again.eks.describe_addon(clusterName="keep", addonName="coredns")["addon"]["status"] == "ACTIVE"
        )
        d = again.sagemaker.describe_cluster(ClusterName="hp")
        assert d["ClusterStatus"] == "InService" and d["Orchestrator"]["Eks"]["ClusterArn"] == eks["arn"]
        got = {n["InstanceId"] for n in again.sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]}
        assert got == nodes
        assert again.s3.get_object(Bucket="kept-bucket", Key="a/b.txt")["Body"].read() == b"hello"
        ev = again.logs.get_log_events(logGroupName="/instantstart/kept", logStreamName="s", startFromHead=True)[
            "events"
        ]
        assert [e["message"] for e in ev] == ["kept line"]
        assert "InstantStartControlPlane" in again.sts.get_caller_identity()["Arn"]
    finally:
        sb2.stop()


def test_periodic_save_without_stop(tmp_path):
    state = tmp_path / "state"
    sb = Sandbox(state, speedup=2000).start()
    try:
        Account(sb).ec2.create_vpc(CidrBlock="10.9.0.0/16")
        wait_for(lambda: (state / "aws-state.pickle").exists(), timeout=8)
    finally:
        sb.stop()


def test_unreadable_snapshot_is_set_aside(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "aws-state.pickle").write_bytes(b"not a pickle")
    sb = Sandbox(state, speedup=5000).start()
    try:
        assert Account(sb).eks.list_clusters()["clusters"] == []
    finally:
        sb.stop()
    assert list(state.glob("aws-state.pickle.unreadable-*"))
