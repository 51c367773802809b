"""How a user connects to a cluster: a kubeconfig built from DescribeCluster. Reads only.

The kubeconfig carries no credential: on AWS its user runs `aws eks get-token` (the user's own AWS
identity, mapped by the cluster's access entries); the sandbox's plain-HTTP endpoints on 127.0.0.1
let kubectl in without a token, so its kubeconfig has no user command at all.
"""

from __future__ import annotations

import yaml

from instantstart.cloud.aws import team_cloud
from instantstart.errors import StateConflict, cloud_read

from ..manifests import team_namespace
from ..models import Cluster


@cloud_read()
def kubeconfig(cluster: Cluster) -> str:
    """A kubeconfig for the cluster's API server, endpoint and CA as EKS reports them now."""
    if not cluster.eks_cluster_name:
        raise StateConflict("The cluster has no EKS control plane yet: its create has not reached the EKS phase.")
    cloud = team_cloud(cluster.team, cluster.region)
    eks = cloud.client("eks")
    try:
        described = eks.describe_cluster(name=cluster.eks_cluster_name)["cluster"]
    except eks.exceptions.ResourceNotFoundException:
        raise StateConflict(
            f"EKS has no cluster {cluster.eks_cluster_name}: it changed outside InstantStart; look at its drift."
        ) from None
    endpoint = described["endpoint"]
    entry: dict = {"server": endpoint}
    ca = (described.get("certificateAuthority") or {}).get("data")
    if endpoint.startswith("https://") and ca:
        entry["certificate-authority-data"] = ca
    user: dict = {}
    if endpoint.startswith("https://"):
        user = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "aws",
                "args": ["eks", "get-token", "--region", cluster.region, "--cluster-name", cluster.eks_cluster_name],
                "interactiveMode": "Never",
            }
        }
    name = cluster.eks_cluster_arn or cluster.eks_cluster_name
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": entry}],
        "users": [{"name": name, "user": user}],
        "contexts": [
            {"name": cluster.name, "context": {"cluster": name, "user": name, "namespace": team_namespace(cluster)}}
        ],
        "current-context": cluster.name,
    }
    return yaml.safe_dump(config, sort_keys=False)
