"""SageMaker HyperPod clusters: create keeps every field, nodes come up progressively, partial-upsert
updates, node batch operations, software updates, events, failures, and the nodes handed to Kubernetes."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from sandbox.aws import lifecycle
from tests.sandbox.conftest import autoscaling_role, eks_cluster, hyperpod, slow_time, wait_for


def _status(acct, name):
    return acct.sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"]


def _nodes(acct, name):
    return acct.sagemaker.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]


def _kube_nodes(sandbox, acct, eks_name):
    plan = lifecycle.tick(sandbox.world)
    return next((kc.nodes for kc in plan if kc.key == f"{acct.id}/us-west-2/{eks_name}"), [])


def test_create_keeps_fields_and_nodes_progress(account, sandbox):
    eks = eks_cluster(account, "ml")
    sandbox.world.speedup = 200.0  # slow enough to watch Pending -> Running (8 min real -> 2.4 s)
    arn = hyperpod(
        account,
        "hp",
        eks,
        groups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.p5.48xlarge",
                "InstanceCount": 4,
                "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
                "KubernetesConfig": {"Labels": {"team": "research"}},
            }
        ],
        NodeRecovery="Automatic",
        NodeProvisioningMode="Continuous",
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
        ClusterRole=autoscaling_role(account),
    )
    d = account.sagemaker.describe_cluster(ClusterName="hp")
    assert d["ClusterArn"] == arn and d["ClusterStatus"] == "Creating"
    assert d["Orchestrator"] == {"Eks": {"ClusterArn": eks["arn"]}}
    assert d["NodeRecovery"] == "Automatic" and d["NodeProvisioningMode"] == "Continuous"
    assert d["AutoScaling"]["Mode"] == "Enable" and d["AutoScaling"]["AutoScalerType"] == "Karpenter"
    assert [n["InstanceStatus"]["Status"] for n in _nodes(account, "hp")] == ["Pending"] * 4
    seen = set()

    def in_service() -> bool:
        statuses = [n["InstanceStatus"]["Status"] for n in _nodes(account, "hp")]
        seen.add(tuple(sorted(statuses)))
        return _status(account, "hp") == "InService"

    wait_for(in_service, timeout=10)
    assert any("DeepHealthCheckInProgress" in s for s in seen), seen  # on-start deep health checks ran
    assert any("Running" in s and set(s) - {"Running"} for s in seen), seen  # nodes came up one by one
    g = account.sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"][0]
    assert g["CurrentCount"] == 4 and g["TargetCount"] == 4 and g["Status"] == "InService"
    nodes = _kube_nodes(sandbox, account, "ml")
    assert len(nodes) == 4
    n = nodes[0]
    assert n["name"].startswith("hyperpod-i-") and n["gpus"] == 8 and n["efa"] == 32
    assert n["labels"]["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
    assert n["labels"]["sagemaker.amazonaws.com/compute-type"] == "hyperpod"
    assert n["labels"]["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
    assert n["labels"]["sagemaker.amazonaws.com/deep-health-check-status"] == "Passed"
    assert n["labels"]["topology.kubernetes.io/zone"] == "us-west-2b"
    assert n["labels"]["team"] == "research"
    node = account.sagemaker.describe_cluster_node(ClusterName="hp", NodeId=n["instance_id"])["NodeDetails"]
    assert node["Placement"]["AvailabilityZone"] == "us-west-2b"
    events = account.sagemaker.list_cluster_events(ClusterName="hp")["Events"]
    assert any("InService" in e["Description"] for e in events)
    summaries = account.sagemaker.list_clusters()["ClusterSummaries"]
    assert [s["ClusterName"] for s in summaries] == ["hp"]


def test_create_without_threads_per_core_or_sagemaker_bucket_prefix(account):
    eks = eks_cluster(account, "ml")
    hyperpod(
        account,
        "plain",
        eks,
        groups=[
            {
                "InstanceGroupName": "cpu",
                "InstanceType": "ml.m5.xlarge",
                "InstanceCount": 1,
                "LifeCycleConfig": {"SourceS3Uri": "s3://anything/lc", "OnCreate": "on_create.sh"},
            }
        ],
    )
    wait_for(lambda: _status(account, "plain") == "InService")


def test_update_cluster_partial_upsert_and_delete_group(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks)
    wait_for(lambda: _status(account, "hp") == "InService")
    exec_role = account.sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"][0]["ExecutionRole"]
    with slow_time(sandbox):
        account.sagemaker.update_cluster(
            ClusterName="hp",
            InstanceGroups=[
                {
                    "InstanceGroupName": "cpu",
                    "InstanceType": "ml.m5.2xlarge",
                    "InstanceCount": 1,
                    "ExecutionRole": exec_role,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://b/lc", "OnCreate": "x.sh"},
                }
            ],
        )
        assert _status(account, "hp") == "Updating"
        with pytest.raises(ClientError) as e:
            account.sagemaker.update_cluster(ClusterName="hp", InstanceGroupsToDelete=["cpu"])
        assert e.value.response["Error"]["Code"] == "ConflictException"
    wait_for(lambda: _status(account, "hp") == "InService")
    groups = {g["InstanceGroupName"]: g for g in account.sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"]}
    assert groups["gpu"]["CurrentCount"] == 2 and groups["cpu"]["CurrentCount"] == 1  # gpu untouched
    # scale the gpu group by sending only that group
    account.sagemaker.update_cluster(
        ClusterName="hp",
        InstanceGroups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.p5.48xlarge",
                "InstanceCount": 3,
                "ExecutionRole": exec_role,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/lc", "OnCreate": "x.sh"},
            }
        ],
    )
    wait_for(lambda: _status(account, "hp") == "InService")
    assert len([n for n in _nodes(account, "hp") if n["InstanceGroupName"] == "gpu"]) == 3
    account.sagemaker.update_cluster(ClusterName="hp", InstanceGroupsToDelete=["cpu"])
    wait_for(lambda: _status(account, "hp") == "InService")
    d = account.sagemaker.describe_cluster(ClusterName="hp")
    assert [g["InstanceGroupName"] for g in d["InstanceGroups"]] == ["gpu"]
    assert {n["InstanceGroupName"] for n in _nodes(account, "hp")} == {"gpu"}
    calls = sandbox.world.get_calls(account.id)
    assert calls["sagemaker:UpdateCluster"] == 4 and calls["sagemaker:CreateCluster"] == 1


def test_node_batch_operations(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(
        account, "hp", eks, groups=[{"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 3}]
    )
    wait_for(lambda: _status(account, "hp") == "InService")
    a, b, c = sorted(n["InstanceId"] for n in _nodes(account, "hp"))
    sm = account.sagemaker
    with slow_time(sandbox):
        r = sm.batch_reboot_cluster_nodes(ClusterName="hp", NodeIds=[a, "i-0000000000000dead"])
        assert r["Successful"] == [a] and r["Failed"][0]["ErrorCode"] == "InstanceIdNotFound"
        labels = {n["instance_id"]: n for n in _kube_nodes(sandbox, account, "ml")}
        assert labels[a]["ready"] is False
        assert labels[a]["labels"]["sagemaker.amazonaws.com/node-health-status"] == "UnschedulablePendingReboot"
    wait_for(
        lambda: (
            sm.describe_cluster_node(ClusterName="hp", NodeId=a)["NodeDetails"]["InstanceStatus"]["Status"] == "Running"
        )
    )
    assert sm.batch_replace_cluster_nodes(ClusterName="hp", NodeIds=[b])["Successful"] == [b]
    wait_for(lambda: b not in {n["InstanceId"] for n in _nodes(account, "hp")})
    wait_for(lambda: sum(n["InstanceStatus"]["Status"] == "Running" for n in _nodes(account, "hp")) == 3)
    r = sm.batch_delete_cluster_nodes(ClusterName="hp", NodeIds=[c])
    assert r["Successful"] == [c]
    wait_for(lambda: len(_nodes(account, "hp")) == 2)
    assert sm.describe_cluster(ClusterName="hp")["InstanceGroups"][0]["TargetCount"] == 2
    assert c not in {n["instance_id"] for n in _kube_nodes(sandbox, account, "ml")}


def test_software_update(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks)
    wait_for(lambda: _status(account, "hp") == "InService")
    with slow_time(sandbox):
        account.sagemaker.update_cluster_software(ClusterName="hp")
        assert _status(account, "hp") == "SystemUpdating"
    wait_for(lambda: _status(account, "hp") == "InService")
    assert all("LastSoftwareUpdateTime" in n for n in _nodes(account, "hp"))


def test_insufficient_capacity_fails_create(account, sandbox):
    eks = eks_cluster(account, "ml")
    sandbox.faults.add("insufficient_capacity", instance_type="ml.p5.48xlarge", availability_zone="us-west-2b")
    hyperpod(account, "hp", eks)
    wait_for(lambda: _status(account, "hp") == "Failed")
    d = account.sagemaker.describe_cluster(ClusterName="hp")
    assert "InsufficientInstanceCapacity" in d["FailureMessage"] and "us-west-2b" in d["FailureMessage"]
    assert d["InstanceGroups"][0]["Status"] == "Failed"
    assert _nodes(account, "hp") == []
    with slow_time(sandbox):
        account.sagemaker.delete_cluster(ClusterName="hp")
        assert _status(account, "hp") == "Deleting"

    def gone() -> bool:
        try:
            _status(account, "hp")
        except ClientError as e:
            return e.response["Error"]["Code"] == "ResourceNotFound"
        return False

    wait_for(gone)


def test_insufficient_capacity_on_update_fails_group(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks)
    wait_for(lambda: _status(account, "hp") == "InService")
    sandbox.faults.add("insufficient_capacity", instance_type="ml.p5en.48xlarge")
    role = account.sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"][0]["ExecutionRole"]
    account.sagemaker.update_cluster(
        ClusterName="hp",
        InstanceGroups=[
            {
                "InstanceGroupName": "big",
                "InstanceType": "ml.p5en.48xlarge",
                "InstanceCount": 2,
                "ExecutionRole": role,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/lc", "OnCreate": "x.sh"},
            }
        ],
    )
    wait_for(lambda: _status(account, "hp") == "InService")
    d = account.sagemaker.describe_cluster(ClusterName="hp")
    groups = {g["InstanceGroupName"]: g for g in d["InstanceGroups"]}
    assert groups["big"]["Status"] == "Failed" and groups["big"]["CurrentCount"] == 0
    assert "InsufficientInstanceCapacity" in d["FailureMessage"]


def test_create_fails_fault(account, sandbox):
    eks = eks_cluster(account, "ml")
    sandbox.faults.add("create_fails", service="sagemaker", name="doomed")
    hyperpod(account, "doomed", eks)
    wait_for(lambda: _status(account, "doomed") == "Failed")
    assert account.sagemaker.describe_cluster(ClusterName="doomed")["FailureMessage"]


def test_deep_health_fault_labels_nodes(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks, NodeRecovery="None")
    wait_for(lambda: _status(account, "hp") == "InService")
    sandbox.faults.add("deep_health_fail", cluster="hp", instance_group="gpu", count=1)

    def faulted():
        return [
            n
            for n in _kube_nodes(sandbox, account, "ml")
            if n["labels"].get("sagemaker.amazonaws.com/deep-health-check-status") == "Failed"
        ]

    bad = wait_for(faulted)
    assert len(bad) == 1
    assert bad[0]["labels"]["sagemaker.amazonaws.com/node-health-status"] == "Unschedulable"
    assert bad[0]["labels"]["sagemaker.amazonaws.com/fault-types"]


def test_deep_health_fault_with_automatic_recovery_replaces_node(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks)
    wait_for(lambda: _status(account, "hp") == "InService")
    before = {n["InstanceId"] for n in _nodes(account, "hp")}
    sandbox.faults.add("deep_health_fail", cluster="hp", count=1)
    wait_for(lambda: len(before - {n["InstanceId"] for n in _nodes(account, "hp")}) == 1)
    wait_for(lambda: sum(n["InstanceStatus"]["Status"] == "Running" for n in _nodes(account, "hp")) == 2)


def test_validation_errors(account):
    with pytest.raises(ClientError) as e:
        account.sagemaker.describe_cluster(ClusterName="nope")
    assert e.value.response["Error"]["Code"] == "ResourceNotFound"
    eks = eks_cluster(account, "slow", wait=False)
    with pytest.raises(ClientError) as e:
        hyperpod(account, "hp", eks)
    assert e.value.response["Error"]["Code"] == "ValidationException"


def test_tags_on_hyperpod_cluster(account):
    eks = eks_cluster(account, "ml")
    arn = hyperpod(account, "hp", eks, Tags=[{"Key": "team", "Value": "acme"}])
    account.sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": "owner", "Value": "ops"}])
    tags = {t["Key"]: t["Value"] for t in account.sagemaker.list_tags(ResourceArn=arn)["Tags"]}
    assert tags == {"team": "acme", "owner": "ops"}
    account.sagemaker.delete_tags(ResourceArn=arn, TagKeys=["owner"])
    assert account.sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "acme"}]


def test_unknown_subnet_is_rejected(account):
    eks = eks_cluster(account, "ml")
    eks["net"]["subnets"] = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    with pytest.raises(ClientError) as e:
        hyperpod(account, "hp", eks)
    assert e.value.response["Error"]["Code"] == "ValidationException"


def test_training_plan_capacity(account, sandbox):
    eks = eks_cluster(account, "ml")
    sm = account.sagemaker
    offers = sm.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge", InstanceCount=2, DurationHours=24, TargetResources=["hyperpod-cluster"]
    )["TrainingPlanOfferings"]
    in_b = next(o for o in offers if o["ReservedCapacityOfferings"][0]["AvailabilityZone"] == "us-west-2b")
    in_c = next(o for o in offers if o["ReservedCapacityOfferings"][0]["AvailabilityZone"] == "us-west-2c")
    plan = sm.create_training_plan(TrainingPlanName="p5-b", TrainingPlanOfferingId=in_b["TrainingPlanOfferingId"])[
        "TrainingPlanArn"
    ]
    other = sm.create_training_plan(TrainingPlanName="p5-c", TrainingPlanOfferingId=in_c["TrainingPlanOfferingId"])[
        "TrainingPlanArn"
    ]
    sandbox.advance()
    group = {"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 3, "TrainingPlanArn": plan}
    with pytest.raises(ClientError) as e:  # 3 > 2 reserved
        hyperpod(account, "try1", eks, groups=[dict(group)])
    assert "available" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:  # plan reserves us-west-2c, the subnet is in us-west-2b
        hyperpod(account, "try2", eks, groups=[{**group, "InstanceCount": 2, "TrainingPlanArn": other}])
    assert "Availability Zone" in e.value.response["Error"]["Message"]
    hyperpod(account, "hp", eks, groups=[{**group, "InstanceCount": 2}])
    wait_for(lambda: _status(account, "hp") == "InService")
    tp = sm.describe_training_plan(TrainingPlanName="p5-b")
    assert tp["InUseInstanceCount"] == 2 and tp["AvailableInstanceCount"] == 0
    assert sm.list_clusters(TrainingPlanArn=plan)["ClusterSummaries"][0]["TrainingPlanArns"] == [plan]
