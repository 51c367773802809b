"""Operators that EKS add-ons install: HyperPod training (HyperPodPyTorchJob), KubeRay (RayJob),
HyperPod inference (InferenceEndpointConfig) and KEDA (ScaledObject)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.kube.operators import INFERENCE_ADDON

from .conftest import KEY, Kube, gpu_node, wait_for

TRAINING = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE = INFERENCE_ADDON  # the add-on's name lives in one place
G, V, P = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"


def hpjob(name: str, replicas: int = 2, run_seconds: int = 300, **run_policy: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name, "annotations": {"sandbox.instantstart.io/run-seconds": str(run_seconds)}},
        "spec": {
            "nprocPerNode": "8",
            "replicaSpecs": [
                {
                    "name": "pod",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "nodeSelector": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/train:1",
                                    "command": ["torchrun", "train.py"],
                                    "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}},
                                    "volumeMounts": [{"name": "s3", "mountPath": "/s3"}],
                                }
                            ],
                            "volumes": [{"name": "s3", "persistentVolumeClaim": {"claimName": "s3-claim"}}],
                        }
                    },
                }
            ],
            "runPolicy": {"cleanPodPolicy": "None", **run_policy},
        },
    }


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


def test_hyperpod_job_runs_logs_and_succeeds(training: Kube) -> None:
    kube = training
    crd = kube.ext.read_custom_resource_definition("hyperpodpytorchjobs.sagemaker.amazonaws.com")
    assert crd.spec.names.kind == "HyperPodPyTorchJob" and crd.spec.scope == "Namespaced"
    kube.custom.create_namespaced_custom_object(G, V, "default", P, hpjob("llama", run_seconds=1500))

    def running() -> bool:
        pods = kube.core.list_namespaced_pod("default", label_selector="sagemaker.amazonaws.com/job-name=llama")
        return sorted(p.metadata.name for p in pods.items if p.status.phase in ("Running", "Succeeded")) == [
            "llama-pod-0",
            "llama-pod-1",
        ]

    wait_for(running, what="job pods running")
    wait_for(lambda: _cond(_get(kube, "llama"), "Running") or _cond(_get(kube, "llama"), "Succeeded"))
    pod = kube.core.read_namespaced_pod("llama-pod-1", "default")
    env = {e.name: e.value for e in pod.spec.containers[0].env}
    assert env["MASTER_ADDR"] == "llama-pod-0" and env["WORLD_SIZE"] == "16"
    assert pod.metadata.owner_references[0].kind == "HyperPodPyTorchJob"

    wait_for(lambda: _cond(_get(kube, "llama"), "Succeeded"), what="Succeeded")
    job = _get(kube, "llama")
    assert job["status"]["restartCount"] == 0 and job["status"]["completionTime"]
    logs = kube.core.read_namespaced_pod_log("llama-pod-0", "default")
    steps = [line for line in logs.splitlines() if line.startswith("step=")]
    assert len(steps) >= 50 and "loss=" in steps[0] and "tokens/s=" in steps[0] and " lr=" in steps[0]
    assert "training complete" in logs
    # losses go down
    first, last = (float(s.split("loss=")[1].split()[0]) for s in (steps[0], steps[-1]))
    assert last < first


def test_hyperpod_pod_crash_restarts_then_fails_past_retry_limit(training: Kube) -> None:
    kube = training
    kube.custom.create_namespaced_custom_object(
        G, V, "default", P, hpjob("fragile", run_seconds=60000, jobMaxRetryCount=1)
    )
    wait_for(lambda: _cond(_get(kube, "fragile"), "Running"), what="Running")
    first_uid = kube.core.read_namespaced_pod("fragile-pod-0", "default").metadata.uid
    assert kube.world.inject_pod_crash(KEY, "default", "fragile-pod-1") == ["fragile-pod-1"]

    def restarted() -> dict[str, Any] | None:
        job = _get(kube, "fragile")
        return job if job["status"].get("restartCount") == 1 and _cond(job, "Running") else None

    job = wait_for(restarted, what="restart and running again")
    assert job["status"]["latestFaultyPodInstanceList"][0]["podName"] == "fragile-pod-1"
    assert job["status"]["restartStatus"]["lastRestartType"] == "FullJobRestart"
    assert kube.core.read_namespaced_pod("fragile-pod-0", "default").metadata.uid != first_uid
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=fragile").items
    assert {"PodFailed", "JobRestarting"} <= {e.reason for e in events}

    kube.world.inject_pod_crash(KEY, "default", "fragile-pod-0")
    failed = wait_for(lambda: _cond(_get(kube, "fragile"), "Failed"), what="Failed")
    assert failed["reason"] == "MaxRetryCountExceeded"
    assert _get(kube, "fragile")["status"]["restartCount"] == 1


def test_hyperpod_pod_level_restart_policy(training: Kube) -> None:
    kube = training
    kube.custom.create_namespaced_custom_object(
        G,
        V,
        "default",
        P,
        hpjob("elastic", run_seconds=60000, jobMaxRetryCount=3, restartPolicy={"numRestartBeforeFullJobRestart": 1}),
    )
    wait_for(lambda: _cond(_get(kube, "elastic"), "Running"))
    keep = kube.core.read_namespaced_pod("elastic-pod-0", "default").metadata.uid
    kube.world.inject_pod_crash(KEY, "default", "elastic-pod-1")
    job = wait_for(
        lambda: (j := _get(kube, "elastic"))["status"].get("restartCount") == 1 and _cond(j, "Running") and j
    )
    assert job["status"]["restartStatus"]["lastRestartType"] == "PodLevelRestart"
    assert kube.core.read_namespaced_pod("elastic-pod-0", "default").metadata.uid == keep


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


def _rayjob(name: str) -> dict[str, Any]:
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "ray",
                    "image": "rayproject/ray:2.41.0",
                    "resources": {"requests": {"cpu": "2", "memory": "4Gi"}},
                }
            ]
        }
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "annotations": {"sandbox.instantstart.io/run-seconds": "200"}},
        "spec": {
            "entrypoint": "python /s3/train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": pod},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 2,
                        "minReplicas": 1,
                        "maxReplicas": 4,
                        "rayStartParams": {},
                        "template": pod,
                    }
                ],
            },
        },
    }


def test_rayjob_with_kuberay(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(addons={"kuberay-operator"})
    kube.custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", _rayjob("rj"))

    def status() -> dict[str, Any]:
        return kube.custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "rj").get("status") or {}

    st = wait_for(lambda: (s := status()).get("jobStatus") == "RUNNING" and s, what="RUNNING")
    assert st["jobDeploymentStatus"] == "Running" and st["rayClusterName"].startswith("rj-")
    pods = kube.core.list_namespaced_pod("default", label_selector=f"ray.io/cluster={st['rayClusterName']}").items
    assert sorted(p.metadata.labels["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]
    st = wait_for(lambda: (s := status()).get("jobStatus") == "SUCCEEDED" and s, what="SUCCEEDED")
    assert st["jobDeploymentStatus"] == "Complete" and st["endTime"]
    submitter = kube.core.list_namespaced_pod("default", label_selector="job-name=rj").items[0]
    log = kube.core.read_namespaced_pod_log(submitter.metadata.name, "default")
    assert "submitted successfully" in log and "succeeded" in log
    wait_for(
        lambda: not kube.custom.list_namespaced_custom_object("ray.io", "v1", "default", "rayclusters")["items"],
        what="RayCluster shut down after the job",
    )


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


def test_hyperpod_moves_off_an_unhealthy_node(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(nodes=3, addons={TRAINING})
    kube.custom.create_namespaced_custom_object(
        G, V, "default", P, hpjob("resilient", run_seconds=60000, jobMaxRetryCount=2)
    )
    wait_for(lambda: _cond(_get(kube, "resilient"), "Running"), what="Running")
    bad_node = kube.core.read_namespaced_pod("resilient-pod-0", "default").spec.node_name
    nodes = [gpu_node(f"hyperpod-i-0000000{i}") for i in range(3)]
    for n in nodes:
        if n["name"] == bad_node:
            n["labels"] = {"sagemaker.amazonaws.com/node-health-status": "UnschedulablePendingReplacement"}
    kube.world.sync_nodes(KEY, nodes)

    def moved() -> bool:
        job = _get(kube, "resilient")
        pods = kube.core.list_namespaced_pod("default", label_selector="sagemaker.amazonaws.com/job-name=resilient")
        return (
            job["status"].get("restartCount") == 1
            and _cond(job, "Running") is not None
            and all(p.spec.node_name != bad_node and p.status.phase == "Running" for p in pods.items)
        )

    wait_for(moved, what="job restarted off the unhealthy node")
    faults = _get(kube, "resilient")["status"]["latestFaultyPodInstanceList"]
    assert faults[0]["reason"] == "NodeUnhealthy" and faults[0]["nodeName"] == bad_node
