"""The managed features and the dependencies they install: names (a contract), what each one is in
AWS and Kubernetes, what it requires, and its settings with their documented ranges.

Everything a feature creates is derived from here: its EKS add-on, its identity chain (IAM role +
inline policy + pod identity association), its Helm-equivalent objects, its HyperPod settings.
Readers read exactly these pieces, steps create and remove exactly these pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FEATURE = "feature"
DEPENDENCY = "dependency"

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
HYPERPOD_PRINCIPAL = "hyperpod.sagemaker.amazonaws.com"
FEATURE_TAG = "instantstart:feature"
FEATURE_LABEL = "instantstart.io/feature"


@dataclass(frozen=True)
class Setting:
    """One setting of a feature (an integer with a documented range)."""

    name: str
    minimum: int
    maximum: int
    default: int
    help: str


@dataclass(frozen=True)
class Identity:
    """The chain a feature's pods use to reach AWS: role (trusted by ``trust``) + inline policy
    (``actions`` on ``*``) + the binding (a pod identity association for ``namespace/service_account``)."""

    suffix: str  # role name: <cluster prefix>-<suffix>
    trust: tuple[str, ...]
    actions: tuple[str, ...]
    namespace: str = ""  # "" with service_account "": no association (the role is handed over another way)
    service_account: str = ""
    team_namespace: bool = False  # the association is in the team's namespace (pods of training jobs)


@dataclass(frozen=True)
class Feature:
    name: str
    title: str
    kind: str
    description: str
    requires: tuple[str, ...] = ()
    addon: str = ""  # EKS add-on name
    helm: str = ""  # Helm-equivalent release (kuberay, keda)
    identity: Identity | None = None
    hyperpod: bool = False  # needs a HyperPod cluster (a reason shown on disabled toggles)
    settings: tuple[Setting, ...] = field(default_factory=tuple)

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)


MEMORY_PERCENT = Setting(
    "memory_percent",
    0,
    100,
    20,
    "Share of each instance's memory kept for checkpoints (TieredStorageConfig.InstanceMemoryAllocationPercentage, "
    "0-100).",
)

_CATALOG = (
    Feature(
        "cert_manager",
        "cert-manager",
        DEPENDENCY,
        "Certificates for the operators' webhooks (EKS add-on cert-manager).",
        addon="cert-manager",
    ),
    Feature(
        "pod_identity_agent",
        "EKS Pod Identity Agent",
        DEPENDENCY,
        "Hands IAM roles to pods through pod identity associations (EKS add-on eks-pod-identity-agent).",
        addon="eks-pod-identity-agent",
    ),
    Feature(
        "s3_csi",
        "Mountpoint for S3 CSI driver",
        DEPENDENCY,
        "Mounts S3 buckets as volumes (EKS add-on aws-mountpoint-s3-csi-driver).",
        addon="aws-mountpoint-s3-csi-driver",
    ),
    Feature(
        "fsx_csi",
        "FSx for Lustre CSI driver",
        DEPENDENCY,
        "Mounts FSx for Lustre file systems (EKS add-on aws-fsx-csi-driver).",
        addon="aws-fsx-csi-driver",
    ),
    Feature(
        "metrics_server",
        "Metrics Server",
        DEPENDENCY,
        "Resource metrics for autoscaling (EKS add-on metrics-server).",
        addon="metrics-server",
    ),
    Feature(
        "training_operator",
        "HyperPod training operator",
        FEATURE,
        "Fault-tolerant HyperPodPyTorchJob training (EKS add-on amazon-sagemaker-hyperpod-training-operator) "
        "with its pod identity (sagemaker:DescribeClusterNode).",
        requires=("cert_manager", "pod_identity_agent"),
        addon="amazon-sagemaker-hyperpod-training-operator",
        identity=Identity(
            "trainop",
            (POD_IDENTITY_PRINCIPAL,),
            ("sagemaker:DescribeClusterNode",),
            namespace="aws-hyperpod",
            service_account="hp-training-operator-controller-manager",
        ),
        hyperpod=True,
    ),
    Feature(
        "inference_operator",
        "HyperPod inference operator",
        FEATURE,
        "Managed endpoints (InferenceEndpointConfig) through the EKS add-on amazon-sagemaker-hyperpod-inference, "
        "with its execution role and the TLS certificate bucket permissions.",
        requires=("cert_manager", "s3_csi", "fsx_csi", "metrics_server"),
        addon="amazon-sagemaker-hyperpod-inference",
        identity=Identity(
            "inferop",
            ("sagemaker.amazonaws.com", POD_IDENTITY_PRINCIPAL),
            (
                "s3:GetObject",
                "s3:PutObject",
                "s3:PutObjectTagging",
                "s3:ListBucket",
                "acm:ImportCertificate",
                "acm:AddTagsToCertificate",
                "acm:DeleteCertificate",
                "ecr:GetAuthorizationToken",
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
                "eks-auth:AssumeRoleForPodIdentity",
                "elasticloadbalancing:DescribeLoadBalancers",
                "sagemaker:CreateEndpoint",
                "sagemaker:CreateEndpointConfig",
                "sagemaker:CreateModel",
                "sagemaker:DeleteEndpoint",
                "sagemaker:DeleteEndpointConfig",
                "sagemaker:DeleteModel",
                "sagemaker:DescribeEndpoint",
                "sagemaker:DescribeClusterNode",
            ),
        ),
        hyperpod=True,
    ),
    Feature(
        "tiered_checkpointing",
        "Managed tiered checkpointing",
        FEATURE,
        "Checkpoints to instance memory (UpdateCluster TieredStorageConfig) and the identity training pods use "
        "to write them to S3 (ServiceAccount tiered-checkpointing in the team namespace).",
        requires=("pod_identity_agent",),
        identity=Identity(
            "tiered",
            (POD_IDENTITY_PRINCIPAL,),
            (
                "s3:GetObject",
                "s3:PutObject",
                "s3:DeleteObject",
                "s3:ListBucket",
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:PutLogEvents",
            ),
            service_account="tiered-checkpointing",
            team_namespace=True,
        ),
        hyperpod=True,
        settings=(MEMORY_PERCENT,),
    ),
    Feature(
        "autoscaling",
        "Managed autoscaling (Karpenter)",
        FEATURE,
        "HyperPod managed Karpenter (UpdateCluster AutoScaling Enable, NodeProvisioningMode Continuous) with a "
        "ClusterRole trusted by hyperpod.sagemaker.amazonaws.com; instance groups opt in with autoscaling {min, max} "
        "(a HyperpodNodeClass + NodePool each).",
        identity=Identity(
            "karpenter",
            (HYPERPOD_PRINCIPAL,),
            ("sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"),
        ),
        hyperpod=True,
    ),
    Feature(
        "kuberay",
        "KubeRay operator",
        FEATURE,
        "RayJob, RayCluster and RayService (the kuberay-operator chart's objects).",
        helm="kuberay",
    ),
    Feature(
        "keda",
        "KEDA",
        FEATURE,
        "Event-driven autoscaling (ScaledObject; the keda chart's objects) with the identity it reads metrics with.",
        requires=("pod_identity_agent",),
        helm="keda",
        identity=Identity(
            "keda",
            (POD_IDENTITY_PRINCIPAL,),
            (
                "cloudwatch:GetMetricData",
                "cloudwatch:GetMetricStatistics",
                "cloudwatch:ListMetrics",
                "aps:QueryMetrics",
                "aps:GetLabels",
                "aps:GetSeries",
                "aps:GetMetricMetadata",
            ),
            namespace="keda",
            service_account="keda-operator",
        ),
    ),
    Feature(
        "observability",
        "Observability",
        FEATURE,
        "Container metrics and logs in CloudWatch (EKS add-on amazon-cloudwatch-observability) with its policy.",
        requires=("pod_identity_agent",),
        addon="amazon-cloudwatch-observability",
        identity=Identity(
            "obs",
            (POD_IDENTITY_PRINCIPAL,),
            (
                "cloudwatch:PutMetricData",
                "ec2:DescribeVolumes",
                "ec2:DescribeTags",
                "logs:PutLogEvents",
                "logs:DescribeLogStreams",
                "logs:DescribeLogGroups",
                "logs:CreateLogStream",
                "logs:CreateLogGroup",
                "xray:PutTraceSegments",
            ),
            namespace="amazon-cloudwatch",
            service_account="cloudwatch-agent",
        ),
    ),
)

CATALOG: dict[str, Feature] = {f.name: f for f in _CATALOG}
NAMES = tuple(CATALOG)


def feature(name: str) -> Feature:
    return CATALOG[name]


def required_by(name: str) -> list[str]:
    """The features that require ``name`` directly."""
    return [f.name for f in _CATALOG if name in f.requires]


def closure(name: str) -> list[str]:
    """``name``'s requirements, transitively, dependencies first (``name`` itself last)."""
    out: list[str] = []

    def visit(n: str) -> None:
        for dep in CATALOG[n].requires:
            visit(dep)
        if n not in out:
            out.append(n)

    visit(name)
    return out


def role_name(cluster, f: Feature) -> str:
    """Deterministic IAM role name of a feature's identity (≤ 64 characters)."""
    assert f.identity is not None
    return f"{cluster.resource_prefix[:48]}-{f.identity.suffix}"[:64]


def association_target(cluster, f: Feature) -> tuple[str, str] | None:
    """(namespace, service account) of the feature's pod identity association, if it has one."""
    if f.identity is None or not f.identity.service_account:
        return None
    namespace = cluster.team.slug if f.identity.team_namespace else f.identity.namespace
    return namespace, f.identity.service_account


def base_dependencies(cluster) -> set[str]:
    """Add-ons the cluster create installs: they stay when a feature that used them is disabled."""
    base = {"pod_identity_agent"}
    if cluster.storage == "s3":
        base.add("s3_csi")
    if cluster.storage == "fsx":
        base.add("fsx_csi")
    return base


def feature_tags(cluster, name: str) -> dict[str, str]:
    return {**cluster.tags(), FEATURE_TAG: name}
