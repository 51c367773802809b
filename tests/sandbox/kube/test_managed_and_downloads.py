"""The managed path (InferenceEndpointConfig → the inference operator's objects, serving for real)
and model downloads (an `hf download` Job whose files land in the bucket an endpoint then serves
from)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sandbox.kube import KubeWorld
from sandbox.kube.operators import INFERENCE_ADDON
from sandbox.serving.objects import MemoryObjects

from .conftest import KEY, Kube, gpu_node, wait_for
from .test_serving import SVC, chat, ready, service, serving

INFERENCE = INFERENCE_ADDON  # the add-on's name lives in one place
GROUP, VERSION, PLURAL = "inference.sagemaker.aws.amazon.com", "v1", "inferenceendpointconfigs"
BUCKET = "team-models"
ACCOUNT = KEY.split("/")[0]


def claim(core: Any, name: str, csi: dict[str, Any]) -> None:
    """A static PersistentVolume + claim in `default`, as the product's storage phase makes them."""
    core.create_persistent_volume(
        {
            "metadata": {"name": f"default-{name}"},
            "spec": {
                "capacity": {"storage": "1200Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "claimRef": {"namespace": "default", "name": name},
                "csi": csi,
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": f"default-{name}",
                "resources": {"requests": {"storage": "1200Gi"}},
            },
        },
    )


def s3_claim(kube: Kube, name: str = "s3-claim", bucket: str = BUCKET) -> None:
    claim(
        kube.core,
        name,
        {"driver": "s3.csi.aws.com", "volumeHandle": f"s3-csi-{bucket}", "volumeAttributes": {"bucketName": bucket}},
    )


def download_job(name: str, repo: str, target: str, *extra: str, token_secret: str | None = None) -> dict[str, Any]:
    script = f'pip install -U "huggingface_hub[cli]" && hf download {repo} {" ".join(extra)} --local-dir {target}'
    container: dict[str, Any] = {
        "name": "download",
        "image": "python:3.12",
        "command": ["/bin/bash", "-c", script],
        "volumeMounts": [{"name": "s3", "mountPath": "/s3"}],
    }
    if token_secret:
        container["env"] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": token_secret, "key": "token"}}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "s3", "persistentVolumeClaim": {"claimName": "s3-claim"}}],
                }
            },
        },
    }


@pytest.fixture
def world(world_factory: Callable[..., Kube]) -> Kube:
    w = KubeWorld(None, speedup=400)
    store = MemoryObjects()
    store.create_bucket(ACCOUNT, BUCKET)
    w.object_store = store
    k = world_factory(nodes=0, world=w, addons={INFERENCE, "keda"})
    k.world.sync_nodes(KEY, [gpu_node(f"hyperpod-i-0000000{i}") for i in range(2)])
    yield k
    assert not k.world.controller_errors, k.world.controller_errors[0]


def _job_done(kube: Kube, name: str) -> Any:
    job = kube.batch.read_namespaced_job(name, "default")
    conds = {c.type: c.status for c in job.status.conditions or []}
    return "Complete" if conds.get("Complete") == "True" else "Failed" if conds.get("Failed") == "True" else None


def _logs(kube: Kube, job: str) -> str:
    pod = kube.core.list_namespaced_pod("default", label_selector=f"job-name={job}").items[0]
    return kube.core.read_namespaced_pod_log(pod.metadata.name, "default")


