"""The Kubernetes objects of an endpoint and of a model download, built from the recorded request.

Pure functions: no I/O. The deploy step applies what :func:`endpoint_objects` returns (and records
it on the endpoint, so delete removes exactly that and nothing else); GET shows it as ``manifest``.
Every object carries the managed-by label and the endpoint's label, so ``kubectl get -l`` finds it.
"""

from __future__ import annotations

import json
import re

from clusters.manifests import MANAGED_LABELS

from .models import Endpoint, Engine, Mode, ModelDownload, ServiceShape

ENDPOINT_LABEL = "instantstart.io/endpoint"
# The pool's routing label: which model a warm worker serves now (changed by assign, no restart).
POOL_MODEL_LABEL = "instantstart.io/model"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"

IMAGES = {Engine.VLLM: "vllm/vllm-openai:v0.10.2", Engine.SGLANG: "lmsysorg/sglang:v0.5.2"}
ENGINE_PORTS = {Engine.VLLM: 8000, Engine.SGLANG: 30000}
ROUTER_PORT, ROUTER_METRICS_PORT = 30000, 29000
PROMETHEUS_IMAGE = "quay.io/prometheus/prometheus:v3.5.0"
MANAGED_WORKER_IMAGE = "public.ecr.aws/deep-learning-containers/vllm:server-hyperpod-cuda-v1.1"
MANAGED_SERVICE_PORT = 8080
IEC_API = "inference.sagemaker.aws.amazon.com/v1"
KEDA_API = "keda.sh/v1alpha1"
SHARED_CLAIM = "shared"  # the cluster's shared storage claim (clusters' storage phase)
DOWNLOAD_IMAGE = "python:3.12"


def labels(endpoint: Endpoint, component: str = "") -> dict[str, str]:
    found = {**MANAGED_LABELS, ENDPOINT_LABEL: endpoint.name}
    if component:
        found["app.kubernetes.io/component"] = component
    return found


def _meta(endpoint: Endpoint, name: str, component: str = "", **extra) -> dict:
    return {"name": name, "namespace": endpoint.namespace, "labels": labels(endpoint, component), **extra}


