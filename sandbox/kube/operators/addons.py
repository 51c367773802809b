"""What each EKS add-on puts into the cluster while it runs: its namespace, Deployments and DaemonSets
(names as the real add-ons use them), CRDs and CSIDrivers. Some parts follow the add-on's
configuration values (the inference add-on bundles KEDA and the ALB controller unless
`keda.enabled` / `alb.enabled` is false).
"""

from __future__ import annotations

from typing import Any

from .crds import CERT_MANAGER_CRDS, HYPERPOD_PYTORCHJOB_CRD, INFERENCE_CRDS, KEDA_CRDS

Obj = dict[str, Any]

TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"

ECR = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
FSX_IMAGE = "public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver:v1.5.0"
S3_CSI_IMAGE = "public.ecr.aws/mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver:v1.14.1"
KEDA_VERSION = "2.17.1"


def deployment(name: str, ns: str, image: str, replicas: int = 1, container: str = "manager") -> Obj:
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "tolerations": [{"operator": "Exists", "key": "CriticalAddonsOnly"}],
                    "containers": [
                        {"name": container, "image": image, "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}
                    ],
                },
            },
        },
    }


def daemonset(name: str, ns: str, image: str, *, host_network: bool = False) -> Obj:
    """A DaemonSet as the add-on ships it; node agents (CNI, kube-proxy, pod identity) use the node's network."""
    labels = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    **({"hostNetwork": True} if host_network else {}),
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {"name": name, "image": image, "resources": {"requests": {"cpu": "25m", "memory": "32Mi"}}}
                    ],
                },
            },
        },
    }


def csi_driver(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"attachRequired": False, "podInfoOnMount": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", **spec},
    }


def _enabled(config: Obj, key: str) -> bool:
    part = config.get(key)
    return not (isinstance(part, dict) and part.get("enabled") is False)


def _inference(config: Obj) -> list[Any]:
    ns = "hyperpod-inference-system"
    out: list[Any] = [
        deployment(
            "hyperpod-inference-controller-manager", ns, "public.ecr.aws/sagemaker/hyperpod-inference-operator:v3.2"
        ),
        *INFERENCE_CRDS,
    ]
    if _enabled(config, "alb"):
        out.append(
            deployment("hyperpod-inference-alb", ns, "public.ecr.aws/eks/aws-load-balancer-controller:v2.13.2", 2)
        )
    if _enabled(config, "keda"):
        out += [
            deployment("keda-operator", ns, f"ghcr.io/kedacore/keda:{KEDA_VERSION}", container="keda-operator"),
            deployment(
                "keda-operator-metrics-apiserver",
                ns,
                f"ghcr.io/kedacore/keda-metrics-apiserver:{KEDA_VERSION}",
                container="keda-operator-metrics-apiserver",
            ),
            deployment(
                "keda-admission-webhooks",
                ns,
                f"ghcr.io/kedacore/keda-admission-webhooks:{KEDA_VERSION}",
                container="keda-admission-webhooks",
            ),
            *KEDA_CRDS,
        ]
    return out


def addon_objects(name: str, config: Obj) -> tuple[str, list[Any]] | None:
    """(namespace, objects) the add-on runs; objects are manifests, or upstream CRD file names."""
    if name == INFERENCE_ADDON:
        return "hyperpod-inference-system", _inference(config)
    spec = _STATIC.get(name)
    return None if spec is None else (spec[0], list(spec[1]))


_STATIC: dict[str, tuple[str, list[Any]]] = {
    "vpc-cni": (
        "kube-system",
        [daemonset("aws-node", "kube-system", f"{ECR}/amazon-k8s-cni:v1.19.2", host_network=True)],
    ),
    "kube-proxy": (
        "kube-system",
        [daemonset("kube-proxy", "kube-system", f"{ECR}/eks/kube-proxy:v1.31.3-eksbuild.2", host_network=True)],
    ),
    "coredns": ("kube-system", [deployment("coredns", "kube-system", f"{ECR}/eks/coredns:v1.11.4", 2)]),
    "eks-pod-identity-agent": (
        "kube-system",
        [
            daemonset(
                "eks-pod-identity-agent", "kube-system", f"{ECR}/eks/eks-pod-identity-agent:0.1.10", host_network=True
            )
        ],
    ),
    "cert-manager": (
        "cert-manager",
        [
            deployment("cert-manager", "cert-manager", "quay.io/jetstack/cert-manager-controller:v1.18.2"),
            deployment("cert-manager-webhook", "cert-manager", "quay.io/jetstack/cert-manager-webhook:v1.18.2"),
            deployment("cert-manager-cainjector", "cert-manager", "quay.io/jetstack/cert-manager-cainjector:v1.18.2"),
            *CERT_MANAGER_CRDS,
        ],
    ),
    "metrics-server": (
        "kube-system",
        [deployment("metrics-server", "kube-system", "registry.k8s.io/metrics-server/metrics-server:v0.7.2")],
    ),
    "aws-fsx-csi-driver": (
        "kube-system",
        [
            deployment("fsx-csi-controller", "kube-system", FSX_IMAGE, 2),
            daemonset("fsx-csi-node", "kube-system", FSX_IMAGE),
            csi_driver("fsx.csi.aws.com"),
        ],
    ),
    "aws-mountpoint-s3-csi-driver": (
        "kube-system",
        [daemonset("s3-csi-node", "kube-system", S3_CSI_IMAGE), csi_driver("s3.csi.aws.com", podInfoOnMount=True)],
    ),
    "amazon-sagemaker-hyperpod-observability": (
        "hyperpod-observability",
        [
            deployment(
                "hyperpod-observability-controller-manager",
                "hyperpod-observability",
                "public.ecr.aws/sagemaker/hyperpod-observability-operator:v1.0.3",
            ),
            deployment(
                "hyperpod-observability-central-collector",
                "hyperpod-observability",
                "public.ecr.aws/aws-observability/aws-otel-collector:v0.43.1",
            ),
            daemonset(
                "hyperpod-observability-node-collector",
                "hyperpod-observability",
                "public.ecr.aws/aws-observability/aws-otel-collector:v0.43.1",
            ),
        ],
    ),
    "amazon-cloudwatch-observability": (
        "amazon-cloudwatch",
        [
            deployment(
                "amazon-cloudwatch-observability-controller-manager",
                "amazon-cloudwatch",
                "public.ecr.aws/cloudwatch-agent/cloudwatch-agent-operator:2.1.0",
            ),
            daemonset(
                "cloudwatch-agent", "amazon-cloudwatch", "public.ecr.aws/cloudwatch-agent/cloudwatch-agent:1.300"
            ),
        ],
    ),
    TRAINING_ADDON: (
        "aws-hyperpod",
        [
            deployment(
                "hp-training-operator-controller-manager",
                "aws-hyperpod",
                "public.ecr.aws/sagemaker/hyperpod-training-operator:v1.2.1",
            ),
            HYPERPOD_PYTORCHJOB_CRD,
        ],
    ),
}
