"""The HyperPod inference operator: InferenceEndpointConfig (and JumpStartModel) → what the real
operator creates, with its status.

For an endpoint `<name>` in namespace `<ns>`:
- the model volume: for `s3` a Mountpoint-for-S3 PersistentVolume `<ns>-<name>-model` (bucket,
  `prefix <modelLocation>/`) + claim `<name>-model`; for `fsx` an FSx PersistentVolume + claim;
  for `huggingface` an emptyDir filled by an init container running `hf download` (token from
  `tokenSecretRef`);
- Deployment `<name>` (labels `app=<name>`, `deploying-service=hyperpod-inference`) whose pods
  run the worker container `<name>` plus the `sidecar-reverse-proxy` (port 8081, metrics 9113)
  and `otel-collector` sidecars, a readiness probe on the load balancer's health check path;
  `kvCacheSpec` becomes LMCache settings on the worker (`--kv-transfer-config` for vLLM, the
  LMCACHE_* environment, L2 at `sagemaker-hyperpod://$(NODE_IP):9200` for tiered storage or the
  Redis URL);
- Service `<name>-service` (port 8080 → the sidecar);
- with `intelligentRoutingSpec.enabled`: the router Deployment `<name>-<ns>-router` and Service
  `<name>-<ns>-routing-service` (port 443) in `hyperpod-inference-system`;
- with `autoScalingSpec`: a KEDA ScaledObject `<name>-scaled-object` on the Deployment;
- status: `state` (DeploymentPending → DeploymentInProgress → DeploymentComplete, or
  DeploymentFailed after maxDeployTimeInSeconds), a `Ready` condition, `deploymentStatus` (the
  Deployment's status), `replicas`, `selector`, `metricsStatus`, and `endpoints.sagemaker` when
  `endpointName` is set.
Deleting the endpoint removes all of it (a finalizer lets the operator clean the router out of
the other namespace). Names marked above are the sandbox's where the operator's own are not
published (documented in sandbox/kube/README.md).
"""

from __future__ import annotations

import json
from typing import Any

from ...serving.commands import program
from ..admission import default_pod_spec
from ..operators import INFERENCE_ADDON, operator_active
from ..store import Cluster, now_iso
from ..util import clone
from .base import Ctx, owner_ref, set_condition, sim

Obj = dict[str, Any]
IEC_GR = "inference.sagemaker.aws.amazon.com/inferenceendpointconfigs"
JSM_GR = "inference.sagemaker.aws.amazon.com/jumpstartmodels"
SO_GR = "keda.sh/scaledobjects"
COMPONENT = "hyperpod-inference-operator"
SYSTEM_NS = "hyperpod-inference-system"
FINALIZER = "inference.sagemaker.aws.amazon.com/finalizer"
MANAGED = "inference.sagemaker.aws.amazon.com/endpoint"
SIDECAR_IMAGE = "public.ecr.aws/sagemaker/hyperpod-inference-sidecar-reverse-proxy:v3.2"
OTEL_IMAGE = "public.ecr.aws/aws-observability/aws-otel-collector:v0.43.3"
ROUTER_IMAGE = "public.ecr.aws/sagemaker/hyperpod-inference-router:v3.2"
HF_IMAGE = "public.ecr.aws/docker/library/python:3.12"
DEFAULT_DEPLOY_SECONDS = 3600


def run(c: Cluster, ctx: Ctx) -> None:
    if c.type_by_gr(IEC_GR) is None or not operator_active(c, INFERENCE_ADDON):
        return
    for iec in c.list(IEC_GR):
        _endpoint(c, ctx, iec, iec.get("spec") or {}, IEC_GR)
    if c.type_by_gr(JSM_GR) is not None:
        for jsm in c.list(JSM_GR):
            _endpoint(c, ctx, jsm, _jumpstart_spec(c, jsm), JSM_GR)


def _labels(name: str) -> dict[str, str]:
    return {"app": name, "deploying-service": "hyperpod-inference"}


