"""Model downloads and the managed path (sandbox, real worker): a download lands in the cluster's bucket
(its token only in a Secret), a self-managed endpoint serves from its uri, and a managed endpoint with a
tiered KV cache and prefix-aware routing, its InferenceEndpointConfig valid against the CRD, becomes
ready and answers."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from clusters.models import Storage
from instantstart.cloud.aws import team_cloud
from tests.clusters.helpers import wait_for_operation
from tests.inference.conftest import enable_inference_operator, kube

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

CHAT = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 5}


def test_download_then_serve_it_self_managed_and_managed(admin_api, cluster, admin_mcp):
    models = f"/api/v1/clusters/{cluster.pk}/models/"
    accepted = admin_api.post(
        models,
        {"source": "huggingface", "id": "Qwen/Qwen3-0.6B", "kind": "model", "target": "s3", "token": "hf_secret123"},
        format="json",
    )
    assert accepted.status_code == 202, accepted.content
    assert "token" not in accepted.json()["model"] and "hf_secret123" not in accepted.content.decode()
    wait_for_operation(accepted.json()["operation"]["id"], timeout=120)
    bucket = Storage.objects.get(cluster=cluster, name="shared").bucket
    [model] = admin_api.get(models).json()["results"]
    assert model["status"] == "ready" and model["id"] == "Qwen/Qwen3-0.6B" and model["kind"] == "model"
    assert model["uri"] == f"s3://{bucket}/models/Qwen/Qwen3-0.6B"
    assert model["mount_path"] == "/s3/models/Qwen/Qwen3-0.6B"
    assert model["size_bytes"] > 1_000_000_000 and model["progress"]["percent"] == 100
    assert "hf_secret123" not in admin_api.get(models).content.decode()
    listed = admin_mcp.call("list_models", {"cluster_id": str(cluster.pk)}).structured_content["results"]
    assert [m["uri"] for m in listed] == [model["uri"]]
    s3 = team_cloud(cluster.team, cluster.region).client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="models/Qwen/Qwen3-0.6B/")["Contents"]]
    assert "models/Qwen/Qwen3-0.6B/config.json" in keys
    core = k8s.CoreV1Api(kube(cluster))
    secrets = core.list_namespaced_secret(cluster.team.slug, label_selector="app.kubernetes.io/managed-by=instantstart")
    assert [s.metadata.name for s in secrets.items if s.metadata.name.startswith("hf-token-")]

    # a gated repository without a token fails as Hugging Face does, and says so
    gated = admin_api.post(models, {"id": "meta-llama/Llama-3.1-8B-Instruct"}, format="json").json()
    failed = wait_for_operation(gated["operation"]["id"], statuses=("failed",), timeout=60)
    assert "GatedRepoError" in failed.error_message
    statuses = {m["id"]: m["status"] for m in admin_api.get(models).json()["results"]}
    assert statuses == {"Qwen/Qwen3-0.6B": "ready", "meta-llama/Llama-3.1-8B-Instruct": "failed"}

    # a model that is not where the endpoint looks: the deploy fails with the engine's own error
    absent = {
        "name": "absent",
        "model": {"source": "s3", "uri": f"s3://{bucket}/models/absent"},
        "instance_group": "gpu",
    }
    deployed = admin_api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/", absent, format="json").json()
    failed = wait_for_operation(deployed["operation"]["id"], statuses=("failed",), timeout=120)
    assert "Invalid repository ID or local directory specified: '/s3/models/absent'" in failed.error_message
    assert admin_api.get(f"/api/v1/clusters/{cluster.pk}/endpoints/absent/").json()["status"] == "failed"

    # a self-managed endpoint serves from the downloaded uri
    body = {"name": "fromdl", "model": {"source": "s3", "uri": model["uri"]}, "instance_group": "gpu"}
    deployed = admin_api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/", body, format="json")
    assert deployed.status_code == 202, deployed.content
    wait_for_operation(deployed.json()["operation"]["id"], timeout=120)
    answer = admin_api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/fromdl/invoke/", CHAT, format="json")
    assert answer.status_code == 200, answer.content
    answer = answer.json()
    assert answer["model"] == "Qwen3-0.6B" and answer["usage"]["completion_tokens"] == 5

    # managed: needs the inference operator (409 naming the feature, nothing recorded), then works
    managed = {
        "name": "managed",
        "mode": "managed",
        "model": {"source": "s3", "uri": model["uri"]},
        "instance_group": "gpu",
        "replicas": 2,
        "kv_cache": {"l1": True, "l2": True, "backend": "tieredstorage"},
        "routing": "prefixaware",
    }
    refused = admin_api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/", managed, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "feature_required"
    assert "inference_operator" in refused.json()["error"]["message"]
    assert admin_api.get(f"/api/v1/clusters/{cluster.pk}/endpoints/managed/").status_code == 404
    enable_inference_operator(cluster)
    deployed = admin_api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/", managed, format="json")
    assert deployed.status_code == 202, deployed.content
    wait_for_operation(deployed.json()["operation"]["id"], timeout=180)
    base = f"/api/v1/clusters/{cluster.pk}/endpoints/managed/"
    detail = admin_api.get(base).json()
    assert detail["status"] == "ready" and detail["replicas"] == {"desired": 2, "ready": 2}
    [iec] = detail["manifest"]
    assert iec["kind"] == "InferenceEndpointConfig"
    assert iec["spec"]["kvCacheSpec"] == {
        "enableL1Cache": True,
        "enableL2Cache": True,
        "l2CacheSpec": {"l2CacheBackend": "tieredstorage"},
    }
    assert iec["spec"]["intelligentRoutingSpec"] == {"enabled": True, "routingStrategy": "prefixaware"}
    assert iec["spec"]["modelSourceConfig"]["s3Storage"]["bucketName"] == bucket
    answer = admin_api.post(base + "invoke/", CHAT, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["model"] == "Qwen3-0.6B" and answer.json()["usage"]["completion_tokens"] == 5

    gone = admin_api.delete(base)
    wait_for_operation(gone.json()["id"], timeout=120)
    apps = k8s.AppsV1Api(kube(cluster))
    assert not [d for d in apps.list_namespaced_deployment(cluster.team.slug).items if d.metadata.name == "managed"]
    assert not [
        d for d in apps.list_namespaced_deployment("hyperpod-inference-system").items if "managed" in d.metadata.name
    ]
