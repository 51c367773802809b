"""The phases of `cluster.delete`: tear down in reverse order, leaving nothing tagged behind.

Every phase finds what exists (by recorded names and the cluster's tags) rather than trusting
records, so a partly created or partly deleted cluster is cleaned up all the same.
"""

from __future__ import annotations

from instantstart.cloud.kube import api_client, delete
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Wait

from ..models import Cluster, StorageKind, StorageStatus
from .base import cloud_of, cluster_of, owned_filter, owned_nat_gateways
from .eks import eks_name
from .hyperpod import hyperpod_name
from .identity import lifecycle_bucket, role_names
from .storage import shared_bucket
from .verify import NO_NODES

POLL_SECONDS = 20


def _empty_and_delete_bucket(s3, bucket: str) -> None:
    if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        return
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        objects = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
        ]
        if objects:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if objects:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
    s3.delete_bucket(Bucket=bucket)


def _eks_exists(eks, name: str) -> dict | None:
    try:
        return eks.describe_cluster(name=name)["cluster"]
    except eks.exceptions.ResourceNotFoundException:
        return None


def storage(ctx: StepContext):
    cluster = cluster_of(ctx)
    cloud = cloud_of(cluster)
    eks = cloud.client("eks")
    cluster_up = _eks_exists(eks, eks_name(cluster)) is not None
    waiting = []
    for item in cluster.storages.all():
        if cluster_up and item.claim_name:
            api = api_client(cloud, eks_name(cluster))
            delete(api, "v1", "PersistentVolumeClaim", item.claim_name, item.namespace)
            delete(api, "v1", "PersistentVolume", f"{item.namespace}-{item.name}")
        if not item.managed:
            continue
        if item.kind == StorageKind.FSX and item.file_system_id:
            fsx = cloud.client("fsx")
            try:
                described = fsx.describe_file_systems(FileSystemIds=[item.file_system_id])["FileSystems"][0]
            except fsx.exceptions.FileSystemNotFound:
                continue
            if described["Lifecycle"] != "DELETING":
                fsx.delete_file_system(FileSystemId=item.file_system_id)
            waiting.append(item.file_system_id)
        elif item.kind == StorageKind.S3:
            _empty_and_delete_bucket(cloud.client("s3"), item.bucket or shared_bucket(cluster, cloud.account_id))
    if waiting:
        return Wait(POLL_SECONDS, f"deleting FSx file systems {', '.join(waiting)}")
    cluster.storages.update(status=StorageStatus.DETACHED)
    return Done("shared storage removed")


def hyperpod(ctx: StepContext):
    cluster = cluster_of(ctx)
    sagemaker = cloud_of(cluster).client("sagemaker")
    name = hyperpod_name(cluster)
    try:
        described = sagemaker.describe_cluster(ClusterName=name)
    except sagemaker.exceptions.ResourceNotFound:
        Cluster.objects.filter(pk=cluster.pk).update(node_summary=NO_NODES)  # no instances left to count
        return Done(f"HyperPod cluster {name} is gone")
    if described["ClusterStatus"] != "Deleting":
        sagemaker.delete_cluster(ClusterName=name)
    return Wait(POLL_SECONDS, f"HyperPod cluster {name} deleting")


def eks(ctx: StepContext):
    cluster = cluster_of(ctx)
    client = cloud_of(cluster).client("eks")
    name = eks_name(cluster)
    described = _eks_exists(client, name)
    if described is None:
        return Done(f"EKS cluster {name} is gone")
    if described["status"] != "DELETING":
        client.delete_cluster(name=name)
    return Wait(POLL_SECONDS * 2, f"EKS control plane {name} deleting")


def identity(ctx: StepContext):
    cluster = cluster_of(ctx)
    cloud = cloud_of(cluster)
    iam = cloud.client("iam")
    for role in role_names(cluster).values():
        try:
            attached = iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
        except iam.exceptions.NoSuchEntityException:
            continue
        for policy in attached:
            iam.detach_role_policy(RoleName=role, PolicyArn=policy["PolicyArn"])
        for policy_name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
            iam.delete_role_policy(RoleName=role, PolicyName=policy_name)
        iam.delete_role(RoleName=role)
    _empty_and_delete_bucket(cloud.client("s3"), lifecycle_bucket(cluster, cloud.account_id))
    return Done("roles and lifecycle bucket removed")


def network(ctx: StepContext):
    cluster = cluster_of(ctx)
    ec2 = cloud_of(cluster).client("ec2")
    vpcs = ec2.describe_vpcs(Filters=owned_filter(cluster))["Vpcs"]
    vpc_ids = [v["VpcId"] for v in vpcs]
    for vpc_id in vpc_ids:
        endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
        live = [e["VpcEndpointId"] for e in endpoints if e.get("State", "").lower() not in ("deleted", "deleting")]
        if live:
            ec2.delete_vpc_endpoints(VpcEndpointIds=live)
    nats = owned_nat_gateways(ec2, cluster, vpc_ids)
    for nat in nats:
        if nat["State"] not in ("deleting",):
            ec2.delete_nat_gateway(NatGatewayId=nat["NatGatewayId"])
    if nats:
        return Wait(POLL_SECONDS, f"NAT gateways deleting: {', '.join(n['NatGatewayId'] for n in nats)}")
    for address in ec2.describe_addresses(Filters=owned_filter(cluster))["Addresses"]:
        ec2.release_address(AllocationId=address["AllocationId"])
    for igw in ec2.describe_internet_gateways(Filters=owned_filter(cluster))["InternetGateways"]:
        for attachment in igw.get("Attachments", []):
            ec2.detach_internet_gateway(InternetGatewayId=igw["InternetGatewayId"], VpcId=attachment["VpcId"])
        ec2.delete_internet_gateway(InternetGatewayId=igw["InternetGatewayId"])
    for vpc_id in vpc_ids:
        vpc_filter = [{"Name": "vpc-id", "Values": [vpc_id]}]
        for table in ec2.describe_route_tables(Filters=vpc_filter)["RouteTables"]:
            if any(a.get("Main") for a in table.get("Associations", [])):
                continue
            for association in table.get("Associations", []):
                ec2.disassociate_route_table(AssociationId=association["RouteTableAssociationId"])
            ec2.delete_route_table(RouteTableId=table["RouteTableId"])
        for subnet in ec2.describe_subnets(Filters=vpc_filter)["Subnets"]:
            ec2.delete_subnet(SubnetId=subnet["SubnetId"])
        for group in ec2.describe_security_groups(Filters=vpc_filter)["SecurityGroups"]:
            if group["GroupName"] != "default":
                ec2.delete_security_group(GroupId=group["GroupId"])
        ec2.delete_vpc(VpcId=vpc_id)
    cluster.compute_subnets.all().delete()
    Cluster.objects.filter(pk=cluster.pk).update(vpc_id="", network={})
    return Done(f"network removed ({', '.join(vpc_ids) or 'nothing left'})")