def _ensure(c: Cluster, gr: str, ns: str, body: Obj) -> Obj:
    """Create when missing; rewrite what the operator owns when its desired state changed (compared
    with what it last wrote, not with the stored object, which carries server defaults)."""
    cur = c.get(gr, ns, body["metadata"]["name"])
    rt = c.type_by_gr(gr)
    assert rt is not None
    keys = [k for k in body if k not in ("metadata", "status", "apiVersion", "kind")]
    want = json.dumps({k: body[k] for k in keys} | {"labels": body["metadata"].get("labels")}, sort_keys=True)
    if cur is None:
        obj = c.create(rt, body, ns)
        sim(c, obj)["operator_applied"] = want
        return obj
    if sim(c, cur).get("operator_applied") == want:
        return cur
    new = clone(cur)
    for k in keys:
        new[k] = clone(body[k])
    new["metadata"].setdefault("labels", {}).update(body["metadata"].get("labels") or {})
    obj = c.put(gr, new)
    sim(c, obj)["operator_applied"] = want
    return obj


def _jumpstart_spec(c: Cluster, jsm: Obj) -> Obj:
    """A JumpStartModel deploys like an InferenceEndpointConfig whose worker is the JumpStart
    serving container (LMI/DJL) for the model."""
    spec = jsm.get("spec") or {}
    model = spec.get("model") or {}
    return {
        "modelName": model.get("modelId", jsm["metadata"]["name"]),
        "endpointName": (spec.get("sageMakerEndpoint") or {}).get("name") or jsm["metadata"]["name"],
        "instanceType": (spec.get("server") or {}).get("instanceType"),
        "replicas": spec.get("replicas", 1),
        "invocationEndpoint": "invocations",
        "modelSourceConfig": {"modelSourceType": "jumpstart"},
        "worker": {
            "image": f"763104351884.dkr.ecr.{c.region}.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128",
            "modelInvocationPort": {"containerPort": 8080, "name": "http"},
            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
            "environmentVariables": [{"name": "SM_MODEL_ID", "value": model.get("modelId", "")}]
            + list(spec.get("environmentVariables") or []),
            "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
        },
    }


# ------------------------------------------------------------------ the model volume


