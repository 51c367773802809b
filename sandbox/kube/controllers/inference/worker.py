"""The endpoint's pods: the model volume for its source (S3 / FSx PersistentVolume + claim, or an
emptyDir filled by a `hf download` init container), the worker container with the LMCache settings
`kvCacheSpec` asks for, and the operator's sidecars."""

from __future__ import annotations

import json
from typing import Any

from ....serving.commands import program
from ...admission import default_pod_spec
from ...store import Cluster
from ...util import clone
from ..base import owner_ref
from .objects import MANAGED, OTEL_IMAGE, ensure, labels

Obj = dict[str, Any]
SIDECAR_IMAGE = "public.ecr.aws/sagemaker/hyperpod-inference-sidecar-reverse-proxy:v3.2"
HF_IMAGE = "public.ecr.aws/docker/library/python:3.12"


def model_volume(c: Cluster, iec: Obj, spec: Obj) -> tuple[Obj, Obj | None]:
    """(pod volume, init container or None) for the model source."""
    name, ns = iec["metadata"]["name"], iec["metadata"]["namespace"]
    src = spec.get("modelSourceConfig") or {}
    vol_name = ((spec.get("worker") or {}).get("modelVolumeMount") or {}).get("name") or "model-weights"
    kind = src.get("modelSourceType")
    if kind in ("s3", "fsx"):
        pv_name, claim = f"{ns}-{name}-model", f"{name}-model"
        if kind == "s3":
            s3 = src.get("s3Storage") or {}
            loc = str(src.get("modelLocation") or "").strip("/")
            csi = {
                "driver": "s3.csi.aws.com",
                "volumeHandle": f"{ns}-{name}-s3-model",
                "volumeAttributes": {"bucketName": s3.get("bucketName", "")},
            }
            opts = ["allow-other", "read-only", f"region {s3.get('region', c.region)}"]
            if loc:
                opts.append(f"prefix {loc}/")
        else:
            fsx = src.get("fsxStorage") or {}
            csi = {
                "driver": "fsx.csi.aws.com",
                "volumeHandle": fsx.get("fileSystemId", ""),
                "volumeAttributes": {"dnsname": fsx.get("dnsName", ""), "mountname": fsx.get("mountName", "")},
            }
            opts = ["flock"]
        owner = [owner_ref(iec)]
        ensure(
            c,
            "/persistentvolumes",
            "",
            {
                "metadata": {"name": pv_name, "labels": {MANAGED: f"{ns}.{name}"}},
                "spec": {
                    "capacity": {"storage": "1200Gi"},
                    "accessModes": ["ReadOnlyMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "mountOptions": opts,
                    "claimRef": {"namespace": ns, "name": claim},
                    "csi": csi,
                },
            },
        )
        ensure(
            c,
            "/persistentvolumeclaims",
            ns,
            {
                "metadata": {"name": claim, "labels": labels(name), "ownerReferences": owner},
                "spec": {
                    "accessModes": ["ReadOnlyMany"],
                    "storageClassName": "",
                    "volumeName": pv_name,
                    "resources": {"requests": {"storage": "1200Gi"}},
                },
            },
        )
        return {"name": vol_name, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}, None
    vol = {"name": vol_name, "emptyDir": {}}
    if kind == "huggingface":
        hf = src.get("huggingFaceModel") or {}
        mount = ((spec.get("worker") or {}).get("modelVolumeMount") or {}).get("mountPath") or "/opt/ml/model"
        cmd = f"pip install -q -U 'huggingface_hub[cli]' && hf download {hf.get('modelId', '')} --local-dir {mount}"
        if hf.get("commitSHA"):
            cmd += f" --revision {hf['commitSHA']}"
        init: Obj = {
            "name": "model-downloader",
            "image": HF_IMAGE,
            "command": ["/bin/bash", "-c", cmd],
            "volumeMounts": [{"name": vol_name, "mountPath": mount}],
        }
        ref = hf.get("tokenSecretRef")
        if ref and ref.get("name"):
            init["env"] = [
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": ref["name"], "key": ref.get("key", "token")}},
                }
            ]
        return vol, init
    return vol, None


