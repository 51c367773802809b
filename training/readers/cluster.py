"""Kubernetes clients of a job's cluster (read-only use here; steps write through the same clients)."""

from __future__ import annotations

from kubernetes import client as k8s

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client


def kube(cluster: Cluster) -> k8s.ApiClient:
    return api_client(team_cloud(cluster.team, cluster.region), cluster.eks_cluster_name, cluster.region)
