"""EKS: cluster and nodegroup lifecycles, add-ons, pod identity, access entries (driven through boto3)."""

from __future__ import annotations

import base64
import json
import re
import urllib.request

import pytest
from botocore.exceptions import ClientError

from tests.sandbox.conftest import eks_cluster, network, role, slow_time, wait_for


def test_cluster_creating_then_active_with_reachable_endpoint(account, sandbox):
    net = network(account)
    role_arn = role(account, "eks", "AmazonEKSClusterPolicy")
    c = account.eks.create_cluster(name="ml", roleArn=role_arn, resourcesVpcConfig={"subnetIds": net["subnets"]})
    assert c["cluster"]["status"] == "CREATING"
    assert "endpoint" not in c["cluster"]
    cluster = wait_for(lambda: (d := account.eks.describe_cluster(name="ml")["cluster"])["status"] == "ACTIVE" and d)
    # the API server at the root of a loopback port of its own, as an EKS endpoint is a host
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", cluster["endpoint"]) and cluster["endpoint"] != sandbox.aws_endpoint
    with urllib.request.urlopen(cluster["endpoint"] + "/version", timeout=5) as r:
        assert json.loads(r.read())["gitVersion"].startswith("v1.33.")
    pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
    assert pem.startswith("-----BEGIN CERTIFICATE-----")
    assert cluster["version"] == "1.33"
    assert account.eks.list_clusters()["clusters"] == ["ml"]


def test_create_fails_fault_ends_failed(account, sandbox):
    sandbox.faults.add("create_fails", service="eks", name="broken")
    net = network(account)
    account.eks.create_cluster(
        name="broken", roleArn=role(account, "r"), resourcesVpcConfig={"subnetIds": net["subnets"]}
    )
    c = wait_for(lambda: (d := account.eks.describe_cluster(name="broken")["cluster"])["status"] == "FAILED" and d)
    assert c["health"]["issues"][0]["code"] == "InternalFailure"


def test_delete_goes_through_deleting(account, sandbox):
    eks_cluster(account, "gone")
    with slow_time(sandbox):
        assert account.eks.delete_cluster(name="gone")["cluster"]["status"] == "DELETING"
        assert account.eks.describe_cluster(name="gone")["cluster"]["status"] == "DELETING"

    def gone() -> bool:
        try:
            account.eks.describe_cluster(name="gone")
        except ClientError as e:
            return e.response["Error"]["Code"] == "ResourceNotFoundException"
        return False

    wait_for(gone)


def test_nodegroup_lifecycle_and_capacity_fault(account, sandbox):
    c = eks_cluster(account, "ng")
    node_role = role(
        account, "node", "AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly", "AmazonEKS_CNI_Policy"
    )
    ng = account.eks.create_nodegroup(
        clusterName="ng",
        nodegroupName="cpu",
        subnets=c["net"]["subnets"],
        nodeRole=node_role,
        instanceTypes=["m5.xlarge"],
        scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 2},
    )
    assert ng["nodegroup"]["status"] == "CREATING"
    wait_for(
        lambda: account.eks.describe_nodegroup(clusterName="ng", nodegroupName="cpu")["nodegroup"]["status"] == "ACTIVE"
    )
    sandbox.faults.add("insufficient_capacity", instance_type="g5.48xlarge")
    account.eks.create_nodegroup(
        clusterName="ng",
        nodegroupName="gpu",
        subnets=c["net"]["subnets"],
        nodeRole=node_role,
        instanceTypes=["g5.48xlarge"],
    )
    failed = wait_for(
        lambda: (
            (n := account.eks.describe_nodegroup(clusterName="ng", nodegroupName="gpu")["nodegroup"])["status"]
            == "CREATE_FAILED"
            and n
        )
    )
    issue = failed["health"]["issues"][0]
    assert issue["code"] == "AsgInstanceLaunchFailures"
    assert "InsufficientInstanceCapacity" in issue["message"]