def label_value(text: str) -> str:
    """A label-safe form of a model name (`Qwen/Qwen3-0.6B` → `Qwen--Qwen3-0.6B`)."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", text.replace("/", "--"))[:63]
    return value.strip("-._") or "model"


# --- the model: where the engine reads it from ----------------------------------------------


def model_path(model: dict) -> str:
    """What the engine is started with: a Hugging Face id, or the path the shared storage is mounted at."""
    source = model.get("source")
    if source == "huggingface" and model.get("id"):
        return model["id"]
    uri = model.get("uri", "")
    if uri.startswith("s3://"):
        prefix = uri[len("s3://") :].partition("/")[2].strip("/")
        return f"/s3/{prefix}"
    return uri if uri.startswith("/") else f"/fsx/{uri.strip('/')}"


def s3_location(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    return bucket, prefix.strip("/")


def served_name(endpoint: Endpoint) -> str:
    """The name the engine answers to (`model` in a chat request)."""
    model = endpoint.model
    if model.get("source") == "huggingface" and model.get("id"):
        return model["id"]
    return model.get("name") or model_path(model).rstrip("/").rsplit("/", 1)[-1]


def engine_port(endpoint: Endpoint) -> int:
    return ENGINE_PORTS[Engine(endpoint.engine)]


# --- self-managed ------------------------------------------------------------------------


def worker_command(endpoint: Endpoint) -> list[str]:
    model, name, tp = model_path(endpoint.model), served_name(endpoint), str(endpoint.gpus)
    if endpoint.engine == Engine.SGLANG:
        command = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--served-model-name", name]
        command += ["--host", "0.0.0.0", "--port", str(engine_port(endpoint)), "--tp", tp, "--enable-metrics"]
    else:
        command = ["vllm", "serve", model, "--served-model-name", name, "--host", "0.0.0.0"]
        command += ["--port", str(engine_port(endpoint)), "--tensor-parallel-size", tp]
    return command + [str(arg) for arg in endpoint.args or []]


def _pod_labels(endpoint: Endpoint) -> dict[str, str]:
    found = {**labels(endpoint, "worker"), "app": endpoint.name}
    if endpoint.service == ServiceShape.POOL:
        found[POOL_MODEL_LABEL] = label_value(served_name(endpoint))
    return found


def _uses_shared_storage(endpoint: Endpoint) -> bool:
    return endpoint.model.get("source") in ("s3", "fsx")


def worker_deployment(endpoint: Endpoint) -> dict:
    gpus = str(endpoint.gpus)
    container = {
        "name": endpoint.engine,
        "image": IMAGES[Engine(endpoint.engine)],
        "command": worker_command(endpoint),
        "ports": [{"containerPort": engine_port(endpoint), "name": "http"}],
        "env": [{"name": "HF_HOME", "value": "/root/.cache/huggingface"}],
        "resources": {"requests": {"nvidia.com/gpu": gpus}, "limits": {"nvidia.com/gpu": gpus}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }
    volumes: list[dict] = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    if _uses_shared_storage(endpoint):
        mount = "/s3" if endpoint.model["source"] == "s3" else "/fsx"
        container["volumeMounts"].append({"name": "models", "mountPath": mount, "readOnly": True})
        volumes.append({"name": "models", "persistentVolumeClaim": {"claimName": SHARED_CLAIM, "readOnly": True}})
    pod_labels = _pod_labels(endpoint)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(endpoint, endpoint.name, "worker"),
        "spec": {
            "replicas": endpoint.replicas,
            "selector": {"matchLabels": {ENDPOINT_LABEL: endpoint.name, "app.kubernetes.io/component": "worker"}},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(engine_port(endpoint))},
                },
                "spec": {
                    "nodeSelector": {GROUP_LABEL: endpoint.instance_group},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def _service_ports(endpoint: Endpoint) -> list[dict]:
    if endpoint.router:
        return [{"name": "http", "port": ROUTER_PORT, "targetPort": "http"}]
    return [{"name": "http", "port": engine_port(endpoint), "targetPort": "http"}]


def front_service(endpoint: Endpoint) -> dict:
    """The endpoint's own Service: the router's pods when there is a router, else the workers."""
    component = "router" if endpoint.router else "worker"
    spec: dict = {
        "selector": {ENDPOINT_LABEL: endpoint.name, "app.kubernetes.io/component": component},
        "ports": _service_ports(endpoint),
    }
    annotations = {}
    if endpoint.service == ServiceShape.EXTERNAL:
        spec["type"] = "LoadBalancer"
        annotations = {
            "service.beta.kubernetes.io/aws-load-balancer-type": "external",
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
            "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
            "service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled": "true",
        }
    else:
        spec["type"] = "ClusterIP"
    meta = _meta(endpoint, endpoint.name, "service")
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def router_name(endpoint: Endpoint) -> str:
    return f"{endpoint.name}-router"


def router_objects(endpoint: Endpoint) -> list[dict]:
    """The SGLang router (cache-aware) discovering the endpoint's workers, with the RBAC it needs to list pods."""
    name = router_name(endpoint)
    selector = f"{ENDPOINT_LABEL}={endpoint.name}"
    args = ["--service-discovery", "--selector", selector, "app.kubernetes.io/component=worker"]
    args += ["--service-discovery-port", str(engine_port(endpoint))]
    args += ["--service-discovery-namespace", endpoint.namespace, "--policy", "cache_aware"]
    args += ["--host", "0.0.0.0", "--port", str(ROUTER_PORT), "--prometheus-port", str(ROUTER_METRICS_PORT)]
    pod_labels = {**labels(endpoint, "router"), "app": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(endpoint, name, "router"),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {ENDPOINT_LABEL: endpoint.name, "app.kubernetes.io/component": "router"}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "serviceAccountName": name,
                    "containers": [
                        {
                            "name": "router",
                            "image": IMAGES[Engine.SGLANG],
                            "command": ["python", "-m", "sglang_router.launch_router"],
                            "args": args,
                            "ports": [
                                {"containerPort": ROUTER_PORT, "name": "http"},
                                {"containerPort": ROUTER_METRICS_PORT, "name": "metrics"},
                            ],
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                        }
                    ],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(endpoint, name, "router"),
        "spec": {
            "selector": {ENDPOINT_LABEL: endpoint.name, "app.kubernetes.io/component": "router"},
            "ports": [
                {"name": "http", "port": ROUTER_PORT, "targetPort": "http"},
                {"name": "metrics", "port": ROUTER_METRICS_PORT, "targetPort": "metrics"},
            ],
        },
    }
    rbac = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(endpoint, name, "router")},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(endpoint, name, "router"),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(endpoint, name, "router"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": endpoint.namespace}],
        },
    ]
    return [*rbac, deployment, service]


def prometheus_name(endpoint: Endpoint) -> str:
    return f"{endpoint.name}-prometheus"


def load_query(endpoint: Endpoint) -> str:
    """Requests in flight over every replica, as the router counts them (not its control-plane job queue)."""
    return f'sum(sgl_router_running_requests{{job="{router_name(endpoint)}"}})'


