"""Service Quotas, IAM managed policies, training plans, NAT gateways and FSx timing (MLflow: test_mlflow.py)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tests.sandbox.conftest import network, role, slow_time, wait_for


def test_service_quotas_for_ml_instances(account):
    sq = account.service_quotas
    ec2 = sq.get_service_quota(ServiceCode="ec2", QuotaCode="L-417A185B")["Quota"]
    assert ec2["QuotaName"] == "Running On-Demand P instances" and ec2["Value"] > 0
    quotas = {q["QuotaName"]: q for q in sq.list_service_quotas(ServiceCode="sagemaker")["Quotas"]}
    p5 = quotas["ml.p5.48xlarge for cluster usage"]
    assert p5["Value"] > 0
    again = sq.get_service_quota(ServiceCode="sagemaker", QuotaCode=p5["QuotaCode"])["Quota"]
    assert again["QuotaName"] == p5["QuotaName"]
    with pytest.raises(ClientError) as e:
        sq.get_service_quota(ServiceCode="ec2", QuotaCode="L-00000000")
    assert e.value.response["Error"]["Code"] == "NoSuchResourceException"
    assert sq.list_service_quotas(ServiceCode="vpc")["Quotas"]  # moto's own data still answers


def test_aws_managed_policies_attach(account):
    names = [
        "AmazonEKSClusterPolicy",
        "AmazonSageMakerClusterInstanceRolePolicy",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonEKS_CNI_Policy",
        "AmazonS3FullAccess",
    ]
    role(account, "stack", *names)
    attached = account.iam.list_attached_role_policies(RoleName="stack")["AttachedPolicies"]
    assert sorted(p["PolicyName"] for p in attached) == sorted(names)
    pol = account.iam.get_policy(PolicyArn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy")["Policy"]
    assert pol["AttachmentCount"] == 1


def test_training_plans(account, sandbox):
    sm = account.sagemaker
    offers = sm.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge", InstanceCount=2, DurationHours=48, TargetResources=["hyperpod-cluster"]
    )["TrainingPlanOfferings"]
    assert offers and offers[0]["ReservedCapacityOfferings"][0]["InstanceCount"] == 2
    with slow_time(sandbox):
        arn = sm.create_training_plan(
            TrainingPlanName="march", TrainingPlanOfferingId=offers[0]["TrainingPlanOfferingId"]
        )["TrainingPlanArn"]
        assert sm.describe_training_plan(TrainingPlanName="march")["Status"] == "Pending"
    wait_for(lambda: sm.describe_training_plan(TrainingPlanName="march")["Status"] in ("Scheduled", "Active"))
    assert [p["TrainingPlanArn"] for p in sm.list_training_plans()["TrainingPlanSummaries"]] == [arn]


def test_nat_gateway_pending_then_available(account):
    net = network(account)
    eip = account.ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = account.ec2.create_nat_gateway(SubnetId=net["subnets"][0], AllocationId=eip)["NatGateway"]
    assert nat["State"] == "pending"
    account.ec2.get_waiter("nat_gateway_available").wait(
        NatGatewayIds=[nat["NatGatewayId"]], WaiterConfig={"Delay": 0.05, "MaxAttempts": 100}
    )


def test_fsx_creating_then_available(account):
    net = network(account)
    fs = account.fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=net["subnets"][:1],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250},
    )["FileSystem"]
    assert fs["Lifecycle"] == "CREATING" and fs["LustreConfiguration"]["MountName"]
    wait_for(
        lambda: (
            account.fsx.describe_file_systems(FileSystemIds=[fs["FileSystemId"]])["FileSystems"][0]["Lifecycle"]
            == "AVAILABLE"
        )
    )


def test_nat_and_fsx_deletes_take_time(account, sandbox):
    net = network(account)
    eip = account.ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = account.ec2.create_nat_gateway(SubnetId=net["subnets"][0], AllocationId=eip)["NatGateway"]["NatGatewayId"]
    fs = account.fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=net["subnets"][:1])[
        "FileSystem"
    ]["FileSystemId"]
    sandbox.advance()
    wait_for(
        lambda: account.fsx.describe_file_systems(FileSystemIds=[fs])["FileSystems"][0]["Lifecycle"] == "AVAILABLE"
    )
    with slow_time(sandbox):
        account.ec2.delete_nat_gateway(NatGatewayId=nat)
        assert account.ec2.describe_nat_gateways(NatGatewayIds=[nat])["NatGateways"][0]["State"] == "deleting"
        assert account.fsx.delete_file_system(FileSystemId=fs)["Lifecycle"] == "DELETING"
        assert account.fsx.describe_file_systems(FileSystemIds=[fs])["FileSystems"][0]["Lifecycle"] == "DELETING"
    wait_for(lambda: account.ec2.describe_nat_gateways(NatGatewayIds=[nat])["NatGateways"][0]["State"] == "deleted")

    def fs_gone() -> bool:
        try:
            account.fsx.describe_file_systems(FileSystemIds=[fs])
        except ClientError as e:
            return e.response["Error"]["Code"] == "FileSystemNotFound"
        return False

    wait_for(fs_gone)
