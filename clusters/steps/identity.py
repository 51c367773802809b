"""Phase `identity`: the EKS cluster role, the HyperPod execution role, the lifecycle scripts."""

from __future__ import annotations

import json

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done

from ..lifecycle_scripts import LIFECYCLE_SCRIPTS
from ..models import Cluster
from .base import cloud_of, cluster_of

EKS_CLUSTER_POLICIES = ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)
EXECUTION_POLICIES = ("arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy",)

# What HyperPod instances need beyond the managed policy: their network interfaces in our VPC,
# the lifecycle scripts, and the EKS API.
EXECUTION_INLINE_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": [
                "ec2:AssignPrivateIpAddresses",
                "ec2:CreateNetworkInterface",
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeVpcs",
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
                "ec2:DetachNetworkInterface",
                "ec2:ModifyNetworkInterfaceAttribute",
                "ec2:UnassignPrivateIpAddresses",
                "ec2:CreateTags",
                "eks-auth:AssumeRoleForPodIdentity",
                "ecr:GetAuthorizationToken",
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
            ],
            "Resource": "*",
        },
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"},
    ],
}


def _trust(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": service}, "Action": ["sts:AssumeRole", "sts:TagSession"]}
            ],
        }
    )


def role_names(cluster: Cluster) -> dict[str, str]:
    return {"eks": f"{cluster.resource_prefix}-eks", "execution": f"{cluster.resource_prefix}-exec"}


def lifecycle_bucket(cluster: Cluster, account_id: str) -> str:
    # HyperPod only reads lifecycle scripts from buckets whose name starts with "sagemaker-".
    return f"sagemaker-is-{cluster.pk.hex[:12]}-{account_id}"


def _ensure_role(iam, cluster: Cluster, name: str, service: str, policies: tuple[str, ...]) -> str:
    try:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        arn = iam.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=_trust(service),
            Description=f"InstantStart {cluster.team.slug}/{cluster.name}",
            Tags=[{"Key": k, "Value": v} for k, v in cluster.tags().items()],
        )["Role"]["Arn"]
    attached = {p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]}
    for policy in policies:
        if policy not in attached:
            iam.attach_role_policy(RoleName=name, PolicyArn=policy)
    return arn


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    cloud = cloud_of(cluster)
    iam = cloud.client("iam")
    names = role_names(cluster)
    eks_role = _ensure_role(iam, cluster, names["eks"], "eks.amazonaws.com", EKS_CLUSTER_POLICIES)
    ctx.record(eks_role_arn=eks_role)
    execution_role = _ensure_role(iam, cluster, names["execution"], "sagemaker.amazonaws.com", EXECUTION_POLICIES)
    if "InstantStartNodes" not in iam.list_role_policies(RoleName=names["execution"])["PolicyNames"]:
        iam.put_role_policy(
            RoleName=names["execution"],
            PolicyName="InstantStartNodes",
            PolicyDocument=json.dumps(EXECUTION_INLINE_POLICY),
        )
    ctx.record(execution_role_arn=execution_role)

    s3 = cloud.client("s3")
    bucket = lifecycle_bucket(cluster, cloud.account_id)
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if bucket not in existing:
        kwargs = {"Bucket": bucket}
        if cluster.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": cluster.region}
        s3.create_bucket(**kwargs)
        s3.put_bucket_tagging(
            Bucket=bucket, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in cluster.tags().items()]}
        )
    ctx.record(lifecycle_bucket=bucket)
    for key, body in LIFECYCLE_SCRIPTS.items():
        s3.put_object(Bucket=bucket, Key=f"lifecycle/{key}", Body=body.encode())

    Cluster.objects.filter(pk=cluster.pk).update(
        identity={
            "eks_role_arn": eks_role,
            "execution_role_arn": execution_role,
            "lifecycle_uri": f"s3://{bucket}/lifecycle/",
        }
    )
    return Done(f"roles {names['eks']}, {names['execution']}; lifecycle scripts in s3://{bucket}/lifecycle/")
