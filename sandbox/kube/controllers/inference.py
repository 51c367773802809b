"""HyperPod inference operator (InferenceEndpointConfig → Deployment + Service + status) and KEDA
(ScaledObject → HPA + Ready conditions).

The inference operator acts while the `amazon-sagemaker-hyperpod-inference-operator` add-on is
set; KEDA while the `keda` add-on is set or a `keda-operator` Deployment exists.
"""

from __future__ import annotations

from typing import Any

from ..operators import INFERENCE_ADDON, KEDA, operator_active
from ..store import Cluster, now_iso
from ..util import clone
from .base import Ctx, owner_ref, set_condition

Obj = dict[str, Any]
IEC_GR = "inference.sagemaker.aws.amazon.com/inferenceendpointconfigs"
JSM_GR = "inference.sagemaker.aws.amazon.com/jumpstartmodels"
SO_GR = "keda.sh/scaledobjects"
COMPONENT = "hyperpod-inference-operator"


def run(c: Cluster, ctx: Ctx) -> None:
    if c.type_by_gr(IEC_GR) is not None and operator_active(c, INFERENCE_ADDON):
        for iec in c.list(IEC_GR):
            _endpoint(c, iec)
        if c.type_by_gr(JSM_GR) is not None:
            for jsm in c.list(JSM_GR):
                _endpoint(c, jsm, _jumpstart_spec(c, jsm), JSM_GR)
    if c.type_by_gr(SO_GR) is not None and operator_active(c, KEDA):
        for so in c.list(SO_GR):
            _scaled_object(c, so)


def _labels(iec: Obj) -> dict[str, str]:
    return {
        "app": iec["metadata"]["name"],
        "deploying-service": "hyperpod-inference",
        "sagemaker.amazonaws.com/inference-endpoint-config": iec["metadata"]["name"],
    }


def _pod_template(iec: Obj, spec: Obj) -> Obj:
    w = spec.get("worker") or {}
    port = (w.get("modelInvocationPort") or {}).get("containerPort", 8080)
    mount = w.get("modelVolumeMount") or {}
    env = [
        {"name": e.get("name"), "value": str(e.get("value", ""))}
        for e in w.get("environmentVariables") or []
        if isinstance(e, dict) and e.get("name")
    ]
    container: Obj = {
        "name": "model",
        "image": w.get("image", ""),
        "ports": [{"containerPort": port, "name": "http"}],
        "resources": clone(w.get("resources") or {}),
        "volumeMounts": [
            {"name": mount.get("name", "model-weights"), "mountPath": mount.get("mountPath", "/opt/ml/model")}
        ],
    }
    if env:
        container["env"] = env
    for k in ("args", "command", "workingDir"):
        if w.get(k):
            container[k] = clone(w[k])
    pspec: Obj = {"containers": [container], "volumes": [{"name": mount.get("name", "model-weights"), "emptyDir": {}}]}
    if spec.get("instanceType"):
        pspec["nodeSelector"] = {"node.kubernetes.io/instance-type": spec["instanceType"]}
    if (spec.get("kubernetes") or {}).get("serviceAccountName"):
        pspec["serviceAccountName"] = spec["kubernetes"]["serviceAccountName"]
    return {"metadata": {"labels": _labels(iec)}, "spec": pspec}


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
        "worker": {
            "image": f"763104351884.dkr.ecr.{c.region}.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124",
            "modelInvocationPort": {"containerPort": 8080},
            "modelVolumeMount": {"name": "model-weights"},
            "environmentVariables": [{"name": "SM_MODEL_ID", "value": model.get("modelId", "")}]
            + list(spec.get("environmentVariables") or []),
            "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
        },
    }