def prometheus_objects(endpoint: Endpoint) -> list[dict]:
    """A Prometheus (as the prometheus-community chart installs it) scraping this endpoint's router only."""
    name = prometheus_name(endpoint)
    target = f"{router_name(endpoint)}.{endpoint.namespace}.svc.cluster.local:{ROUTER_METRICS_PORT}"
    config = (
        "global:\n  scrape_interval: 5s\nscrape_configs:\n"
        f"  - job_name: {router_name(endpoint)}\n    static_configs:\n      - targets: [{json.dumps(target)}]\n"
    )
    selector = {ENDPOINT_LABEL: endpoint.name, "app.kubernetes.io/component": "prometheus"}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(endpoint, name, "prometheus"),
            "data": {"prometheus.yml": config},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(endpoint, name, "prometheus"),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": {**labels(endpoint, "prometheus"), "app": name}},
                    "spec": {
                        "containers": [
                            {
                                "name": "prometheus",
                                "image": PROMETHEUS_IMAGE,
                                "args": ["--config.file=/etc/config/prometheus.yml", "--storage.tsdb.path=/data"],
                                "ports": [{"containerPort": 9090, "name": "http"}],
                                "volumeMounts": [{"name": "config", "mountPath": "/etc/config"}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": name}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(endpoint, name, "prometheus"),
            "spec": {"selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": 9090}]},
        },
    ]


def scaled_object(endpoint: Endpoint) -> dict:
    """KEDA on requests in flight: the stabilization window is the user's cooldown, so a replica serving a
    long stream is still counted as busy and is not taken away mid-answer."""
    scaling = endpoint.autoscaling or {}
    cooldown = int(scaling.get("cooldown", 300))
    server = f"http://{prometheus_name(endpoint)}.{endpoint.namespace}.svc.cluster.local:80"
    return {
        "apiVersion": KEDA_API,
        "kind": "ScaledObject",
        "metadata": _meta(endpoint, endpoint.name, "autoscaling"),
        "spec": {
            "scaleTargetRef": {"name": endpoint.name},
            "minReplicaCount": int(scaling["min"]),
            "maxReplicaCount": int(scaling["max"]),
            "pollingInterval": 5,
            "cooldownPeriod": cooldown,
            "advanced": {
                "horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": cooldown}}}
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": server,
                        "query": load_query(endpoint),
                        # AverageValue: replicas = ceil(in flight / target), target = in flight per replica
                        "threshold": str(scaling["target"]),
                        "activationThreshold": "0",
                    },
                }
            ],
        },
    }


# --- managed: the HyperPod inference operator's InferenceEndpointConfig --------------------------


def managed_service_name(endpoint: Endpoint) -> str:
    return f"{endpoint.name}-service"  # made by the operator


def model_source_config(endpoint: Endpoint, *, bucket_region: str, fsx_id: str = "") -> dict:
    model = endpoint.model
    if model["source"] == "huggingface":
        return {"modelSourceType": "huggingface", "huggingFaceModel": {"modelId": model["id"]}}
    if model["source"] == "s3":
        bucket, prefix = s3_location(model["uri"])
        return {
            "modelSourceType": "s3",
            "s3Storage": {"bucketName": bucket, "region": bucket_region},
            "modelLocation": prefix,
        }
    return {
        "modelSourceType": "fsx",
        "fsxStorage": {"fileSystemId": fsx_id},
        "modelLocation": model_path(model).removeprefix("/fsx/"),
    }


def inference_endpoint_config(endpoint: Endpoint, *, bucket_region: str, fsx_id: str = "") -> dict:
    name = served_name(endpoint)
    args = ["--model", "/opt/ml/model", "--served-model-name", name, "--port", "8000"]
    args += ["--tensor-parallel-size", str(endpoint.gpus), *[str(a) for a in endpoint.args or []]]
    spec: dict = {
        "modelName": label_value(name).lower()[:63],
        "instanceType": endpoint.instance_type,
        "replicas": endpoint.replicas,
        "invocationEndpoint": "v1/chat/completions",
        "modelSourceConfig": model_source_config(endpoint, bucket_region=bucket_region, fsx_id=fsx_id),
        "worker": {
            "image": MANAGED_WORKER_IMAGE,
            "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
            "args": args,
            "modelInvocationPort": {"containerPort": 8000, "name": "http"},
            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
            "resources": {
                "requests": {"nvidia.com/gpu": str(endpoint.gpus)},
                "limits": {"nvidia.com/gpu": str(endpoint.gpus)},
            },
        },
        "loadBalancer": {"healthCheckPath": "/ping"},
    }
    kv = endpoint.kv_cache or {}
    if kv.get("l1") or kv.get("l2"):
        cache: dict = {"enableL1Cache": bool(kv.get("l1")), "enableL2Cache": bool(kv.get("l2"))}
        if kv.get("l2"):
            cache["l2CacheSpec"] = {"l2CacheBackend": kv.get("backend") or "tieredstorage"}
            if kv.get("url"):
                cache["l2CacheSpec"]["l2CacheLocalUrl"] = kv["url"]
        spec["kvCacheSpec"] = cache
    if endpoint.routing:
        spec["intelligentRoutingSpec"] = {"enabled": True, "routingStrategy": endpoint.routing}
    if endpoint.autoscaling:
        scaling = endpoint.autoscaling
        spec["autoScalingSpec"] = {
            "minReplicaCount": int(scaling["min"]),
            "maxReplicaCount": int(scaling["max"]),
            "cooldownPeriod": int(scaling.get("cooldown", 300)),
            "scaleDownStabilizationTime": int(scaling.get("cooldown", 300)),
            "prometheusTrigger": {
                "serverAddress": scaling["server_address"],
                "query": f'sum(vllm:num_requests_running{{model_name="{name}"}})',
                "targetValue": int(scaling["target"]),
            },
        }
    return {
        "apiVersion": IEC_API,
        "kind": "InferenceEndpointConfig",
        "metadata": _meta(endpoint, endpoint.name, "endpoint"),
        "spec": spec,
    }


