"""Whether a cluster has the feature a workload needs, read from the cluster now (never from a record).

Training and inference call :func:`require_feature` before they submit anything: a
HyperPodPyTorchJob, RayJob, InferenceEndpointConfig or ScaledObject sent to a cluster without its
operator is refused by Kubernetes with a bare 404, so the product says which feature to enable and
which tool enables it instead. A feature counts as present when the API server serves the custom
resource its operator owns (that is what a submission needs), whoever installed it.
"""

from __future__ import annotations

from kubernetes import client as k8s

from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from instantstart.errors import StateConflict, cloud_read

# feature name -> the CRD its operator serves (what a workload of that kind needs)
FEATURE_CRDS = {
    "training_operator": "hyperpodpytorchjobs.sagemaker.amazonaws.com",
    "inference_operator": "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com",
    "kuberay": "rayjobs.ray.io",
    "keda": "scaledobjects.keda.sh",
}
ENABLE_TOOL = "update_features"


class FeatureRequired(StateConflict):
    """The cluster lacks a feature the request needs (409 ``feature_required``)."""

    default_code = "feature_required"

    def __init__(self, feature: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the {feature} feature, which is not enabled on this cluster.",
            hint=(
                f'Enable it first: PATCH /api/v1/clusters/{{id}}/features/ {{"{feature}": true}} '
                f"(MCP tool {ENABLE_TOOL}, or the cluster's Advanced features tab)."
            ),
        )
        self.feature = feature


@cloud_read()
def has_feature(cluster, feature: str) -> bool:
    """True when the cluster's API server serves the custom resource of ``feature``'s operator."""
    crd = FEATURE_CRDS[feature]
    if not cluster.eks_cluster_name:
        return False
    api = api_client(team_cloud(cluster.team, cluster.region), cluster.eks_cluster_name, cluster.region)
    try:
        k8s.ApiextensionsV1Api(api).read_custom_resource_definition(crd)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def require_feature(cluster, feature: str, purpose: str) -> None:
    """Raise :class:`FeatureRequired` unless ``feature`` is on (``purpose``: "A training job", …)."""
    if not has_feature(cluster, feature):
        raise FeatureRequired(feature, purpose)