def _model_volume(c: Cluster, iec: Obj, spec: Obj) -> tuple[Obj, Obj | None]:
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
        _ensure(
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
        _ensure(
            c,
            "/persistentvolumeclaims",
            ns,
            {
                "metadata": {"name": claim, "labels": _labels(name), "ownerReferences": owner},
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


# ------------------------------------------------------------------ the worker


def _kv_cache(spec: Obj, container: Obj) -> None:
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


def _pod_template(c: Cluster, iec: Obj, spec: Obj) -> Obj:
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
    _kv_cache(spec, worker)
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
    volume, init = _model_volume(c, iec, spec)
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
    return {"metadata": {"labels": _labels(name)}, "spec": pspec}


# ------------------------------------------------------------------ router and autoscaling


def _router(c: Cluster, iec: Obj, spec: Obj, want: bool) -> None:
    name, ns = iec["metadata"]["name"], iec["metadata"]["namespace"]
    rname = f"{name}-{ns}-router"
    svc_name = f"{name}-{ns}-routing-service"
    if not want:
        _delete(c, "apps/deployments", SYSTEM_NS, rname)
        _delete(c, "/services", SYSTEM_NS, svc_name)
        return
    if c.get("/namespaces", "", SYSTEM_NS) is None:
        ns_rt = c.type_by_gr("/namespaces")
        assert ns_rt is not None
        c.create(ns_rt, {"metadata": {"name": SYSTEM_NS}})
    routing = spec.get("intelligentRoutingSpec") or {}
    w = spec.get("worker") or {}
    port = int((w.get("modelInvocationPort") or {}).get("containerPort", 8080))
    session = next(
        (str(e.get("value")) for e in w.get("environmentVariables") or [] if e.get("name") == "SESSION_KEY"),
        "x-user-id",
    )
    labels = {"app": rname, MANAGED: f"{ns}.{name}"}
    args = [
        "--port",
        "8080",
        "--service-discovery",
        "k8s",
        "--k8s-namespace",
        ns,
        "--k8s-label-selector",
        f"app={name}",
        "--k8s-port",
        str(port),
        "--routing-logic",
        str(routing.get("routingStrategy") or "prefixaware"),
        "--session-key",
        session,
    ]
    tpl_spec: Obj = {
        "containers": [
            {
                "name": "router-container",
                "image": ROUTER_IMAGE,
                "command": ["python3", "-m", "vllm_router.app"],
                "args": args,
                "ports": [{"containerPort": 8080, "name": "http"}],
                "resources": {"requests": {"cpu": "2", "memory": "4Gi"}},
            },
            {
                "name": "otel-collector",
                "image": OTEL_IMAGE,
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
            },
        ],
    }
    default_pod_spec(tpl_spec)
    _ensure(
        c,
        "apps/deployments",
        SYSTEM_NS,
        {
            "metadata": {"name": rname, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": rname}},
                "template": {"metadata": {"labels": dict(labels)}, "spec": tpl_spec},
            },
        },
    )
    _ensure(
        c,
        "/services",
        SYSTEM_NS,
        {
            "metadata": {"name": svc_name, "labels": labels},
            "spec": {
                "selector": {"app": rname},
                "ports": [{"name": "https", "port": 443, "targetPort": 8080, "protocol": "TCP"}],
            },
        },
    )


def _scaled_object(c: Cluster, iec: Obj, spec: Obj) -> str:
    """autoScalingSpec → ScaledObject; returns a problem message ("" when fine)."""
    name, ns = iec["metadata"]["name"], iec["metadata"]["namespace"]
    so_name = f"{name}-scaled-object"
    auto = spec.get("autoScalingSpec")
    if not auto:
        _delete(c, SO_GR, ns, so_name)
        return ""
    if c.type_by_gr(SO_GR) is None:
        return "autoScalingSpec needs KEDA: the ScaledObject CRD (keda.sh/v1alpha1) is not installed"
    triggers = []
    proms = list(auto.get("prometheusTriggerList") or []) or (
        [auto["prometheusTrigger"]] if auto.get("prometheusTrigger") else []
    )
    for t in proms:
        md = {
            "serverAddress": str(t.get("serverAddress", "")),
            "query": str(t.get("query", "")),
            "threshold": str(t.get("targetValue", "")),
            "activationThreshold": str(t.get("activationTargetValue", 0)),
        }
        if t.get("namespace"):
            md["namespace"] = t["namespace"]
        if t.get("customHeaders"):
            md["customHeaders"] = t["customHeaders"]
        trig: Obj = {
            "type": "prometheus",
            "metadata": md,
            "metricType": "Value" if t.get("metricType") == "Value" else "AverageValue",
        }
        if t.get("name"):
            trig["name"] = t["name"]
        triggers.append(trig)
    cws = list(auto.get("cloudWatchTriggerList") or []) or (
        [auto["cloudWatchTrigger"]] if auto.get("cloudWatchTrigger") else []
    )
    for t in cws:
        triggers.append(
            {
                "type": "aws-cloudwatch",
                "metadata": {
                    "namespace": str(t.get("namespace", "")),
                    "metricName": str(t.get("metricName", "")),
                    "targetMetricValue": str(t.get("targetValue", "")),
                    "awsRegion": c.region,
                    "metricStat": str(t.get("metricStat", "Average")),
                },
                "metricType": "Value" if t.get("metricType") == "Value" else "AverageValue",
            }
        )
    body = {
        "metadata": {"name": so_name, "labels": _labels(name), "ownerReferences": [owner_ref(iec)]},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicaCount": int(auto.get("minReplicaCount", 1)),
            "maxReplicaCount": int(auto.get("maxReplicaCount", 5)),
            "pollingInterval": int(auto.get("pollingInterval", 30)),
            "cooldownPeriod": int(auto.get("cooldownPeriod", 300)),
            "initialCooldownPeriod": int(auto.get("initialCooldownPeriod", 300)),
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleDown": {"stabilizationWindowSeconds": int(auto.get("scaleDownStabilizationTime", 300))},
                        "scaleUp": {"stabilizationWindowSeconds": int(auto.get("scaleUpStabilizationTime", 0))},
                    }
                }
            },
            "triggers": triggers,
        },
    }
    _ensure(c, SO_GR, ns, body)
    return ""


