"""What the sandbox's EKS knows about each add-on: versions, publisher, default namespace, the
configuration schema (DescribeAddonConfiguration), the pod identity it asks for, and the cluster
pieces it needs before it can run (checked when a create completes, and again while it runs).

Names, namespaces, service accounts and configuration keys are the real ones (AWS docs, the
awsome-distributed-training Terraform modules, the HyperPod CLI's migration script); versions are
real where known (training operator, cert-manager, inference) and plausible otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE_OPERATOR = "amazon-sagemaker-hyperpod-inference"
CERT_MANAGER = "cert-manager"
S3_CSI = "aws-mountpoint-s3-csi-driver"
FSX_CSI = "aws-fsx-csi-driver"
METRICS_SERVER = "metrics-server"

_ROLE_ARN = {"type": "string", "pattern": r"^arn:aws[a-z\-]*:iam::\d{12}:role/.+$"}
_TOLERATIONS = {"type": "array", "items": {"type": "object"}}
_POD_KNOBS = {
    "replicaCount": {"type": "integer", "minimum": 0},
    "tolerations": _TOLERATIONS,
    "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
    "resources": {"type": "object"},
    "affinity": {"type": "object"},
}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


_LOOSE = {"type": "object"}  # add-ons whose schema we do not know: any object is accepted
_METRIC_LEVEL = _object(
    {
        "level": {"type": "string", "enum": ["BASIC", "ADVANCED", "DISABLED"]},
        "scrapeInterval": {"type": "integer", "minimum": 1},
    }
)


@dataclass(frozen=True)
class Dependency:
    """Something an add-on needs in the cluster: satisfied by the EKS add-on `addon` being ACTIVE,
    or by the Kubernetes object the Kubernetes half reports (`kube` = (kind, name), a Helm install)."""

    addon: str
    kube: tuple[str, str]
    code: str
    message: str


@dataclass(frozen=True)
class AddonSpec:
    """One add-on of DescribeAddonVersions and what creating it checks."""

    name: str
    type: str
    publisher: str
    owner: str
    namespace: str
    versions: tuple[str, ...]  # newest (= default) first; "{k8s}" is the cluster's minor version
    pod_identity: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (service account, recommended policies)
    iam_versions: frozenset[str] | None = None  # versions that accept pod identity (None: all when any)
    schema: dict[str, Any] = field(default_factory=lambda: dict(_LOOSE))
    requires_configuration: bool = False
    requires: tuple[Dependency, ...] = ()

    def requires_iam(self, version: str) -> bool:
        if not self.pod_identity:
            return False
        return self.iam_versions is None or version in self.iam_versions


def _policy(name: str) -> str:
    return f"arn:aws:iam::aws:policy/{name}"


_CERT_MANAGER_DEP = Dependency(
    CERT_MANAGER,
    ("crd", "certificates.cert-manager.io"),
    "K8sResourceNotFound",
    'no matches for kind "Certificate" in version "cert-manager.io/v1": cert-manager is not installed on the '
    "cluster. Install the cert-manager add-on and wait for it to be ACTIVE.",
)

CATALOG: dict[str, AddonSpec] = {
    a.name: a
    for a in (
        AddonSpec(
            "vpc-cni",
            "networking",
            "eks",
            "aws",
            "kube-system",
            ("v1.19.2-eksbuild.1", "v1.19.0-eksbuild.1", "v1.18.6-eksbuild.1"),
            pod_identity=(("aws-node", (_policy("AmazonEKS_CNI_Policy"),)),),
        ),
        AddonSpec("coredns", "networking", "eks", "aws", "kube-system", ("v1.11.4-eksbuild.2", "v1.11.3-eksbuild.1")),
        AddonSpec(
            "kube-proxy", "networking", "eks", "aws", "kube-system", ("v{k8s}.0-eksbuild.2", "v{k8s}.0-eksbuild.1")
        ),
        AddonSpec(
            "eks-pod-identity-agent",
            "security",
            "eks",
            "aws",
            "kube-system",
            ("v1.3.8-eksbuild.2", "v1.3.4-eksbuild.1"),
        ),
        AddonSpec(
            CERT_MANAGER,
            "security",
            "cert-manager",
            "community",
            "cert-manager",
            ("v1.18.2-eksbuild.2", "v1.17.2-eksbuild.1"),
            schema=_object(
                {**_POD_KNOBS, "webhook": _object(dict(_POD_KNOBS)), "cainjector": _object(dict(_POD_KNOBS))}
            ),
        ),
        AddonSpec(
            FSX_CSI,
            "storage",
            "eks",
            "aws",
            "kube-system",
            ("v1.5.0-eksbuild.1", "v1.3.0-eksbuild.1"),
            pod_identity=(("fsx-csi-controller-sa", (_policy("AmazonFSxFullAccess"),)),),
        ),
        AddonSpec(
            S3_CSI,
            "storage",
            "s3",
            "aws",
            "kube-system",
            ("v1.14.1-eksbuild.1", "v1.13.0-eksbuild.1"),
            pod_identity=(("s3-csi-driver-sa", (_policy("AmazonS3FullAccess"),)),),
        ),
        AddonSpec(
            METRICS_SERVER,
            "observability",
            "eks",
            "community",
            "kube-system",
            ("v0.7.2-eksbuild.3", "v0.7.2-eksbuild.2"),
            schema=_object({k: _POD_KNOBS[k] for k in ("tolerations", "nodeSelector", "resources", "affinity")}),
        ),
        AddonSpec(
            TRAINING_OPERATOR,
            "machine-learning",
            "sagemaker",
            "aws",
            "aws-hyperpod",
            (
                "v1.2.1-eksbuild.1",
                "v1.2.0-eksbuild.1",
                "v1.1.2-eksbuild.1",
                "v1.1.1-eksbuild.1",
                "v1.1.0-eksbuild.1",
                "v1.0.1-eksbuild.1",
                "v1.0.0-eksbuild.1",
            ),
            pod_identity=(
                (
                    "hp-training-operator-controller-manager",
                    (_policy("AmazonSageMakerHyperPodTrainingOperatorAccess"),),
                ),
            ),
            # as published: v1.2.1 (the default) dropped requiresIamPermissions again, so an inline
            # podIdentityAssociations on it is refused; create the association on its own instead
            iam_versions=frozenset(
                {"v1.2.0-eksbuild.1", "v1.1.2-eksbuild.1", "v1.1.1-eksbuild.1", "v1.1.0-eksbuild.1"}
            ),
            requires=(_CERT_MANAGER_DEP,),
        ),
        AddonSpec(
            INFERENCE_OPERATOR,
            "machine-learning",
            "sagemaker",
            "aws",
            "hyperpod-inference-system",
            ("v1.0.0-eksbuild.1",),
            schema=_object(
                {
                    "executionRoleArn": _ROLE_ARN,
                    "tlsCertificateS3Bucket": {"type": "string", "minLength": 3},
                    "hyperpodClusterArn": {
                        "type": "string",
                        "pattern": r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:cluster/[a-z0-9]+$",
                    },
                    "jumpstartGatedModelDownloadRoleArn": _ROLE_ARN,
                    "alb": _object(
                        {
                            "enabled": {"type": "boolean"},
                            "serviceAccount": _object({"create": {"type": "boolean"}, "roleArn": _ROLE_ARN}),
                        }
                    ),
                    "keda": _object(
                        {
                            "enabled": {"type": "boolean"},
                            "auth": _object(
                                {
                                    "aws": _object(
                                        {"irsa": _object({"enabled": {"type": "boolean"}, "roleArn": _ROLE_ARN})}
                                    )
                                }
                            ),
                        }
                    ),
                },
                required=("executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn"),
            ),
            requires_configuration=True,
            requires=(
                Dependency(
                    S3_CSI,
                    ("csidriver", "s3.csi.aws.com"),
                    "K8sResourceNotFound",
                    'csidrivers.storage.k8s.io "s3.csi.aws.com" not found: the Mountpoint for Amazon S3 CSI '
                    "driver is required. Install the aws-mountpoint-s3-csi-driver add-on first.",
                ),
                Dependency(
                    FSX_CSI,
                    ("csidriver", "fsx.csi.aws.com"),
                    "K8sResourceNotFound",
                    'csidrivers.storage.k8s.io "fsx.csi.aws.com" not found: the Amazon FSx for Lustre CSI '
                    "driver is required. Install the aws-fsx-csi-driver add-on first.",
                ),
                _CERT_MANAGER_DEP,
                Dependency(
                    METRICS_SERVER,
                    ("deployment", "kube-system/metrics-server"),
                    "K8sResourceNotFound",
                    'deployments.apps "metrics-server" not found in namespace "kube-system": the Kubernetes '
                    "Metrics Server is required. Install the metrics-server add-on first.",
                ),
            ),
        ),
        AddonSpec(
            "amazon-sagemaker-hyperpod-observability",
            "observability",
            "sagemaker",
            "aws",
            "hyperpod-observability",
            ("v1.0.3-eksbuild.1", "v1.0.1-eksbuild.1"),
            pod_identity=(
                (
                    "hyperpod-observability-operator-otel-collector",
                    (_policy("AmazonPrometheusRemoteWriteAccess"), _policy("CloudWatchAgentServerPolicy")),
                ),
            ),
            schema=_object(
                {
                    "ampWorkspace": _object(
                        {"prometheusEndpoint": {"type": "string"}, "arn": {"type": "string"}},
                        required=("prometheusEndpoint", "arn"),
                    ),
                    "amgWorkspace": _object({"workspaceName": {"type": "string"}, "arn": {"type": "string"}}),
                    "metricsProvider": {"type": "object", "additionalProperties": _METRIC_LEVEL},
                    "logging": _object({"enabled": {"type": "boolean"}}),
                }
            ),
        ),
        AddonSpec(
            "amazon-cloudwatch-observability",
            "observability",
            "eks",
            "aws",
            "amazon-cloudwatch",
            ("v4.1.0-eksbuild.1", "v3.3.1-eksbuild.1"),
            pod_identity=(("cloudwatch-agent", (_policy("CloudWatchAgentServerPolicy"),)),),
        ),
    )
}

K8S_VERSIONS = ["1.33", "1.32", "1.31", "1.30", "1.29"]


def versions_for(name: str, k8s: str) -> list[str]:
    return [v.format(k8s=k8s) for v in CATALOG[name].versions]