def kv_cache(spec: Obj, container: Obj) -> None:
    """kvCacheSpec → LMCache on the vLLM worker (L1: CPU offload, L2: tiered storage or Redis)."""
    kv = spec.get("kvCacheSpec")
    if not kv:
        return
    l1 = kv.get("enableL1Cache", True)
    l2 = kv.get("enableL2Cache", False)
    if not (l1 or l2):
        return
    env = container.setdefault("env", [])
    env += [
        {"name": "LMCACHE_USE_EXPERIMENTAL", "value": "True"},
        {"name": "LMCACHE_CHUNK_SIZE", "value": "256"},
        {"name": "LMCACHE_LOCAL_CPU", "value": "True" if l1 else "False"},
        {"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "value": "20"},
        {"name": "PYTHONHASHSEED", "value": "0"},
    ]
    if l2:
        l2spec = kv.get("l2CacheSpec") or {}
        backend = l2spec.get("l2CacheBackend") or "tieredstorage"
        env.append({"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}})
        url = (
            "sagemaker-hyperpod://$(NODE_IP):9200" if backend == "tieredstorage" else l2spec.get("l2CacheLocalUrl", "")
        )
        env += [{"name": "LMCACHE_REMOTE_URL", "value": url}, {"name": "LMCACHE_REMOTE_SERDE", "value": "naive"}]
    if kv.get("cacheConfigFile"):
        env.append({"name": "LMCACHE_CONFIG_FILE", "value": kv["cacheConfigFile"]})
    # the LMCache connector is a vLLM flag (managed KV caching supports vLLM-based containers only)
    prog = program(container)
    if prog is not None and prog.kind == "vllm":
        transfer = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})
        args = list(container.get("args") or [])
        if "--kv-transfer-config" not in " ".join(args):
            container["args"] = args + ["--kv-transfer-config", transfer]


def pod_template(c: Cluster, iec: Obj, spec: Obj) -> Obj:
    name = iec["metadata"]["name"]
    w = spec.get("worker") or {}
    port = int((w.get("modelInvocationPort") or {}).get("containerPort", 8080))
    port_name = (w.get("modelInvocationPort") or {}).get("name") or "http"
    mount = w.get("modelVolumeMount") or {}
    lb = spec.get("loadBalancer") or {}
    health = lb.get("healthCheckPath") or "/ping"
    env = [
        {
            "name": str(e.get("name")),
            **({"value": str(e.get("value", ""))} if "valueFrom" not in e else {"valueFrom": e["valueFrom"]}),
        }
        for e in w.get("environmentVariables") or []
        if isinstance(e, dict) and e.get("name")
    ]
    worker: Obj = {
        "name": name,
        "image": w.get("image", ""),
        "ports": [{"containerPort": port, "name": port_name, "protocol": "TCP"}],
        "resources": clone(w.get("resources") or {}),
        "volumeMounts": [
            {"name": mount.get("name") or "model-weights", "mountPath": mount.get("mountPath") or "/opt/ml/model"}
        ],
    }
    if env:
        worker["env"] = env
    for k in ("args", "command", "workingDir"):
        if w.get(k):
            worker[k] = clone(w[k])
    kv_cache(spec, worker)
    metrics = spec.get("metrics") or {}
    sidecar: Obj = {
        "name": "sidecar-reverse-proxy",
        "image": SIDECAR_IMAGE,
        "ports": [{"containerPort": 8081, "name": "http-proxy"}, {"containerPort": 9113, "name": "metrics"}],
        "env": [
            {"name": "MODEL_PORT", "value": str(port)},
            {"name": "MODEL_NAME", "value": str(spec.get("modelName", name))},
            {"name": "INVOCATION_PATH", "value": str(spec.get("invocationEndpoint") or "invocations")},
            {"name": "HEALTH_CHECK_PATH", "value": health},
        ],
        "readinessProbe": {"httpGet": {"path": health, "port": 8081}, "periodSeconds": 10, "timeoutSeconds": 1},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    otel: Obj = {
        "name": "otel-collector",
        "image": OTEL_IMAGE,
        "env": [{"name": "SCRAPE_INTERVAL", "value": f"{metrics.get('metricsScrapeIntervalSeconds', 15)}s"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    }
    volume, init = model_volume(c, iec, spec)
    pspec: Obj = {
        "containers": [worker, sidecar, otel],
        "volumes": [volume, {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if init is not None:
        pspec["initContainers"] = [init]
    types = spec.get("instanceTypes") or []
    if spec.get("instanceType") and not types:
        pspec["nodeSelector"] = {"node.kubernetes.io/instance-type": spec["instanceType"]}
    elif types:
        pspec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)}
                            ]
                        }
                    ]
                }
            }
        }
    if (spec.get("kubernetes") or {}).get("serviceAccountName"):
        pspec["serviceAccountName"] = spec["kubernetes"]["serviceAccountName"]
    default_pod_spec(pspec)
    return {"metadata": {"labels": labels(name)}, "spec": pspec}