def _delete(c: Cluster, gr: str, ns: str, name: str) -> None:
    rt = c.type_by_gr(gr)
    if rt is not None and c.get(gr, ns, name) is not None:
        c.delete(rt, ns, name)


# ------------------------------------------------------------------ reconcile


def _endpoint(c: Cluster, ctx: Ctx, iec: Obj, spec: Obj, gr: str) -> None:
    ns, name = iec["metadata"]["namespace"], iec["metadata"]["name"]
    st = clone(iec.get("status") or {})
    if iec["metadata"].get("deletionTimestamp"):
        _router(c, iec, spec, False)
        _delete(c, "/persistentvolumes", "", f"{ns}-{name}-model")
        if FINALIZER in (iec["metadata"].get("finalizers") or []):
            new = clone(iec)
            new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != FINALIZER]
            c.put(gr, new)
        return
    if FINALIZER not in (iec["metadata"].get("finalizers") or []):
        new = clone(iec)
        new["metadata"]["finalizers"] = list(new["metadata"].get("finalizers") or []) + [FINALIZER]
        iec = c.put(gr, new)
        c.record_event(iec, "DeploymentPending", f"Reconciling model deployment {name}", component=COMPONENT)
    s = sim(c, iec)
    s.setdefault("t_created", ctx.now)
    replicas = int(spec.get("replicas", spec.get("InitialReplicaCount", 1)) or 1)
    tpl = _pod_template(c, iec, spec)
    dep_rt = c.type_by_gr("apps/deployments")
    assert dep_rt is not None
    dep = c.get("apps/deployments", ns, name)
    generation = iec["metadata"].get("generation", 1)
    if dep is None:
        dep = c.create(
            dep_rt,
            {
                "metadata": {"name": name, "labels": _labels(name), "ownerReferences": [owner_ref(iec)]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": _labels(name)}, "template": tpl},
            },
            ns,
        )
        c.record_event(iec, "DeploymentCreated", f"Created deployment {name}", component=COMPONENT)
    elif s.get("generation") != generation or s.get("template") != json.dumps(tpl, sort_keys=True):
        new = clone(dep)
        new["spec"]["template"] = tpl
        # once autoscaling owns the replica count, spec.replicas only seeds it (as with KEDA + HPA)
        if s.get("generation") != generation and not spec.get("autoScalingSpec"):
            new["spec"]["replicas"] = replicas
        dep = c.put("apps/deployments", new)
        s["t_created"] = ctx.now
    s["generation"] = generation
    s["template"] = json.dumps(tpl, sort_keys=True)
    svc_rt = c.type_by_gr("/services")
    assert svc_rt is not None
    _ensure(
        c,
        "/services",
        ns,
        {
            "metadata": {"name": f"{name}-service", "labels": _labels(name), "ownerReferences": [owner_ref(iec)]},
            "spec": {
                "selector": _labels(name),
                "ports": [{"name": "http", "port": 8080, "targetPort": 8081, "protocol": "TCP"}],
            },
        },
    )
    routing = bool((spec.get("intelligentRoutingSpec") or {}).get("enabled"))
    _router(c, iec, spec, routing)
    problem = _scaled_object(c, iec, spec)
    dst = dep.get("status") or {}
    want = int(dep["spec"].get("replicas", replicas))
    avail = int(dst.get("availableReplicas", 0))
    router_ready = True
    if routing:
        rdep = c.get("apps/deployments", SYSTEM_NS, f"{name}-{ns}-router") or {}
        router_ready = int((rdep.get("status") or {}).get("availableReplicas", 0)) >= 1
    ready = avail >= max(want, 1) and router_ready and not problem
    endpoint_name = spec.get("endpointName")
    metrics = spec.get("metrics") or {}
    st.update(
        {
            "observedGeneration": generation,
            "replicas": int(dst.get("replicas", 0)),
            "selector": ",".join(f"{k}={v}" for k, v in _labels(name).items()),
            "deploymentStatus": {
                "name": name,
                "deploymentObjectOverallState": "DeploymentComplete" if ready else "DeploymentInProgress",
                "status": clone(dst),
                "reason": "NativeDeploymentObjectFound",
                "message": f"Deployment {name} has {avail}/{want} available replicas",
                "lastUpdated": now_iso(),
            },
            "metricsStatus": {
                "enabled": bool(metrics.get("enabled", True)),
                "metricsScrapeIntervalSeconds": int(metrics.get("metricsScrapeIntervalSeconds", 15)),
                "modelMetrics": {
                    "path": (metrics.get("modelMetrics") or {}).get("path", "/metrics"),
                    "port": int((metrics.get("modelMetrics") or {}).get("port", 8080)),
                },
                "state": "Enabled" if metrics.get("enabled", True) else "Disabled",
            },
        }
    )
    conds = st.get("conditions") or []
    max_s = float(spec.get("maxDeployTimeInSeconds") or DEFAULT_DEPLOY_SECONDS)
    if ready:
        if st.get("state") != "DeploymentComplete":
            c.record_event(iec, "DeploymentComplete", f"Model {spec.get('modelName')} is deployed", component=COMPONENT)
        st["state"] = "DeploymentComplete"
        conds = set_condition(
            conds, "Ready", "True", "DeploymentComplete", f"Deployment {name} is ready with {avail}/{want} replicas"
        )
        if endpoint_name:
            acct, region = c.account, c.region
            st["endpoints"] = {
                "sagemaker": {
                    "state": "CreationCompleted",
                    "endpointArn": f"arn:aws:sagemaker:{region}:{acct}:endpoint/{endpoint_name}",
                    "configArn": f"arn:aws:sagemaker:{region}:{acct}:endpoint-config/{endpoint_name}",
                    "modelArn": f"arn:aws:sagemaker:{region}:{acct}:model/{endpoint_name}",
                }
            }
    elif ctx.elapsed(s["t_created"]) > max_s and st.get("state") != "DeploymentComplete":
        if st.get("state") != "DeploymentFailed":
            c.record_event(
                iec,
                "DeploymentFailed",
                f"Deployment {name} did not become available within {int(max_s)} seconds",
                "Warning",
                component=COMPONENT,
            )
        st["state"] = "DeploymentFailed"
        st["deploymentStatus"]["deploymentObjectOverallState"] = "DeploymentFailed"
        conds = set_condition(
            conds,
            "Ready",
            "False",
            "DeploymentFailed",
            problem or f"Deployment {name} did not become available within {int(max_s)} seconds",
        )
    else:
        st["state"] = "DeploymentInProgress" if c.list("/pods", ns) else "DeploymentPending"
        why = problem or _waiting_reason(c, ns, name) or f"{avail}/{want} replicas available"
        conds = set_condition(conds, "Ready", "False", "DeploymentInProgress", why)
    st["conditions"] = [dict(x, observedGeneration=generation) for x in conds]
    c.put_status(gr, iec, st)


def _waiting_reason(c: Cluster, ns: str, name: str) -> str:
    """What a user would want to know while pods are not ready (crash loop, unschedulable)."""
    for p in c.list("/pods", ns):
        if (p["metadata"].get("labels") or {}).get("app") != name:
            continue
        for cs in (p.get("status") or {}).get("containerStatuses") or []:
            w = (cs.get("state") or {}).get("waiting") or {}
            if w.get("reason") == "CrashLoopBackOff":
                return f"pod {p['metadata']['name']}: container {cs.get('name')} is in CrashLoopBackOff"
        for cond in (p.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return f"pod {p['metadata']['name']} is unschedulable: {cond.get('message', '')}"
    return ""
