"""Serving against the real emulated S3: a download Job fills a bucket the product can list with
boto3, and a vLLM pod whose model is not (yet) in the bucket crash-loops until it is."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from sandbox.server import _NullKube
from tests.sandbox.conftest import eks_cluster, hyperpod, wait_for
from tests.sandbox.kube.conftest import make_client
from tests.sandbox.kube.test_managed_and_downloads import claim

GPU_GROUP = [{"InstanceGroupName": "gpu", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 1}]


def _pod(command: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "main",
                "image": extra.pop("image", "python:3.12"),
                "command": command,
                "volumeMounts": [{"name": "s3", "mountPath": "/s3"}],
                **extra,
            }
        ],
        "volumes": [{"name": "s3", "persistentVolumeClaim": {"claimName": "s3-claim"}}],
    }


@pytest.fixture
def kube(sandbox: Any, account: Any) -> client.ApiClient:
    if isinstance(sandbox.kube, _NullKube):
        pytest.skip("sandbox.kube not available")
    eks = eks_cluster(account, "ml")
    hyperpod(account, "hp", eks, groups=[dict(g) for g in GPU_GROUP])
    api = make_client(eks["endpoint"])
    wait_for(lambda: client.CoreV1Api(api).list_node().items, timeout=20)
    return api


def test_download_job_fills_the_bucket_and_a_pod_serves_once_the_model_is_there(account: Any, kube: Any) -> None:
    core, batch, apps = client.CoreV1Api(kube), client.BatchV1Api(kube), client.AppsV1Api(kube)
    bucket = f"models-{account.id}"
    account.s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    claim(
        core,
        "s3-claim",
        {"driver": "s3.csi.aws.com", "volumeHandle": f"s3-csi-{bucket}", "volumeAttributes": {"bucketName": bucket}},
    )
    batch.create_namespaced_job(
        "default",
        {
            "metadata": {"name": "dl"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        **_pod(
                            [
                                "/bin/bash",
                                "-c",
                                "pip install -U 'huggingface_hub[cli]' && hf download Qwen/Qwen3-0.6B "
                                "--local-dir /s3/models/Qwen3-0.6B",
                            ]
                        ),
                    }
                },
            },
        },
    )
    wait_for(lambda: batch.read_namespaced_job("dl", "default").status.succeeded == 1, timeout=30)
    listed = account.s3.list_objects_v2(Bucket=bucket, Prefix="models/Qwen3-0.6B/")["Contents"]
    keys = {o["Key"] for o in listed}
    assert {"models/Qwen3-0.6B/config.json", "models/Qwen3-0.6B/model.safetensors"} <= keys
    head = account.s3.head_object(Bucket=bucket, Key="models/Qwen3-0.6B/model.safetensors")
    assert head["Metadata"]["sandbox-original-size"] == "1503300328"
    # a HEAD answers the object's length, as S3 does (with no body)
    assert head["ContentLength"] == next(o["Size"] for o in listed if o["Key"].endswith("model.safetensors"))

    # a model path that is not in the bucket: the engine dies at start and the pod crash-loops ...
    dep = {
        "metadata": {"name": "late"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "late"}},
            "template": {
                "metadata": {"labels": {"app": "late"}},
                "spec": _pod(
                    ["vllm", "serve", "/s3/models/late"],
                    image="vllm/vllm-openai:v0.10.2",
                    ports=[{"containerPort": 8000}],
                    resources={"limits": {"nvidia.com/gpu": "1"}},
                ),
            },
        },
    }
    apps.create_namespaced_deployment("default", dep)

    def restarts() -> int:
        pods = core.list_namespaced_pod("default", label_selector="app=late").items
        cs = pods[0].status.container_statuses if pods else None
        return cs[0].restart_count if cs else 0

    wait_for(lambda: restarts() >= 1, timeout=20)
    # ... until the files are there: the next restart finds config.json and serves
    body = account.s3.get_object(Bucket=bucket, Key="models/Qwen3-0.6B/config.json")["Body"].read()
    account.s3.put_object(Bucket=bucket, Key="models/late/config.json", Body=body)
    wait_for(lambda: apps.read_namespaced_deployment("late", "default").status.ready_replicas == 1, timeout=30)
    pod = core.list_namespaced_pod("default", label_selector="app=late").items[0]
    text = core.connect_get_namespaced_pod_proxy_with_path(pod.metadata.name + ":8000", "default", "v1/models")
    assert "/s3/models/late" in text