def test_addons_lifecycle_and_versions(account):
    eks_cluster(account, "ad")
    versions = account.eks.describe_addon_versions(kubernetesVersion="1.32", addonName="kube-proxy")["addons"]
    assert versions[0]["addonVersions"][0]["addonVersion"].startswith("v1.32.")
    names = {a["addonName"] for a in account.eks.describe_addon_versions(kubernetesVersion="1.32")["addons"]}
    assert {
        "vpc-cni",
        "coredns",
        "kube-proxy",
        "eks-pod-identity-agent",
        "cert-manager",
        "aws-fsx-csi-driver",
        "aws-mountpoint-s3-csi-driver",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-observability",
    } <= names
    a = account.eks.create_addon(clusterName="ad", addonName="vpc-cni")["addon"]
    assert a["status"] == "CREATING"
    wait_for(lambda: account.eks.describe_addon(clusterName="ad", addonName="vpc-cni")["addon"]["status"] == "ACTIVE")
    with pytest.raises(ClientError) as e:
        account.eks.create_addon(clusterName="ad", addonName="vpc-cni")
    assert e.value.response["Error"]["Code"] == "ResourceInUseException"
    up = account.eks.update_addon(clusterName="ad", addonName="vpc-cni", addonVersion="v1.19.0-eksbuild.1")
    assert up["update"]["type"] == "AddonUpdate"
    wait_for(lambda: account.eks.describe_addon(clusterName="ad", addonName="vpc-cni")["addon"]["status"] == "ACTIVE")
    assert account.eks.list_addons(clusterName="ad")["addons"] == ["vpc-cni"]
    assert account.eks.delete_addon(clusterName="ad", addonName="vpc-cni")["addon"]["status"] == "DELETING"
    wait_for(lambda: account.eks.list_addons(clusterName="ad")["addons"] == [])
    with pytest.raises(ClientError) as e:
        account.eks.describe_addon(clusterName="ad", addonName="vpc-cni")
    assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_training_operator_needs_cert_manager(account):
    eks_cluster(account, "op")
    account.eks.create_addon(clusterName="op", addonName="amazon-sagemaker-hyperpod-training-operator")
    op = "amazon-sagemaker-hyperpod-training-operator"
    a = wait_for(
        lambda: (x := account.eks.describe_addon(clusterName="op", addonName=op)["addon"])["status"] != "CREATING" and x
    )
    assert a["status"] == "CREATE_FAILED"
    assert "cert-manager" in a["health"]["issues"][0]["message"]
    account.eks.delete_addon(clusterName="op", addonName="amazon-sagemaker-hyperpod-training-operator")
    wait_for(lambda: account.eks.list_addons(clusterName="op")["addons"] == [])
    account.eks.create_addon(clusterName="op", addonName="cert-manager")
    account.eks.create_addon(clusterName="op", addonName="amazon-sagemaker-hyperpod-training-operator")
    wait_for(
        lambda: (
            account.eks.describe_addon(clusterName="op", addonName="amazon-sagemaker-hyperpod-training-operator")[
                "addon"
            ]["status"]
            == "ACTIVE"
        )
    )


def test_addon_on_creating_cluster_is_rejected(account, sandbox):
    with slow_time(sandbox), pytest.raises(ClientError) as e:
        eks_cluster(account, "early", wait=False)
        account.eks.create_addon(clusterName="early", addonName="coredns")
    assert e.value.response["Error"]["Code"] == "InvalidRequestException"


def test_pod_identity_associations(account):
    eks_cluster(account, "pi")
    r = role(account, "ckpt")
    a = account.eks.create_pod_identity_association(
        clusterName="pi", namespace="team", serviceAccount="trainer", roleArn=r
    )["association"]
    assert a["associationId"].startswith("a-")
    got = account.eks.describe_pod_identity_association(clusterName="pi", associationId=a["associationId"])
    assert got["association"]["roleArn"] == r
    listed = account.eks.list_pod_identity_associations(clusterName="pi", namespace="team")["associations"]
    assert [x["serviceAccount"] for x in listed] == ["trainer"]
    with pytest.raises(ClientError) as e:
        account.eks.create_pod_identity_association(
            clusterName="pi", namespace="team", serviceAccount="trainer", roleArn=r
        )
    assert e.value.response["Error"]["Code"] == "ResourceInUseException"
    account.eks.delete_pod_identity_association(clusterName="pi", associationId=a["associationId"])
    assert account.eks.list_pod_identity_associations(clusterName="pi")["associations"] == []