def managed_external_service(endpoint: Endpoint) -> dict:
    """An NLB in front of the operator's reverse-proxy sidecar (port 8081), as the original does."""
    service = front_service(endpoint)
    service["metadata"]["name"] = f"{endpoint.name}-nlb"
    service["spec"]["selector"] = {"app": endpoint.name}
    service["spec"]["ports"] = [{"name": "http", "port": MANAGED_SERVICE_PORT, "targetPort": 8081}]
    return service


def endpoint_objects(endpoint: Endpoint, *, bucket_region: str, fsx_id: str = "") -> list[dict]:
    """Everything the deploy applies, in apply order (delete removes them in reverse)."""
    if endpoint.mode == Mode.MANAGED:
        objects = [inference_endpoint_config(endpoint, bucket_region=bucket_region, fsx_id=fsx_id)]
        if endpoint.service == ServiceShape.EXTERNAL:
            objects.append(managed_external_service(endpoint))
        return objects
    objects = [worker_deployment(endpoint)]
    if endpoint.service != ServiceShape.POOL:
        objects.append(front_service(endpoint))
    if endpoint.router:
        objects[1:1] = router_objects(endpoint)
    if endpoint.autoscaling:
        objects += [*prometheus_objects(endpoint), scaled_object(endpoint)]
    return objects


def invoke_target(endpoint: Endpoint) -> tuple[str, str, int]:
    """(namespace, Service, port) the API server proxies invoke to: only ever the endpoint's own Service."""
    if endpoint.mode == Mode.MANAGED:
        return endpoint.namespace, managed_service_name(endpoint), MANAGED_SERVICE_PORT
    return endpoint.namespace, endpoint.name, _service_ports(endpoint)[0]["port"]


# --- model downloads ---------------------------------------------------------------------------


def download_dir(download: ModelDownload) -> str:
    folder = "datasets" if download.kind == "dataset" else "models"
    return f"{folder}/{download.repo_id}"


def download_job(download: ModelDownload) -> dict:
    mount = "/s3" if download.target == "s3" else "/fsx"
    target = f"{mount}/{download_dir(download)}"
    command = f"hf download {download.repo_id}"
    if download.kind == "dataset":
        command += " --repo-type dataset"
    if download.revision:
        command += f" --revision {download.revision}"
    script = f'pip install -U "huggingface_hub[cli,hf_transfer]" && {command} --local-dir {target}'
    env = [{"name": "HF_HOME", "value": "/root/.cache/huggingface"}, {"name": "HF_HUB_DOWNLOAD_TIMEOUT", "value": "60"}]
    if download.secret_name:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": download.secret_name, "key": "token"}}})
    job_labels = {**MANAGED_LABELS, "instantstart.io/download": str(download.pk)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": download.job_name, "namespace": download.namespace, "labels": job_labels},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 7200,
            "template": {
                "metadata": {"labels": job_labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "download",
                            "image": DOWNLOAD_IMAGE,
                            "command": ["/bin/bash", "-c", script],
                            "env": env,
                            "volumeMounts": [{"name": "storage", "mountPath": mount}],
                            "resources": {"requests": {"cpu": "2", "memory": "8Gi"}},
                        }
                    ],
                    "volumes": [{"name": "storage", "persistentVolumeClaim": {"claimName": SHARED_CLAIM}}],
                },
            },
        },
    }


def token_secret(download: ModelDownload, token: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": download.secret_name,
            "namespace": download.namespace,
            "labels": {**MANAGED_LABELS, "instantstart.io/download": str(download.pk)},
        },
        "type": "Opaque",
        "stringData": {"token": token},
    }
