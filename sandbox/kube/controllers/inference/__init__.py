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

from ...operators import INFERENCE_ADDON, operator_active
from ...store import Cluster, now_iso
from ...util import clone
from ..base import Ctx, owner_ref, set_condition, sim
from .autoscaling import scaled_object
from .objects import SYSTEM_NS, delete, ensure, labels
from .routing import router
from .worker import pod_template

Obj = dict[str, Any]
IEC_GR = "inference.sagemaker.aws.amazon.com/inferenceendpointconfigs"
JSM_GR = "inference.sagemaker.aws.amazon.com/jumpstartmodels"
COMPONENT = "hyperpod-inference-operator"
FINALIZER = "inference.sagemaker.aws.amazon.com/finalizer"
DEFAULT_DEPLOY_SECONDS = 3600


def run(c: Cluster, ctx: Ctx) -> None:
    if c.type_by_gr(IEC_GR) is None or not operator_active(c, INFERENCE_ADDON):
        return
    for iec in c.list(IEC_GR):
        _endpoint(c, ctx, iec, iec.get("spec") or {}, IEC_GR)
    if c.type_by_gr(JSM_GR) is not None:
        for jsm in c.list(JSM_GR):
            _endpoint(c, ctx, jsm, _jumpstart_spec(c, jsm), JSM_GR)


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


def _endpoint(c: Cluster, ctx: Ctx, iec: Obj, spec: Obj, gr: str) -> None:
    ns, name = iec["metadata"]["namespace"], iec["metadata"]["name"]
    st = clone(iec.get("status") or {})
    if iec["metadata"].get("deletionTimestamp"):
        router(c, iec, spec, False)
        delete(c, "/persistentvolumes", "", f"{ns}-{name}-model")
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
    tpl = pod_template(c, iec, spec)
    dep_rt = c.type_by_gr("apps/deployments")
    assert dep_rt is not None
    dep = c.get("apps/deployments", ns, name)
    generation = iec["metadata"].get("generation", 1)
    if dep is None:
        dep = c.create(
            dep_rt,
            {
                "metadata": {"name": name, "labels": labels(name), "ownerReferences": [owner_ref(iec)]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": labels(name)}, "template": tpl},
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
    ensure(
        c,
        "/services",
        ns,
        {
            "metadata": {"name": f"{name}-service", "labels": labels(name), "ownerReferences": [owner_ref(iec)]},
            "spec": {
                "selector": labels(name),
                "ports": [{"name": "http", "port": 8080, "targetPort": 8081, "protocol": "TCP"}],
            },
        },
    )
    routing = bool((spec.get("intelligentRoutingSpec") or {}).get("enabled"))
    router(c, iec, spec, routing)
    problem = scaled_object(c, iec, spec)
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
            "selector": ",".join(f"{k}={v}" for k, v in labels(name).items()),
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
