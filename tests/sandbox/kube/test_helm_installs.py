"""KubeRay and KEDA installed the way the product installs them (README: "Helm-equivalent installs"):
the documented objects applied with server-side apply through the official client's DynamicClient.
Their kinds are refused with the real 404 before; the operator acts only once its Deployment has a
ready replica; deleting what was applied removes the operator and its kinds (with their objects)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from sandbox.kube.operators.crds import load_crd

from .conftest import Kube, deployment, wait_for

MANAGER = "instantstart"


def _operator(name: str, ns: str, image: str) -> list[dict[str, Any]]:
    """What the README lists for one operator: namespace, service account, RBAC, Deployment."""
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "instantstart"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": name,
                        "containers": [
                            {
                                "name": name,
                                "image": image,
                                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                            }
                        ],
                    },
                },
            },
        },
    ]


def _crd(filename: str) -> dict[str, Any]:
    crd = load_crd(filename)
    return {
        "apiVersion": crd["apiVersion"],
        "kind": crd["kind"],
        "metadata": {"name": crd["metadata"]["name"]},
        "spec": crd["spec"],
    }


def _apply(dyn: DynamicClient, manifests: list[dict[str, Any]]) -> None:
    for m in manifests:
        resource = dyn.resources.get(api_version=m["apiVersion"], kind=m["kind"])
        ns = m["metadata"].get("namespace") if resource.namespaced else None
        dyn.server_side_apply(resource, body=m, namespace=ns, field_manager=MANAGER, force_conflicts=True)


def _delete(dyn: DynamicClient, manifests: list[dict[str, Any]]) -> None:
    for m in reversed(manifests):
        resource = dyn.resources.get(api_version=m["apiVersion"], kind=m["kind"])
        ns = m["metadata"].get("namespace") if resource.namespaced else None
        dyn.delete(resource, name=m["metadata"]["name"], namespace=ns)


def _refused_404(call: Callable[[], Any]) -> None:
    with pytest.raises(ApiException) as e:
        call()
    assert e.value.status == 404
    assert json.loads(e.value.body)["message"] == "the server could not find the requested resource"


def _rayjob(name: str) -> dict[str, Any]:
    pod = {
        "spec": {
            "containers": [{"name": "ray", "image": "rayproject/ray:2.41.0", "resources": {"requests": {"cpu": "1"}}}]
        }
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "annotations": {"sandbox.instantstart.io/run-seconds": "100000"}},
        "spec": {
            "entrypoint": "python train.py",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": pod},
                "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "rayStartParams": {}, "template": pod}],
            },
        },
    }


def test_kuberay_applied_with_server_side_apply_runs_only_while_its_deployment_is_ready(
    world_factory: Callable[..., Kube],
) -> None:
    kube = world_factory()
    rayjobs = ("ray.io", "v1", "default", "rayjobs")
    _refused_404(lambda: kube.custom.create_namespaced_custom_object(*rayjobs, _rayjob("early")))

    crds = [_crd(f) for f in ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml")]
    operator = _operator("kuberay-operator", "kuberay-operator", "quay.io/kuberay/operator:v1.4.2")
    dyn = DynamicClient(kube.api)
    _apply(dyn, crds)
    kube.custom.create_namespaced_custom_object(*rayjobs, _rayjob("waiting"))
    time.sleep(0.3)  # no operator yet: the job is stored and nothing reconciles it
    assert "status" not in kube.custom.get_namespaced_custom_object(*rayjobs, "waiting")

    _apply(dyn, operator)
    wait_for(
        lambda: (
            (kube.apps.read_namespaced_deployment("kuberay-operator", "kuberay-operator").status.ready_replicas or 0)
            >= 1
        )
    )
    wait_for(
        lambda: (
            (kube.custom.get_namespaced_custom_object(*rayjobs, "waiting").get("status") or {}).get("jobStatus")
            == "RUNNING"
        ),
        what="RayJob running once the operator is up",
    )
    managed = kube.apps.read_namespaced_deployment("kuberay-operator", "kuberay-operator").metadata.managed_fields
    assert managed[0].manager == MANAGER and managed[0].operation == "Apply"

    # disable: delete what was applied; the kinds go, with their objects
    _delete(dyn, operator + crds)
    dyn.resources.invalidate_cache()
    _refused_404(lambda: kube.custom.list_namespaced_custom_object(*rayjobs))
    wait_for(lambda: not [n for n in kube.core.list_namespace().items if n.metadata.name == "kuberay-operator"])


def test_keda_applied_then_removed(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory()
    scaled = ("keda.sh", "v1alpha1", "default", "scaledobjects")
    so = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "router"},
        "spec": {
            "scaleTargetRef": {"name": "router"},
            "triggers": [
                {"type": "prometheus", "metadata": {"serverAddress": "http://p:9090", "query": "x", "threshold": "5"}}
            ],
        },
    }
    _refused_404(lambda: kube.custom.create_namespaced_custom_object(*scaled, so))
    manifests = [
        _crd("keda.sh_scaledobjects.yaml"),
        *_operator("keda-operator", "keda", "ghcr.io/kedacore/keda:2.17.1"),
    ]
    dyn = DynamicClient(kube.api)
    _apply(dyn, manifests)
    kube.apps.create_namespaced_deployment("default", deployment("router"))
    kube.custom.create_namespaced_custom_object(*scaled, so)

    def ready() -> bool:
        obj = kube.custom.get_namespaced_custom_object(*scaled, "router")
        return any(
            c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions", [])
        )

    wait_for(ready, what="ScaledObject Ready once keda-operator is up")
    _apply(dyn, manifests)  # applying again changes nothing
    _delete(dyn, manifests)
    _refused_404(lambda: kube.custom.list_namespaced_custom_object(*scaled))


def test_operator_without_nodes_does_not_reconcile(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(nodes=0, addons={"amazon-sagemaker-hyperpod-training-operator"})
    job = {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": "stuck"},
        "spec": {
            "replicaSpecs": [
                {"name": "pod", "replicas": 1, "template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}}
            ]
        },
    }
    kube.custom.create_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs", job)
    time.sleep(0.3)  # the operator's own pod cannot run anywhere: nothing reconciles the job
    got = kube.custom.get_namespaced_custom_object(
        "sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs", "stuck"
    )
    assert "status" not in got
    pods = kube.core.list_namespaced_pod("aws-hyperpod").items
    assert [p.status.phase for p in pods] == ["Pending"]