def test_download_lands_in_the_bucket_and_an_endpoint_serves_from_it(world: Kube) -> None:
    kube = world
    s3_claim(kube)
    kube.batch.create_namespaced_job("default", download_job("dl-qwen", "Qwen/Qwen3-0.6B", "/s3/models/Qwen3-0.6B"))
    assert wait_for(lambda: _job_done(kube, "dl-qwen"), what="download finished") == "Complete"
    log = _logs(kube, "dl-qwen")
    assert "model.safetensors: 100%|" in log and "Fetching 9 files: 100%|" in log
    assert log.rstrip().endswith("/s3/models/Qwen3-0.6B")
    objects = dict(kube.world.object_store.list(ACCOUNT, BUCKET, "models/Qwen3-0.6B/") or [])
    assert {
        "models/Qwen3-0.6B/config.json",
        "models/Qwen3-0.6B/model.safetensors",
        "models/Qwen3-0.6B/tokenizer.json",
    } <= set(objects)
    assert objects["models/Qwen3-0.6B/model.safetensors"] == 1_503_300_328  # the real size, kept as metadata
    dep = serving(
        "from-s3",
        ["vllm", "serve", "/s3/models/Qwen3-0.6B", "--served-model-name", "qwen"],
        volumes=[{"name": "s3", "persistentVolumeClaim": {"claimName": "s3-claim"}}],
    )
    dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "s3", "mountPath": "/s3", "readOnly": True}
    ]
    kube.apps.create_namespaced_deployment("default", dep)
    kube.core.create_namespaced_service("default", service("from-s3"))
    ready(kube, "from-s3")
    models = kube.raw("GET", f"{SVC}/from-s3:8000/proxy/v1/models")[1]
    assert models["data"][0]["root"] == "/s3/models/Qwen3-0.6B" and models["data"][0]["max_model_len"] == 40960


def test_a_model_path_that_is_not_in_the_bucket_crash_loops(world: Kube) -> None:
    kube = world
    s3_claim(kube)
    dep = serving(
        "missing",
        ["vllm", "serve", "/s3/models/nothing-here"],
        volumes=[{"name": "s3", "persistentVolumeClaim": {"claimName": "s3-claim"}}],
    )
    dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "s3", "mountPath": "/s3"}]
    kube.apps.create_namespaced_deployment("default", dep)

    def log() -> str:
        pods = kube.core.list_namespaced_pod("default", label_selector="app=missing").items
        cs = pods[0].status.container_statuses if pods else None
        if not (cs and cs[0].restart_count):
            return ""
        return kube.core.read_namespaced_pod_log(pods[0].metadata.name, "default")

    text = wait_for(log, what="crash with the engine's error")
    assert "ValueError: Invalid repository ID or local directory specified: '/s3/models/nothing-here'." in text
    assert "ensure the presence of a 'config.json'" in text


def test_gated_download_without_a_token_fails_as_hf_does(world: Kube) -> None:
    kube = world
    s3_claim(kube)
    kube.batch.create_namespaced_job(
        "default", download_job("dl-llama", "meta-llama/Llama-3.1-8B-Instruct", "/s3/models/llama")
    )
    assert wait_for(lambda: _job_done(kube, "dl-llama"), what="job failed") == "Failed"
    log = _logs(kube, "dl-llama")
    assert "GatedRepoError: 401 Client Error." in log and "You must have access to it and be authenticated" in log
    assert not kube.world.object_store.list(ACCOUNT, BUCKET, "models/llama/")
    kube.core.create_namespaced_secret("default", {"metadata": {"name": "hf"}, "stringData": {"token": "hf_x"}})
    kube.batch.create_namespaced_job(
        "default",
        download_job("dl-llama2", "meta-llama/Llama-3.1-8B-Instruct", "/s3/models/llama", token_secret="hf"),
    )
    assert wait_for(lambda: _job_done(kube, "dl-llama2"), timeout=20) == "Complete"
    keys = [k for k, _ in kube.world.object_store.list(ACCOUNT, BUCKET, "models/llama/") or []]
    assert "models/llama/model-00004-of-00004.safetensors" in keys


def test_dataset_download(world: Kube) -> None:
    kube = world
    s3_claim(kube)
    kube.batch.create_namespaced_job(
        "default", download_job("dl-data", "tatsu-lab/alpaca", "/s3/datasets/alpaca", "--repo-type", "dataset")
    )
    assert wait_for(lambda: _job_done(kube, "dl-data")) == "Complete"
    keys = [k for k, _ in kube.world.object_store.list(ACCOUNT, BUCKET, "datasets/alpaca/") or []]
    assert any(k.endswith(".parquet") for k in keys)


def _iec(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": name},
        "spec": {
            "modelName": "qwen3",
            "endpointName": name,
            "instanceType": "ml.p5.48xlarge",
            "replicas": 2,
            "invocationEndpoint": "v1/chat/completions",
            "modelSourceConfig": {
                "modelSourceType": "s3",
                "s3Storage": {"bucketName": BUCKET, "region": "us-west-2"},
                "modelLocation": "models/Qwen3-0.6B",
            },
            "worker": {
                "image": "public.ecr.aws/deep-learning-containers/vllm:server-hyperpod-cuda-v1.1",
                "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
                "args": ["--model", "/opt/ml/model", "--served-model-name", "qwen3", "--port", "8000"],
                "modelInvocationPort": {"containerPort": 8000, "name": "http"},
                "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
                "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
            },
            **spec,
        },
    }


