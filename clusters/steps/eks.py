"""Phase `eks`: the EKS control plane (8–12 minutes in the real service), then access for the
control plane's own role."""

from __future__ import annotations

from instantstart.cloud.aws import role_for
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..models import Cluster
from .base import client_token, cloud_of, cluster_of

POLL_SECONDS = 30
FIRST_POLL_SECONDS = 300
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def eks_name(cluster: Cluster) -> str:
    return cluster.resource_prefix


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    eks = cloud_of(cluster).client("eks")
    name = eks_name(cluster)
    network, identity = cluster.network, cluster.identity

    if "cluster_name" not in ctx.phase.state:
        try:
            eks.describe_cluster(name=name)
        except eks.exceptions.ResourceNotFoundException:
            eks.create_cluster(
                name=name,
                version=cluster.kubernetes_version,
                roleArn=identity["eks_role_arn"],
                resourcesVpcConfig={
                    "subnetIds": [network["subnets"][r] for r in ("private-0", "private-1", "public-0", "public-1")],
                    "securityGroupIds": [network["security_group_id"]],
                    "endpointPublicAccess": True,
                    "endpointPrivateAccess": True,
                },
                accessConfig={
                    "authenticationMode": "API_AND_CONFIG_MAP",
                    "bootstrapClusterCreatorAdminPermissions": True,
                },
                tags=cluster.tags(),
                clientRequestToken=client_token(cluster, "eks"),
            )
            ctx.record(cluster_name=name)
            # A control plane takes 8–12 minutes: the first look is worth taking only after most of it.
            return Wait(FIRST_POLL_SECONDS, f"EKS control plane {name} creating (usually 8–12 minutes)")
        ctx.record(cluster_name=name)

    described = eks.describe_cluster(name=name)["cluster"]
    status = described["status"]
    if status == "FAILED":
        issues = (described.get("health") or {}).get("issues") or []
        return Fail(
            f"The EKS control plane {name} failed to create" + (f": {issues[0]['message']}" if issues else "."),
            hint="Delete the cluster and create it again; check the team role's EKS permissions and service quotas.",
            code="EksCreateFailed",
        )
    if status != "ACTIVE":
        return Wait(POLL_SECONDS, f"EKS control plane {name} is {status}")

    Cluster.objects.filter(pk=cluster.pk).update(
        eks_cluster_name=name,
        eks_cluster_arn=described["arn"],
        eks_endpoint=described.get("endpoint", ""),
        versions={
            **cluster.versions,
            "kubernetes": described.get("version"),
            "platform": described.get("platformVersion"),
        },
    )
    if not ctx.phase.state.get("access"):
        principal = role_for(cluster.team)[0]
        entries = eks.list_access_entries(clusterName=name).get("accessEntries", [])
        if principal not in entries:
            try:
                eks.create_access_entry(clusterName=name, principalArn=principal, type="STANDARD", tags=cluster.tags())
            except eks.exceptions.ResourceInUseException:
                pass  # created meanwhile (e.g. by bootstrapClusterCreatorAdminPermissions)
        policies = eks.list_associated_access_policies(clusterName=name, principalArn=principal).get(
            "associatedAccessPolicies", []
        )
        if not any(p["policyArn"] == ADMIN_POLICY for p in policies):
            eks.associate_access_policy(
                clusterName=name, principalArn=principal, policyArn=ADMIN_POLICY, accessScope={"type": "cluster"}
            )
        ctx.record(access=True)
    return Done(f"EKS {described.get('version')} control plane ACTIVE at {described.get('endpoint')}")
