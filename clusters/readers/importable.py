"""Clusters in the team's account that InstantStart does not manage yet (read-only)."""

from __future__ import annotations

from instantstart.cloud.aws import TeamCloud, team_cloud
from instantstart.errors import cloud_read
from instantstart.tenancy.access import Access

from ..models import Cluster


@cloud_read()
def hyperpod_clusters_by_eks_arn(cloud: TeamCloud, region: str) -> dict[str, dict]:
    sagemaker = cloud.client("sagemaker", region)
    found: dict[str, dict] = {}
    kwargs: dict = {}
    while True:
        page = sagemaker.list_clusters(**kwargs)
        for summary in page.get("ClusterSummaries", []):
            described = sagemaker.describe_cluster(ClusterName=summary["ClusterName"])
            eks_arn = ((described.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
            if eks_arn:
                found[eks_arn] = described
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


@cloud_read()
def importable_clusters(access: Access, region: str) -> list[dict]:
    """EKS clusters of the region not yet managed by this team, with their HyperPod cluster if any."""
    known = set(Cluster.objects.visible_to(access).filter(region=region).values_list("eks_cluster_name", flat=True))
    cloud = team_cloud(access.team, region)
    eks = cloud.client("eks", region)
    hyperpods = hyperpod_clusters_by_eks_arn(cloud, region)
    results = []
    for name in eks.list_clusters().get("clusters", []):
        if name in known:
            continue
        described = eks.describe_cluster(name=name)["cluster"]
        hyperpod = hyperpods.get(described["arn"])
        results.append(
            {
                "eks_cluster_name": name,
                "eks_status": described["status"],
                "kubernetes_version": described.get("version"),
                "vpc_id": (described.get("resourcesVpcConfig") or {}).get("vpcId"),
                "hyperpod_cluster_name": hyperpod["ClusterName"] if hyperpod else None,
                "hyperpod_status": hyperpod["ClusterStatus"] if hyperpod else None,
                "instance_groups": [
                    {
                        "name": g["InstanceGroupName"],
                        "instance_type": g["InstanceType"],
                        "count": g.get("TargetCount", g.get("CurrentCount", 0)),
                    }
                    for g in (hyperpod or {}).get("InstanceGroups", [])
                ],
                "managed_by_instantstart": described.get("tags", {}).get("managed-by") == "instantstart",
            }
        )
    return results


@cloud_read()
def eks_cluster_exists(access: Access, region: str, name: str) -> bool:
    """Whether the team's account has an EKS cluster of that name in the region."""
    eks = team_cloud(access.team, region).client("eks", region)
    try:
        eks.describe_cluster(name=name)
    except eks.exceptions.ResourceNotFoundException:
        return False
    return True