def test_managed_endpoint_with_tiered_kv_cache_and_prefix_aware_routing(world: Kube) -> None:
    kube = world
    s3_claim(kube)
    kube.batch.create_namespaced_job("default", download_job("dl", "Qwen/Qwen3-0.6B", "/s3/models/Qwen3-0.6B"))
    wait_for(lambda: _job_done(kube, "dl") == "Complete")
    iec = _iec(
        "qwen-managed",
        kvCacheSpec={"enableL1Cache": True, "enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "tieredstorage"}},
        intelligentRoutingSpec={"enabled": True, "routingStrategy": "prefixaware"},
        autoScalingSpec={
            "minReplicaCount": 2,
            "maxReplicaCount": 4,
            "prometheusTrigger": {
                # the CRD accepts only an Amazon Managed Prometheus workspace here
                "serverAddress": "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123abcd-4567",
                "query": 'sum(vllm:num_requests_running{model_name="qwen3"})',
                "targetValue": 4,
            },
        },
    )
    kube.custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, iec)

    def complete() -> Any:
        o = kube.custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "qwen-managed")
        return o if (o.get("status") or {}).get("state") == "DeploymentComplete" else None

    ep = wait_for(complete, timeout=20, what="DeploymentComplete")
    ready_cond = next(c for c in ep["status"]["conditions"] if c["type"] == "Ready")
    assert ready_cond["status"] == "True"
    assert ep["status"]["deploymentStatus"]["status"]["availableReplicas"] == 2
    assert ep["metadata"]["finalizers"]
    pod = kube.core.list_namespaced_pod("default", label_selector="app=qwen-managed").items[0]
    worker = pod.spec.containers[0]
    env = {e.name: e.value for e in worker.env}
    assert env["LMCACHE_LOCAL_CPU"] == "True" and env["LMCACHE_REMOTE_URL"] == "sagemaker-hyperpod://$(NODE_IP):9200"
    assert "--kv-transfer-config" in worker.args
    pvc = kube.core.read_namespaced_persistent_volume_claim("qwen-managed-model", "default")
    pv = kube.core.read_persistent_volume(pvc.spec.volume_name)
    assert (
        pv.spec.csi.volume_attributes["bucketName"] == BUCKET and "prefix models/Qwen3-0.6B/" in pv.spec.mount_options
    )
    # the router in the operator's namespace answers and spreads over the two workers
    router = "/api/v1/namespaces/hyperpod-inference-system/services/qwen-managed-default-routing-service:443/proxy"
    code, out = chat(kube, f"{router}/v1/chat/completions", model="qwen3", max_tokens=5)
    assert code == 200 and out["model"] == "qwen3"
    # the endpoint's own Service goes through the reverse-proxy sidecar (/invocations → invocationEndpoint)
    code, out = chat(kube, f"{SVC}/qwen-managed-service:8080/proxy/invocations", max_tokens=3)
    assert code == 200 and out["usage"]["completion_tokens"] == 3
    so = kube.custom.get_namespaced_custom_object(
        "keda.sh", "v1alpha1", "default", "scaledobjects", "qwen-managed-scaled-object"
    )
    assert so["spec"]["triggers"][0]["metadata"]["threshold"] == "4"
    assert so["spec"]["scaleTargetRef"]["name"] == "qwen-managed"
    # deleting the endpoint removes everything the operator made, in both namespaces
    kube.custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "qwen-managed")
    wait_for(lambda: not kube.custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["items"])
    system = "hyperpod-inference-system"
    # the operator's own workloads (controller, bundled KEDA and ALB controller) stay; the endpoint's go
    wait_for(
        lambda: (
            not [d for d in kube.apps.list_namespaced_deployment(system).items if "qwen-managed" in d.metadata.name]
        ),
        what="router removed",
    )
    assert not kube.apps.list_namespaced_deployment("default").items
    assert not [s for s in kube.core.list_namespaced_service(system).items if "qwen-managed" in s.metadata.name]
    assert not [p for p in kube.core.list_persistent_volume().items if p.metadata.name == pvc.spec.volume_name]
    assert not kube.custom.list_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects")["items"]


