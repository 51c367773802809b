"""HyperPod cluster settings behind the managed features: TieredStorageConfig, AutoScaling (with its
Status), ClusterRole, NodeProvisioningMode; validated as SageMaker does and kept across
CreateCluster / UpdateCluster / DescribeCluster; and BatchAddClusterNodes."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from tests.sandbox.conftest import autoscaling_role, control, eks_cluster, hyperpod, role, slow_time, wait_for


def _describe(acct) -> dict:
    return acct.sagemaker.describe_cluster(ClusterName="hp")


def _in_service(acct) -> dict:
    return wait_for(lambda: (d := _describe(acct))["ClusterStatus"] == "InService" and d)


def _refused(call, fragment: str) -> str:
    with pytest.raises(ClientError) as e:
        call()
    assert e.value.response["Error"]["Code"] == "ValidationException"
    assert fragment in e.value.response["Error"]["Message"], e.value.response["Error"]["Message"]
    return e.value.response["Error"]["Message"]


@pytest.fixture
def hp(account, sandbox) -> dict:
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks, NodeProvisioningMode="Continuous")
    return _in_service(account)


def test_tiered_storage_is_kept_validated_and_removed_on_disable(account, sandbox, hp):
    sm = account.sagemaker
    assert "TieredStorageConfig" not in hp
    with slow_time(sandbox):
        sm.update_cluster(
            ClusterName="hp", TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
        )
        d = _describe(account)
        assert d["ClusterStatus"] == "Updating"
        assert d["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    assert _in_service(account)["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}

    message = _refused(
        lambda: sm.update_cluster(
            ClusterName="hp", TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 150}
        ),
        "tieredStorageConfig.instanceMemoryAllocationPercentage",
    )
    assert message.endswith("Member must have value less than or equal to 100")
    _refused(
        lambda: sm.update_cluster(ClusterName="hp", TieredStorageConfig={"Mode": "On"}),
        "Member must satisfy enum value set: [Enable, Disable]",
    )
    d = _describe(account)  # refused = nothing changed
    assert d["ClusterStatus"] == "InService" and d["TieredStorageConfig"]["InstanceMemoryAllocationPercentage"] == 20

    sm.update_cluster(ClusterName="hp", TieredStorageConfig={"Mode": "Disable"})
    assert "TieredStorageConfig" not in _in_service(account)


def test_create_keeps_tiered_storage_and_autoscaling_with_its_status(account, sandbox):
    eks = eks_cluster(account, "ml")
    with slow_time(sandbox):
        hyperpod(
            account,
            "hp",
            eks,
            NodeProvisioningMode="Continuous",
            TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30},
            AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
            ClusterRole=autoscaling_role(account),
        )
        d = _describe(account)
        assert d["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter", "Status": "Creating"}
    d = _in_service(account)
    assert d["AutoScaling"]["Status"] == "InService" and d["ClusterRole"].endswith(":role/hyperpod-karpenter")
    assert d["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30}
    assert d["NodeProvisioningMode"] == "Continuous" and d["NodeRecovery"] == "Automatic"


def test_autoscaling_needs_continuous_provisioning_recovery_and_a_trusted_cluster_role(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(account, "plain", eks)
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="plain")["ClusterStatus"] == "InService")
    sm = account.sagemaker
    enable = {"Mode": "Enable", "AutoScalerType": "Karpenter"}
    good = autoscaling_role(account)
    _refused(
        lambda: sm.update_cluster(ClusterName="plain", AutoScaling=enable, ClusterRole=good),
        "NodeProvisioningMode to be Continuous",
    )
    hyperpod(account, "hp", eks, NodeProvisioningMode="Continuous", NodeRecovery="None")
    _in_service(account)
    _refused(lambda: sm.update_cluster(ClusterName="hp", AutoScaling=enable, ClusterRole=good), "NodeRecovery")
    _refused(lambda: sm.update_cluster(ClusterName="hp", AutoScaling=enable, NodeRecovery="Automatic"), "ClusterRole")
    missing = f"arn:aws:iam::{account.id}:role/not-there"
    _refused(
        lambda: sm.update_cluster(ClusterName="hp", AutoScaling=enable, NodeRecovery="Automatic", ClusterRole=missing),
        "does not exist",
    )
    untrusted = role(account, "untrusted")
    _refused(
        lambda: sm.update_cluster(
            ClusterName="hp", AutoScaling=enable, NodeRecovery="Automatic", ClusterRole=untrusted
        ),
        "hyperpod.sagemaker.amazonaws.com",
    )
    _refused(
        lambda: sm.update_cluster(
            ClusterName="hp", AutoScaling={"Mode": "Enable", "AutoScalerType": "ClusterAutoscaler"}
        ),
        "Member must satisfy enum value set: [Karpenter]",
    )
    assert "AutoScaling" not in _describe(account) and _describe(account)["ClusterStatus"] == "InService"

    sm.update_cluster(ClusterName="hp", AutoScaling=enable, NodeRecovery="Automatic", ClusterRole=good)
    assert _in_service(account)["AutoScaling"]["Status"] == "InService"
    other = autoscaling_role(account, "other-karpenter")
    _refused(lambda: sm.update_cluster(ClusterName="hp", ClusterRole=other), "cannot be updated while autoscaling")
    _refused(lambda: sm.update_cluster(ClusterName="hp", NodeRecovery="None"), "NodeRecovery must be Automatic")


def test_autoscaling_fails_without_permissions_is_retried_and_disable_removes_it(account, sandbox, hp):
    sm = account.sagemaker
    weak = autoscaling_role(account, "weak", allow=False)
    sm.update_cluster(ClusterName="hp", AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"}, ClusterRole=weak)
    failed = _in_service(account)["AutoScaling"]
    assert failed["Status"] == "Failed"
    assert "sagemaker:BatchAddClusterNodes" in failed["FailureMessage"]

    account.iam.put_role_policy(
        RoleName="weak",
        PolicyName="karpenter",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "sagemaker:Batch*ClusterNodes", "Resource": "*"}],
            }
        ),
    )
    with slow_time(sandbox):
        sm.update_cluster(ClusterName="hp", AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"})
        assert _describe(account)["AutoScaling"]["Status"] == "Creating"
    assert _in_service(account)["AutoScaling"] == {
        "Mode": "Enable",
        "AutoScalerType": "Karpenter",
        "Status": "InService",
    }

    with slow_time(sandbox):
        sm.update_cluster(ClusterName="hp", AutoScaling={"Mode": "Disable"})
        assert _describe(account)["AutoScaling"]["Status"] == "Deleting"
    assert "AutoScaling" not in _in_service(account)

    control(sandbox, "POST", "faults", {"kind": "autoscaling_fails", "cluster": "hp", "message": "Karpenter is down."})
    sm.update_cluster(ClusterName="hp", AutoScaling={"Mode": "Enable"})
    assert _in_service(account)["AutoScaling"] == {
        "Mode": "Enable",
        "AutoScalerType": "Karpenter",
        "Status": "Failed",
        "FailureMessage": "Karpenter is down.",
    }


def test_batch_add_cluster_nodes_raises_the_target_count(account, sandbox, hp):
    sm = account.sagemaker
    out = sm.batch_add_cluster_nodes(
        ClusterName="hp",
        NodesToAdd=[
            {"InstanceGroupName": "gpu", "IncrementTargetCountBy": 2},
            {"InstanceGroupName": "nope", "IncrementTargetCountBy": 1},
        ],
    )
    assert [n["InstanceGroupName"] for n in out["Successful"]] == ["gpu", "gpu"]
    assert all(n["Status"] == "Pending" and n["NodeLogicalId"] for n in out["Successful"])
    assert out["Failed"] == [
        {
            "InstanceGroupName": "nope",
            "ErrorCode": "InstanceGroupNotFound",
            "FailedCount": 1,
            "Message": "Instance group nope does not exist in cluster hp.",
        }
    ]
    group = _describe(account)["InstanceGroups"][0]
    assert group["TargetCount"] == 4
    wait_for(lambda: _describe(account)["InstanceGroups"][0]["CurrentCount"] == 4)
    eks = eks_cluster(account, "other")
    # another type: the account's 4 ml.p5.48xlarge for cluster usage are taken by "hp" now
    hyperpod(account, "fixed", eks, [{"InstanceGroupName": "gpu", "InstanceType": "ml.g5.xlarge", "InstanceCount": 2}])
    wait_for(lambda: sm.describe_cluster(ClusterName="fixed")["ClusterStatus"] == "InService")
    _refused(
        lambda: sm.batch_add_cluster_nodes(
            ClusterName="fixed", NodesToAdd=[{"InstanceGroupName": "gpu", "IncrementTargetCountBy": 1}]
        ),
        "Continuous",
    )