def test_access_entries_and_policies(account):
    eks_cluster(account, "ae")
    creator = f"arn:aws:iam::{account.id}:role/InstantStartControlPlane"
    assert account.eks.list_access_entries(clusterName="ae")["accessEntries"] == [creator]
    admin = role(account, "admin")
    e = account.eks.create_access_entry(clusterName="ae", principalArn=admin)["accessEntry"]
    assert e["type"] == "STANDARD" and e["principalArn"] == admin
    assert account.eks.describe_access_entry(clusterName="ae", principalArn=admin)["accessEntry"]["accessEntryArn"]
    policies = {p["name"]: p["arn"] for p in account.eks.list_access_policies()["accessPolicies"]}
    pol = policies["AmazonEKSClusterAdminPolicy"]
    account.eks.associate_access_policy(
        clusterName="ae", principalArn=admin, policyArn=pol, accessScope={"type": "cluster"}
    )
    assoc = account.eks.list_associated_access_policies(clusterName="ae", principalArn=admin)
    assert [p["policyArn"] for p in assoc["associatedAccessPolicies"]] == [pol]
    account.eks.disassociate_access_policy(clusterName="ae", principalArn=admin, policyArn=pol)
    assert (
        account.eks.list_associated_access_policies(clusterName="ae", principalArn=admin)["associatedAccessPolicies"]
        == []
    )
    account.eks.delete_access_entry(clusterName="ae", principalArn=admin)
    with pytest.raises(ClientError) as err:
        account.eks.describe_access_entry(clusterName="ae", principalArn=admin)
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_cluster_version_update_and_updates_api(account, sandbox):
    eks_cluster(account, "up")  # 1.32
    with slow_time(sandbox):
        u = account.eks.update_cluster_version(name="up", version="1.33")["update"]
        assert u["status"] == "InProgress" and u["type"] == "VersionUpdate"
        assert account.eks.describe_cluster(name="up")["cluster"]["status"] == "UPDATING"
        with pytest.raises(ClientError) as e:
            account.eks.create_addon(clusterName="up", addonName="coredns")
        assert e.value.response["Error"]["Code"] == "InvalidRequestException"
    wait_for(lambda: account.eks.describe_update(name="up", updateId=u["id"])["update"]["status"] == "Successful")
    c = account.eks.describe_cluster(name="up")["cluster"]
    assert c["status"] == "ACTIVE" and c["version"] == "1.33"
    assert account.eks.list_updates(name="up")["updateIds"] == [u["id"]]
    with pytest.raises(ClientError) as e:
        account.eks.update_cluster_version(name="up", version="1.31")
    assert e.value.response["Error"]["Code"] == "InvalidParameterException"
    versions = account.eks.describe_cluster_versions()["clusterVersions"]
    assert any(v["clusterVersion"] == "1.33" and v["defaultVersion"] for v in versions)


def test_nodegroup_scaling_update(account):
    c = eks_cluster(account, "scale")
    node_role = role(account, "node", "AmazonEKSWorkerNodePolicy")
    account.eks.create_nodegroup(
        clusterName="scale",
        nodegroupName="cpu",
        subnets=c["net"]["subnets"],
        nodeRole=node_role,
        scalingConfig={"minSize": 1, "maxSize": 4, "desiredSize": 1},
    )
    wait_for(
        lambda: (
            account.eks.describe_nodegroup(clusterName="scale", nodegroupName="cpu")["nodegroup"]["status"] == "ACTIVE"
        )
    )
    u = account.eks.update_nodegroup_config(clusterName="scale", nodegroupName="cpu", scalingConfig={"desiredSize": 3})[
        "update"
    ]
    wait_for(
        lambda: (
            account.eks.describe_update(name="scale", updateId=u["id"], nodegroupName="cpu")["update"]["status"]
            == "Successful"
        )
    )
    ng = account.eks.describe_nodegroup(clusterName="scale", nodegroupName="cpu")["nodegroup"]
    assert ng["scalingConfig"]["desiredSize"] == 3
    assert account.eks.list_updates(name="scale", nodegroupName="cpu")["updateIds"] == [u["id"]]
