"""Operators that EKS add-ons install: the HyperPod training CRD (its operator: test_training.py),
HyperPod inference (InferenceEndpointConfig) and KEDA (ScaledObject); KubeRay is in test_rayjobs.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.kube.operators import INFERENCE_ADDON

from .conftest import KEY, Kube, wait_for
from .jobs import hpjob

TRAINING = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE = INFERENCE_ADDON  # the add-on's name lives in one place
G, V, P = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"


def _cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype and c["status"] == "True":
            return c
    return None


def _get(kube: Kube, name: str) -> dict[str, Any]:
    return kube.custom.get_namespaced_custom_object(G, V, "default", P, name)


@pytest.fixture
def training(world_factory: Callable[..., Kube]) -> Kube:
    return world_factory(addons={TRAINING})


def test_hyperpod_schema_and_operator_absent(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory()
    with pytest.raises(ApiException) as e:  # no add-on, no CRD
        kube.custom.create_namespaced_custom_object(G, V, "default", P, hpjob("x"))
    assert e.value.status == 404
    kube.world.set_addons(KEY, {TRAINING})
    bad = hpjob("bad")
    bad["spec"]["replicaSpecs"][0]["replicas"] = "two"
    bad["spec"]["runPolicy"]["cleanPodPolicy"] = "Sometimes"
    with pytest.raises(ApiException) as e:
        kube.custom.create_namespaced_custom_object(G, V, "default", P, bad)
    fields = {c["field"] for c in json.loads(e.value.body)["details"]["causes"]}
    assert fields == {"spec.replicaSpecs[0].replicas", "spec.runPolicy.cleanPodPolicy"}
    # operator removed (as `aws eks delete-addon`): its CRD goes, and the jobs with it
    kube.custom.create_namespaced_custom_object(G, V, "default", P, hpjob("doomed"))
    kube.world.set_addons(KEY, set())
    with pytest.raises(ApiException) as e:
        kube.custom.list_namespaced_custom_object(G, V, "default", P)
    assert e.value.status == 404
    assert json.loads(e.value.body)["message"] == "the server could not find the requested resource"
    with pytest.raises(ApiException) as e:
        kube.ext.read_custom_resource_definition("hyperpodpytorchjobs.sagemaker.amazonaws.com")
    assert e.value.status == 404


def test_inference_endpoint_and_keda(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(addons={INFERENCE, "keda"})
    iec = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "llama-ep"},
        "spec": {
            "modelName": "llama-3-8b",
            "endpointName": "llama-ep",
            "instanceType": "ml.p5.48xlarge",
            "replicas": 1,
            "invocationEndpoint": "v1/chat/completions",
            "modelSourceConfig": {
                "modelSourceType": "s3",
                "s3Storage": {"bucketName": "models", "region": "us-west-2"},
                "modelLocation": "llama-3-8b",
            },
            "worker": {
                "image": "vllm/vllm-openai:v0.8.5",
                "modelInvocationPort": {"containerPort": 8000},
                "modelVolumeMount": {"name": "model-weights"},
                "resources": {"limits": {"nvidia.com/gpu": 1}},
            },
        },
    }
    bad = json.loads(json.dumps(iec))
    del bad["spec"]["worker"]
    with pytest.raises(ApiException) as e:
        kube.custom.create_namespaced_custom_object(
            "inference.sagemaker.aws.amazon.com", "v1", "default", "inferenceendpointconfigs", bad
        )
    assert e.value.status == 422
    kube.custom.create_namespaced_custom_object(
        "inference.sagemaker.aws.amazon.com", "v1", "default", "inferenceendpointconfigs", iec
    )

    def complete() -> dict[str, Any] | None:
        o = kube.custom.get_namespaced_custom_object(
            "inference.sagemaker.aws.amazon.com", "v1", "default", "inferenceendpointconfigs", "llama-ep"
        )
        return o if (o.get("status") or {}).get("state") == "DeploymentComplete" else None

    ep = wait_for(complete, what="DeploymentComplete")
    assert (
        ep["status"]["endpoints"]["sagemaker"]["endpointArn"]
        == "arn:aws:sagemaker:us-west-2:111122223333:endpoint/llama-ep"
    )
    dep = kube.apps.read_namespaced_deployment("llama-ep", "default")
    assert dep.status.ready_replicas == 1
    # the Service points at the operator's reverse-proxy sidecar, which fronts the model container
    assert kube.core.read_namespaced_service("llama-ep-service", "default").spec.ports[0].target_port == 8081
    pod = kube.core.list_namespaced_pod("default", label_selector="app=llama-ep").items[0]
    assert [c.name for c in pod.spec.containers] == ["llama-ep", "sidecar-reverse-proxy", "otel-collector"]
    log = kube.core.read_namespaced_pod_log(pod.metadata.name, "default", container="llama-ep")
    assert "Application startup complete." in log

    so = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "llama-so"},
        "spec": {
            "scaleTargetRef": {"name": "llama-ep"},
            "minReplicaCount": 1,
            "maxReplicaCount": 4,
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": "http://prom:9090",
                        "query": "sum(rate(requests[1m]))",
                        "threshold": "10",
                    },
                }
            ],
        },
    }
    kube.custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", so)
    ready = wait_for(
        lambda: _cond(
            kube.custom.get_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", "llama-so"),
            "Ready",
        ),
        what="ScaledObject Ready",
    )
    assert ready["reason"] == "ScaledObjectReady"
    hpa = kube.raw("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/keda-hpa-llama-so")
    assert hpa[0] == 200 and hpa[1]["spec"]["maxReplicas"] == 4


def test_jumpstart_model_deploys(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(addons={INFERENCE})
    jsm = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "JumpStartModel",
        "metadata": {"name": "mistral"},
        "spec": {
            "model": {"modelId": "huggingface-llm-mistral-7b-instruct", "acceptEula": True},
            "server": {"instanceType": "ml.p5.48xlarge"},
            "sageMakerEndpoint": {"name": "mistral-ep"},
        },
    }
    kube.custom.create_namespaced_custom_object(
        "inference.sagemaker.aws.amazon.com", "v1", "default", "jumpstartmodels", jsm
    )
    done = wait_for(
        lambda: (
            (
                o := kube.custom.get_namespaced_custom_object(
                    "inference.sagemaker.aws.amazon.com", "v1", "default", "jumpstartmodels", "mistral"
                )
            )
            .get("status", {})
            .get("state")
            == "DeploymentComplete"
            and o
        ),
        what="JumpStartModel deployed",
    )
    assert done["status"]["endpoints"]["sagemaker"]["endpointArn"].endswith(":endpoint/mistral-ep")
    pod = kube.core.list_namespaced_pod("default", label_selector="app=mistral").items[0]
    assert pod.spec.node_selector == {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}


def test_node_agents_of_the_base_add_ons_run_on_the_nodes_network(world_factory: Callable[..., Kube]) -> None:
    """aws-node, kube-proxy and the pod identity agent use hostNetwork, as EKS ships them: their pods
    have the node's address (they take none of the VPC CNI's pod addresses)."""
    kube = world_factory(addons={"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})

    def agents() -> list:
        pods = [
            p
            for p in kube.core.list_namespaced_pod("kube-system").items
            if p.metadata.name.startswith(("aws-node", "kube-proxy", "eks-pod-identity-agent"))
        ]
        return pods if len(pods) == 6 and all(p.status.phase == "Running" for p in pods) else []

    pods = wait_for(agents, what="node agents running on both nodes")
    assert all(p.spec.host_network for p in pods)
    assert all(p.status.pod_ip == p.status.host_ip for p in pods)