def test_managed_endpoint_reports_why_it_is_not_ready(world: Kube) -> None:
    kube = world
    iec = _iec("nomodel")
    iec["spec"]["modelSourceConfig"]["modelLocation"] = "models/absent"
    kube.custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, iec)

    def reason() -> Any:
        o = kube.custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "nomodel")
        cond = next((c for c in (o.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})
        return "CrashLoopBackOff" in cond.get("message", "") and o

    o = wait_for(reason, what="CrashLoopBackOff in the Ready condition")
    assert o["status"]["state"] == "DeploymentInProgress"


def test_download_to_fsx_is_recorded_and_served_from_the_fsx_mount(world: Kube) -> None:
    kube = world
    claim(
        kube.core,
        "fsx-claim",
        {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": "fs-0123456789abcdef0",
            "volumeAttributes": {"dnsname": "fs-0123.fsx.us-west-2.amazonaws.com", "mountname": "abc"},
        },
    )
    job = download_job("dl-fsx", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "/nvme/tinyllama")
    c = job["spec"]["template"]["spec"]["containers"][0]
    c["command"][2] += " && cp -r /nvme/tinyllama /fsx/models/tinyllama"
    c["volumeMounts"] = [{"name": "fsx", "mountPath": "/fsx"}]
    job["spec"]["template"]["spec"]["volumes"] = [{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-claim"}}]
    kube.batch.create_namespaced_job("default", job)
    assert wait_for(lambda: _job_done(kube, "dl-fsx")) == "Complete"
    assert "copied /nvme/tinyllama to /fsx/models/tinyllama" in _logs(kube, "dl-fsx")
    dep = serving(
        "fsx",
        ["vllm", "serve", "/fsx/models/tinyllama"],
        volumes=[{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-claim"}}],
    )
    dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "fsx", "mountPath": "/fsx"}]
    kube.apps.create_namespaced_deployment("default", dep)
    ready(kube, "fsx")
    dep = serving(
        "fsx-wrong",
        ["vllm", "serve", "/fsx/models"],
        volumes=[{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-claim"}}],
    )
    dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "fsx", "mountPath": "/fsx"}]
    kube.apps.create_namespaced_deployment("default", dep)

    def restarted() -> Any:
        pods = kube.core.list_namespaced_pod("default", label_selector="app=fsx-wrong").items
        cs = pods[0].status.container_statuses if pods else None
        return cs and cs[0].restart_count >= 1

    wait_for(restarted, what="a directory without config.json does not serve")


def test_managed_endpoint_from_hugging_face_needs_a_token_for_a_gated_model(world: Kube) -> None:
    kube = world
    src = {"modelSourceType": "huggingface", "huggingFaceModel": {"modelId": "meta-llama/Llama-3.1-8B-Instruct"}}
    kube.custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _iec("hf-no-token", replicas=1, modelSourceConfig=dict(src))
    )
    kube.core.create_namespaced_secret("default", {"metadata": {"name": "hf"}, "stringData": {"token": "hf_abc"}})
    with_token = dict(
        src, huggingFaceModel=dict(src["huggingFaceModel"], tokenSecretRef={"name": "hf", "key": "token"})
    )
    kube.custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _iec("hf-token", replicas=1, modelSourceConfig=with_token)
    )

    def state(name: str) -> Any:
        o = kube.custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
        return (o.get("status") or {}).get("state"), next(
            (c["message"] for c in (o.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), ""
        )

    wait_for(lambda: state("hf-token")[0] == "DeploymentComplete", timeout=20)
    wait_for(lambda: "CrashLoopBackOff" in state("hf-no-token")[1], timeout=20)
    pod = kube.core.list_namespaced_pod("default", label_selector="app=hf-token").items[0]
    init = pod.spec.init_containers[0]
    assert init.name == "model-downloader" and "hf download meta-llama/Llama-3.1-8B-Instruct" in init.command[2]
    assert init.env[0].value_from.secret_key_ref.name == "hf"
