"""The identity pieces a feature creates are real objects of the emulated account: a role with its
trust and policy, a pod identity association, an OIDC provider for IRSA. A platform engineer sees
and deletes them with the aws CLI pointed at the sandbox, as in their own account."""

from __future__ import annotations

import json

import pytest

from tests.sandbox.conftest import AWS_CLI, aws_cli, eks_cluster

pytestmark = pytest.mark.skipif(not AWS_CLI, reason="aws CLI not installed")


def test_role_policy_trust_and_pod_identity_are_visible_and_deletable_with_the_cli(sandbox, account):
    eks = eks_cluster(account, "ml")
    other = eks_cluster(account, "other")
    assert eks["identity"]["oidc"]["issuer"] != other["identity"]["oidc"]["issuer"]  # one issuer per cluster
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }
    role = account.iam.create_role(
        RoleName="ml-hpto",
        AssumeRolePolicyDocument=json.dumps(trust),
        Tags=[{"Key": "instantstart:feature", "Value": "training_operator"}],
    )["Role"]
    account.iam.put_role_policy(
        RoleName="ml-hpto",
        PolicyName="describe-cluster-node",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "sagemaker:DescribeClusterNode", "Resource": "*"}],
            }
        ),
    )
    account.iam.attach_role_policy(
        RoleName="ml-hpto", PolicyArn="arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess"
    )
    assoc = account.eks.create_pod_identity_association(
        clusterName="ml",
        namespace="aws-hyperpod",
        serviceAccount="hp-training-operator-controller-manager",
        roleArn=role["Arn"],
        tags={"instantstart:feature": "training_operator"},
    )["association"]
    account.eks.create_pod_identity_association(
        clusterName="ml", namespace="default", serviceAccount="tiered-storage-sa", roleArn=role["Arn"]
    )
    provider = account.iam.create_open_id_connect_provider(
        Url=eks["identity"]["oidc"]["issuer"], ClientIDList=["sts.amazonaws.com"], ThumbprintList=["9" * 40]
    )["OpenIDConnectProviderArn"]

    got = aws_cli(sandbox, account, "iam", "get-role", "--role-name", "ml-hpto")["Role"]
    assert got["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Service"] == "pods.eks.amazonaws.com"
    assert aws_cli(sandbox, account, "iam", "list-role-policies", "--role-name", "ml-hpto")["PolicyNames"] == [
        "describe-cluster-node"
    ]
    attached = aws_cli(sandbox, account, "iam", "list-attached-role-policies", "--role-name", "ml-hpto")
    assert [p["PolicyName"] for p in attached["AttachedPolicies"]] == ["AmazonSageMakerHyperPodTrainingOperatorAccess"]
    listed = aws_cli(
        sandbox,
        account,
        "eks",
        "list-pod-identity-associations",
        "--cluster-name",
        "ml",
        "--namespace",
        "aws-hyperpod",
        "--service-account",
        "hp-training-operator-controller-manager",
    )["associations"]
    assert [a["associationId"] for a in listed] == [assoc["associationId"]]
    everything = account.eks.list_pod_identity_associations(clusterName="ml")["associations"]
    assert len(everything) == 2
    assert account.eks.list_pod_identity_associations(clusterName="other")["associations"] == []
    providers = aws_cli(sandbox, account, "iam", "list-open-id-connect-providers")["OpenIDConnectProviderList"]
    assert [p["Arn"] for p in providers] == [provider]

    # a platform engineer cleans up by hand
    aws_cli(
        sandbox,
        account,
        "eks",
        "delete-pod-identity-association",
        "--cluster-name",
        "ml",
        "--association-id",
        assoc["associationId"],
    )
    aws_cli(
        sandbox,
        account,
        "iam",
        "delete-role-policy",
        "--role-name",
        "ml-hpto",
        "--policy-name",
        "describe-cluster-node",
    )
    aws_cli(
        sandbox,
        account,
        "iam",
        "detach-role-policy",
        "--role-name",
        "ml-hpto",
        "--policy-arn",
        "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess",
    )
    aws_cli(sandbox, account, "iam", "delete-open-id-connect-provider", "--open-id-connect-provider-arn", provider)
    left = account.eks.list_pod_identity_associations(clusterName="ml", namespace="aws-hyperpod")["associations"]
    assert left == []
    assert account.iam.list_role_policies(RoleName="ml-hpto")["PolicyNames"] == []
    tiered = next(a for a in everything if a["serviceAccount"] == "tiered-storage-sa")
    account.eks.delete_pod_identity_association(clusterName="ml", associationId=tiered["associationId"])
    aws_cli(sandbox, account, "iam", "delete-role", "--role-name", "ml-hpto")
    assert "ml-hpto" not in {r["RoleName"] for r in account.iam.list_roles()["Roles"]}
    assert account.iam.list_open_id_connect_providers()["OpenIDConnectProviderList"] == []
