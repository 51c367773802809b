"""Every custom object the product builds validates against the upstream CRD (the files the sandbox
serves verbatim), and the validator the product runs before a deploy refuses what the CRD refuses."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from inference.manifests import endpoint_objects
from inference.models import Endpoint

CRDS = Path(__file__).resolve().parents[2] / "sandbox" / "kube" / "crds"
S3 = {"source": "s3", "uri": "s3://team-bucket/models/Qwen/Qwen3-0.6B"}


def schema(filename: str, version: str) -> dict:
    crd = yaml.safe_load((CRDS / filename).read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


def endpoint(**fields) -> Endpoint:
    base = {
        "name": "qwen",
        "mode": "self_managed",
        "engine": "vllm",
        "model": {"source": "huggingface", "id": "Qwen/Qwen3-0.6B"},
        "instance_group": "gpu",
        "instance_type": "ml.g5.12xlarge",
        "replicas": 2,
        "gpus": 2,
        "service": "internal",
        "namespace": "acme",
    }
    return Endpoint(**{**base, **fields})


MANAGED = [
    {"model": S3, "kv_cache": {"l1": True, "l2": True, "backend": "tieredstorage"}, "routing": "prefixaware"},
    {"model": {"source": "huggingface", "id": "Qwen/Qwen3-0.6B"}, "routing": "session", "service": "external"},
    {"model": {"source": "fsx", "uri": "/fsx/models/qwen"}, "kv_cache": {"l1": True, "l2": False}},
    {
        "model": S3,
        "autoscaling": {
            "min": 1,
            "max": 4,
            "target": 8,
            "cooldown": 120,
            "server_address": "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123abcd",
        },
    },
]


@pytest.mark.parametrize("fields", MANAGED)
def test_every_inference_endpoint_config_validates_against_the_crd(fields):
    objects = endpoint_objects(endpoint(mode="managed", **fields), bucket_region="us-west-2", fsx_id="fs-0123")
    iec = objects[0]
    assert iec["kind"] == "InferenceEndpointConfig"
    jsonschema.validate(iec, schema("inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml", "v1"))


def test_every_scaled_object_validates_against_the_crd():
    ep = endpoint(engine="sglang", router=True, autoscaling={"min": 1, "max": 3, "target": 2, "cooldown": 30})
    [scaled] = [o for o in endpoint_objects(ep, bucket_region="us-west-2") if o["kind"] == "ScaledObject"]
    jsonschema.validate(scaled, schema("keda.sh_scaledobjects.yaml", "v1alpha1"))
    trigger = scaled["spec"]["triggers"][0]["metadata"]
    assert "job_queue_depth" not in trigger["query"] and "sgl_router_running_requests" in trigger["query"]
    assert scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 30
    }


def test_the_crd_refuses_what_the_product_never_sends():
    iec = endpoint_objects(endpoint(mode="managed", model=S3, routing="prefixaware"), bucket_region="us-west-2")[0]
    iec["spec"]["intelligentRoutingSpec"]["routingStrategy"] = "random"
    with pytest.raises(jsonschema.ValidationError, match="random"):
        jsonschema.validate(iec, schema("inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml", "v1"))


def test_self_managed_shapes():
    external = endpoint_objects(endpoint(service="external"), bucket_region="us-west-2")
    service = external[1]
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-type"] == "external"
    assert service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"
    internal = endpoint_objects(endpoint(service="internal"), bucket_region="us-west-2")
    assert internal[1]["spec"]["type"] == "ClusterIP"
    pool = endpoint_objects(endpoint(service="pool"), bucket_region="us-west-2")
    assert [o["kind"] for o in pool] == ["Deployment"]
    labels = pool[0]["spec"]["template"]["metadata"]["labels"]
    assert labels["instantstart.io/model"] == "Qwen--Qwen3-0.6B"
    s3 = endpoint_objects(endpoint(model=S3), bucket_region="us-west-2")[0]["spec"]["template"]["spec"]
    assert s3["containers"][0]["command"][2] == "/s3/models/Qwen/Qwen3-0.6B"
    assert {"name": "models", "mountPath": "/s3", "readOnly": True} in s3["containers"][0]["volumeMounts"]
    assert s3["nodeSelector"] == {"sagemaker.amazonaws.com/instance-group-name": "gpu"}
    sglang = endpoint_objects(endpoint(engine="sglang", gpus=4), bucket_region="us-west-2")[0]
    command = sglang["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:3] == ["python3", "-m", "sglang.launch_server"] and command[command.index("--tp") + 1] == "4"