def _endpoint(c: Cluster, iec: Obj, spec_override: Obj | None = None, gr: str = IEC_GR) -> None:
    ns = iec["metadata"]["namespace"]
    name = iec["metadata"]["name"]
    spec = spec_override if spec_override is not None else (iec.get("spec") or {})
    replicas = int(spec.get("replicas", spec.get("InitialReplicaCount", 1)) or 1)
    dep_rt = c.type_by_gr("apps/deployments")
    svc_rt = c.type_by_gr("/services")
    assert dep_rt is not None and svc_rt is not None
    tpl = _pod_template(iec, spec)
    dep = c.get("apps/deployments", ns, name)
    st = clone(iec.get("status") or {})
    if dep is None:
        dep = c.create(
            dep_rt,
            {
                "metadata": {"name": name, "labels": _labels(iec), "ownerReferences": [owner_ref(iec)]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": _labels(iec)}, "template": tpl},
            },
            ns,
        )
        c.record_event(iec, "DeploymentCreated", f"Created deployment {name}", component=COMPONENT)
        st["state"] = "DeploymentInProgress"
    elif (
        dep["spec"].get("replicas") != replicas
        or dep["spec"].get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image")
        != tpl["spec"]["containers"][0]["image"]
    ):
        new = clone(dep)
        new["spec"]["replicas"] = replicas
        new["spec"]["template"] = tpl
        from ..admission import default_pod_spec

        default_pod_spec(new["spec"]["template"]["spec"])
        dep = c.put("apps/deployments", new)
        st["state"] = "DeploymentInProgress"
    port = tpl["spec"]["containers"][0]["ports"][0]["containerPort"]
    svc_name = f"{name}-service"
    if c.get("/services", ns, svc_name) is None:
        c.create(
            svc_rt,
            {
                "metadata": {"name": svc_name, "labels": _labels(iec), "ownerReferences": [owner_ref(iec)]},
                "spec": {"selector": _labels(iec), "ports": [{"name": "http", "port": 8080, "targetPort": port}]},
            },
            ns,
        )
    dst = dep.get("status") or {}
    avail = int(dst.get("availableReplicas", 0))
    ready = avail >= replicas
    endpoint_name = spec.get("endpointName") or name
    acct, region = c.account, c.region
    st.update(
        {
            "observedGeneration": iec["metadata"].get("generation", 1),
            "replicas": int(dst.get("replicas", 0)),
            "selector": ",".join(f"{k}={v}" for k, v in _labels(iec).items()),
            "deploymentStatus": {
                "name": name,
                "deploymentObjectOverallState": "DeploymentComplete" if ready else "DeploymentInProgress",
                "status": clone(dst),
                "reason": "NativeDeploymentObjectFound",
                "message": f"{avail}/{replicas} replicas available",
                "lastUpdated": (iec.get("status") or {}).get("deploymentStatus", {}).get("lastUpdated") or now_iso(),
            },
        }
    )
    conds = st.get("conditions") or []
    if ready:
        if st.get("state") != "DeploymentComplete":
            c.record_event(iec, "DeploymentComplete", f"Model {spec.get('modelName')} is deployed", component=COMPONENT)
        st["state"] = "DeploymentComplete"
        st["endpoints"] = {
            "sagemaker": {
                "state": "CreationCompleted",
                "endpointArn": f"arn:aws:sagemaker:{region}:{acct}:endpoint/{endpoint_name}",
                "configArn": f"arn:aws:sagemaker:{region}:{acct}:endpoint-config/{endpoint_name}",
                "modelArn": f"arn:aws:sagemaker:{region}:{acct}:model/{endpoint_name}",
            }
        }
        conds = set_condition(
            conds,
            "DeploymentComplete",
            "True",
            "DeploymentComplete",
            f"Invocation endpoint: http://{svc_name}.{ns}.svc.cluster.local:8080/"
            f"{spec.get('invocationEndpoint', 'invocations')}",
        )
    else:
        st["state"] = "DeploymentInProgress"
        conds = set_condition(
            conds, "DeploymentComplete", "False", "DeploymentInProgress", f"{avail}/{replicas} replicas available"
        )
    st["conditions"] = conds
    c.put_status(gr, iec, st)


def _scaled_object(c: Cluster, so: Obj) -> None:
    ns = so["metadata"]["namespace"]
    spec = so.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    kind = ref.get("kind", "Deployment")
    api_version = ref.get("apiVersion", "apps/v1")
    target_gr = {"Deployment": "apps/deployments", "StatefulSet": "apps/statefulsets"}.get(kind)
    target = c.get(target_gr, ns, ref.get("name", "")) if target_gr else None
    st = clone(so.get("status") or {})
    conds = st.get("conditions") or []
    hpa_name = f"keda-hpa-{so['metadata']['name']}"
    if target is None:
        conds = set_condition(
            conds,
            "Ready",
            "False",
            "ScaledObjectCheckFailed",
            f"ScaledObject doesn't have correct scaleTargetRef specification: {kind} {ref.get('name')} not found",
        )
        st["conditions"] = conds
        c.put_status(SO_GR, so, st)
        return
    group, _, version = api_version.rpartition("/")
    st.update(
        {
            "scaleTargetKind": f"{api_version}.{kind}",
            "hpaName": hpa_name,
            "scaleTargetGVKR": {
                "group": group,
                "version": version,
                "kind": kind,
                "resource": target_gr.split("/")[1] if target_gr else "",
            },
            "originalReplicaCount": st.get("originalReplicaCount", (target.get("spec") or {}).get("replicas", 1)),
            "triggersTypes": ",".join(t.get("type", "") for t in spec.get("triggers") or []),
            "externalMetricNames": [f"s{i}-{t.get('type', '')}" for i, t in enumerate(spec.get("triggers") or [])],
        }
    )
    conds = set_condition(
        conds, "Ready", "True", "ScaledObjectReady", "ScaledObject is defined correctly and is ready for scaling"
    )
    conds = set_condition(
        conds, "Active", "False", "ScalerNotActive", "Scaling is not performed because triggers are not active"
    )
    conds = set_condition(
        conds, "Fallback", "False", "NoFallbackFound", "No fallbacks are active on this scaled object"
    )
    conds = set_condition(conds, "Paused", "False", "ScaledObjectUnpaused", "ScaledObject is not paused")
    st["conditions"] = conds
    hpa_rt = c.type_by_gr("autoscaling/horizontalpodautoscalers")
    if hpa_rt and c.get("autoscaling/horizontalpodautoscalers", ns, hpa_name) is None:
        c.create(
            hpa_rt,
            {
                "metadata": {
                    "name": hpa_name,
                    "labels": {
                        "scaledobject.keda.sh/name": so["metadata"]["name"],
                        "app.kubernetes.io/managed-by": "keda-operator",
                    },
                    "ownerReferences": [owner_ref(so)],
                },
                "spec": {
                    "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": ref.get("name")},
                    "minReplicas": max(int(spec.get("minReplicaCount", 0) or 0), 1),
                    "maxReplicas": int(spec.get("maxReplicaCount", 100) or 100),
                    "metrics": [
                        {
                            "type": "External",
                            "external": {
                                "metric": {
                                    "name": n,
                                    "selector": {"matchLabels": {"scaledobject.keda.sh/name": so["metadata"]["name"]}},
                                },
                                "target": {"type": "AverageValue", "averageValue": "1"},
                            },
                        }
                        for n in st["externalMetricNames"]
                    ],
                },
            },
            ns,
        )
    c.put_status(SO_GR, so, st)
