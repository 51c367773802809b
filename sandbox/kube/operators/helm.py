"""KubeRay and KEDA, which real clusters get from Helm charts (no EKS add-on exists for them): the
objects a Helm-equivalent install applies (names as the upstream charts render them with the
release names `kuberay-operator` and `keda`), documented in sandbox/kube/README.md for the product,
which applies the same objects with server-side apply.

The operators act only while their Deployment (`kuberay-operator` / `keda-operator`, any namespace)
has a ready replica and their CRDs are served; deleting what was applied removes them.
`KubeWorld.set_addons` also accepts the release names as a shorthand that installs these objects
directly (tests of the Kubernetes half only; the AWS half never sends them).
"""

from __future__ import annotations

from typing import Any

from .crds import KEDA_CRDS, RAY_CRDS

Obj = dict[str, Any]

KUBERAY = "kuberay-operator"
KEDA = "keda"
KUBERAY_IMAGE = "quay.io/kuberay/operator:v1.4.2"
KEDA_IMAGE = "ghcr.io/kedacore/keda:2.17.1"
DEFAULT_NAMESPACE = {KUBERAY: "kuberay-operator", KEDA: "keda"}


def _rbac(name: str, ns: str, rules: list[Obj]) -> list[Obj]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        },
    ]


def _operator(name: str, ns: str, image: str, release: str, command: list[str], port: int) -> Obj:
    select = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": release}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {**select, "app.kubernetes.io/managed-by": "Helm"}},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": select},
            "template": {
                "metadata": {"labels": {**select, "app.kubernetes.io/component": name}},
                "spec": {
                    "serviceAccountName": name,
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            "command": command,
                            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}},
                        }
                    ],
                },
            },
        },
    }


def release_objects(release: str, namespace: str | None = None) -> list[Any]:
    """Namespace, ServiceAccount, ClusterRole(+Binding), Deployment, and the CRDs (as upstream file
    names under sandbox/kube/crds) of a Helm-equivalent install."""
    ns = namespace or DEFAULT_NAMESPACE[release]
    namespace_obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    if release == KUBERAY:
        rules = [
            {"apiGroups": ["ray.io"], "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["pods", "services", "events", "serviceaccounts"], "verbs": ["*"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]},
        ]
        return [
            namespace_obj,
            *_rbac(KUBERAY, ns, rules),
            _operator(KUBERAY, ns, KUBERAY_IMAGE, KUBERAY, ["/manager"], 8080),
            *RAY_CRDS,
        ]
    if release == KEDA:
        rules = [
            {"apiGroups": ["keda.sh"], "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["*"]},
            {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get", "list", "watch", "update", "patch"]},
        ]
        return [
            namespace_obj,
            *_rbac("keda-operator", ns, rules),
            _operator("keda-operator", ns, KEDA_IMAGE, KEDA, ["/keda"], 8080),
            *KEDA_CRDS,
        ]
    raise KeyError(release)
