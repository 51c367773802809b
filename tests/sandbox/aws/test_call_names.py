"""Calls are counted by (boto3 client name, operation name) for every protocol."""

from __future__ import annotations


def test_call_names_across_protocols(sandbox, account):
    s3 = account.s3
    s3.create_bucket(Bucket="names-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_bucket_tagging(Bucket="names-bucket", Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})
    s3.put_object(Bucket="names-bucket", Key="lifecycle/on_create.sh", Body=b"#!/bin/sh")
    s3.copy_object(Bucket="names-bucket", Key="copy.sh", CopySource="names-bucket/lifecycle/on_create.sh")
    s3.list_objects_v2(Bucket="names-bucket")
    account.ec2.describe_vpcs()
    account.iam.list_roles()
    account.sts.get_caller_identity()
    account.eks.list_clusters()
    account.eks.describe_addon_versions(addonName="coredns")
    account.sagemaker.list_clusters()
    account.service_quotas.list_service_quotas(ServiceCode="ec2")
    account.fsx.describe_file_systems()
    calls = sandbox.world.get_calls(account.id)
    assert calls == {
        "s3:CreateBucket": 1,
        "s3:PutBucketTagging": 1,
        "s3:PutObject": 1,
        "s3:CopyObject": 1,
        "s3:ListObjectsV2": 1,
        "ec2:DescribeVpcs": 1,
        "iam:ListRoles": 1,
        "sts:GetCallerIdentity": 1,
        "eks:ListClusters": 1,
        "eks:DescribeAddonVersions": 1,
        "sagemaker:ListClusters": 1,
        "service-quotas:ListServiceQuotas": 1,
        "fsx:DescribeFileSystems": 1,
    }
