"""Kubernetes objects every InstantStart cluster gets (applied by the `dependencies` phase)."""

from __future__ import annotations

from .models import Cluster

MANAGED_LABELS = {"app.kubernetes.io/managed-by": "instantstart"}
HYPERPOD_NODES = {"sagemaker.amazonaws.com/compute-type": "hyperpod"}

# EKS add-ons of every cluster, in install order; storage drivers are added by choice.
BASE_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
STORAGE_ADDONS = {"s3": "aws-mountpoint-s3-csi-driver", "fsx": "aws-fsx-csi-driver"}


def addons_for(cluster: Cluster) -> list[str]:
    names = list(BASE_ADDONS)
    if cluster.storage in STORAGE_ADDONS:
        names.append(STORAGE_ADDONS[cluster.storage])
    return names


def team_namespace(cluster: Cluster) -> str:
    return cluster.team.slug


def _daemonset(
    name: str,
    namespace: str,
    image: str,
    *,
    node_selector: dict,
    args: list[str] | None = None,
    privileged: bool = False,
    volumes: list[dict] | None = None,
    mounts: list[dict] | None = None,
) -> dict:
    labels = {"app.kubernetes.io/name": name, **MANAGED_LABELS}
    container = {
        "name": name,
        "image": image,
        "args": args or [],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    }
    if privileged:
        container["securityContext"] = {"privileged": True}
    if mounts:
        container["volumeMounts"] = mounts
    spec = {
        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "updateStrategy": {"type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "nodeSelector": node_selector,
                "priorityClassName": "system-node-critical",
                "tolerations": [{"operator": "Exists"}],
                "containers": [container],
                **({"volumes": volumes} if volumes else {}),
            },
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def base_manifests(cluster: Cluster) -> list[dict]:
    """Namespaces, the HyperPod health monitoring agent and the GPU and EFA device plugins."""
    device_dir = [{"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}]
    device_mount = [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aws-hyperpod", "labels": MANAGED_LABELS}},
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": team_namespace(cluster),
                "labels": {**MANAGED_LABELS, "instantstart/team": cluster.team.slug},
            },
        },
        _daemonset(
            "health-monitoring-agent",
            "aws-hyperpod",
            f"905418368575.dkr.ecr.{cluster.region}.amazonaws.com/hyperpod-health-monitoring-agent:1.0.742.0",
            node_selector=HYPERPOD_NODES,
            args=["--enable-k8s-exporter=false"],
            privileged=True,
        ),
        _daemonset(
            "nvidia-device-plugin-daemonset",
            "kube-system",
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
            node_selector={**HYPERPOD_NODES},
            volumes=device_dir,
            mounts=device_mount,
        ),
        _daemonset(
            "aws-efa-k8s-device-plugin-daemonset",
            "kube-system",
            f"602401143452.dkr.ecr.{cluster.region}.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6",
            node_selector={**HYPERPOD_NODES},
            volumes=device_dir,
            mounts=device_mount,
            privileged=True,
        ),
    ]
