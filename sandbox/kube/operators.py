"""EKS add-ons → what they put in the cluster: system workloads, CRDs, and whether an operator runs.

An operator's controller only acts while its add-on is ACTIVE (`set_addons`) or, for operators
users install themselves with Helm (KubeRay, KEDA), while a Deployment of the operator exists.
Removing an add-on removes its workloads; its CRDs (and custom objects) stay, as with
`aws eks delete-addon --preserve`, and then keep no status because no controller runs.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .store import CRD_GR, Cluster
from .util import clone

Obj = dict[str, Any]
CRD_DIR = Path(__file__).parent / "crds"

TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference-operator"
KUBERAY = "kuberay-operator"
KEDA = "keda"
MANAGED_LABEL = "sandbox.instantstart.io/addon"

HPJ_GROUP = "sagemaker.amazonaws.com"
HPJ_GR = f"{HPJ_GROUP}/hyperpodpytorchjobs"


def _int(desc: str = "", minimum: int | None = None) -> Obj:
    s: Obj = {"type": "integer", "format": "int32"}
    if desc:
        s["description"] = desc
    if minimum is not None:
        s["minimum"] = minimum
    return s


_PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

# Written from the HyperPod CLI's models (no public CRD file exists); see reference README.
HYPERPOD_PYTORCHJOB_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["replicaSpecs"],
            "properties": {
                "nprocPerNode": {
                    "x-kubernetes-int-or-string": True,
                    "description": "processes per node: a number, or auto/gpu",
                },
                "replicaSpecs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "template"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "replicas": _int("pods of this replica spec", 0),
                            "maxReplicas": _int("", 0),
                            "spares": _int("", 0),
                            "template": dict(
                                _PRESERVE, description="a pod template", **{"x-kubernetes-embedded-resource": False}
                            ),
                        },
                    },
                },
                "runPolicy": {
                    "type": "object",
                    "properties": {
                        "jobMaxRetryCount": _int("job-level retries before the job fails", 0),
                        "cleanPodPolicy": {"type": "string", "enum": ["All", "Running", "None"]},
                        "activeDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 0},
                        "faultDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 0},
                        "startupDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 0},
                        "ttlSecondsAfterFinished": _int("", 0),
                        "suspend": {"type": "boolean"},
                        "restartPolicy": {
                            "type": "object",
                            "properties": {
                                "numRestartBeforeFullJobRestart": _int("", 0),
                                "evalPeriodSeconds": _int("", 0),
                                "maxFullJobRestarts": _int("", 0),
                                "maxNumRepeatOffendersToAvoid": _int("", 0),
                            },
                        },
                        "logMonitoringConfiguration": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "logPattern": {"type": "string"},
                                    "expectedStartCutOffInSeconds": _int("", 0),
                                    "expectedRecurringFrequencyInSeconds": _int("", 0),
                                    "metricThreshold": {"type": "number"},
                                    "operator": {"type": "string"},
                                    "metricEvaluationDataPoints": _int("", 1),
                                    "stopPattern": {"type": "string"},
                                },
                            },
                        },
                    },
                },
                "elasticPolicy": {
                    "type": "object",
                    "properties": {
                        "minReplicas": _int("", 0),
                        "maxReplicas": _int("", 0),
                        "replicaIncrementStep": _int("", 1),
                        "replicaDiscreteValues": {"type": "array", "items": {"type": "integer"}},
                        "scalingTimeoutInSeconds": _int("", 0),
                        "gracefulShutdownTimeoutInSeconds": _int("", 0),
                    },
                },
            },
        },
        "status": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "conditions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "status"],
                        "properties": {
                            "type": {"type": "string"},
                            "status": {"type": "string"},
                            "reason": {"type": "string"},
                            "message": {"type": "string"},
                            "lastTransitionTime": {"type": "string", "format": "date-time"},
                        },
                    },
                },
                "restartCount": {"type": "integer"},
                "restartStatus": _PRESERVE,
                "latestFaultyPodInstanceList": {"type": "array", "items": _PRESERVE},
                "elasticScalingStatus": _PRESERVE,
                "startTime": {"type": "string"},
                "completionTime": {"type": "string"},
            },
        },
    },
}

HYPERPOD_PYTORCHJOB_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "hyperpodpytorchjobs.sagemaker.amazonaws.com"},
    "spec": {
        "group": HPJ_GROUP,
        "names": {
            "kind": "HyperPodPyTorchJob",
            "listKind": "HyperPodPyTorchJobList",
            "plural": "hyperpodpytorchjobs",
            "singular": "hyperpodpytorchjob",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": HYPERPOD_PYTORCHJOB_SCHEMA},
            }
        ],
    },
}


@cache
def load_crd(filename: str) -> Obj:
    """An upstream CRD file. Parsing the big ones as YAML takes seconds, so a JSON rendering is
    cached in the temp dir (keyed by size and mtime); the YAML stays the source of truth."""
    src = CRD_DIR / filename
    st = src.stat()
    cache_dir = Path(tempfile.gettempdir()) / "instantstart-sandbox-crds"
    cache_file = cache_dir / f"{filename}.{st.st_size}.{int(st.st_mtime)}.json"
    try:
        return json.loads(cache_file.read_text())
    except (OSError, ValueError):
        pass
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(src) as f:
        data = yaml.load(f, Loader=loader)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, default=str))
        os.replace(tmp, cache_file)
    except OSError:
        pass
    return data


RAY_CRDS = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml")
INFERENCE_CRDS = (
    "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
    "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml",
)
KEDA_CRDS = ("keda.sh_scaledobjects.yaml",)


def _deploy(name: str, ns: str, image: str, replicas: int = 1) -> Obj:
    labels = {"app.kubernetes.io/name": name}
    return {
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "tolerations": [{"operator": "Exists", "key": "CriticalAddonsOnly"}],
                    "containers": [
                        {"name": "manager", "image": image, "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}
                    ],
                },
            },
        },
    }


def _daemon(name: str, ns: str, image: str) -> Obj:
    labels = {"k8s-app": name}
    return {
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {"name": name, "image": image, "resources": {"requests": {"cpu": "25m", "memory": "32Mi"}}}
                    ],
                },
            },
        },
    }


ECR = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
FSX_IMAGE = "public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver:v1.3.0"
S3_CSI_IMAGE = "public.ecr.aws/mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver:v1.11.0"

# add-on name → (namespace, [("deployment"|"daemonset", manifest)], [CRD sources])
ADDONS: dict[str, tuple[str, list[tuple[str, Obj]], list[Any]]] = {
    "vpc-cni": (
        "kube-system",
        [("daemonset", _daemon("aws-node", "kube-system", f"{ECR}/amazon-k8s-cni:v1.19.2"))],
        [],
    ),
    "kube-proxy": (
        "kube-system",
        [("daemonset", _daemon("kube-proxy", "kube-system", f"{ECR}/eks/kube-proxy:v1.31.3-eksbuild.2"))],
        [],
    ),
    "coredns": (
        "kube-system",
        [("deployment", _deploy("coredns", "kube-system", f"{ECR}/eks/coredns:v1.11.4", 2))],
        [],
    ),
    "eks-pod-identity-agent": (
        "kube-system",
        [("daemonset", _daemon("eks-pod-identity-agent", "kube-system", f"{ECR}/eks/eks-pod-identity-agent:0.1.10"))],
        [],
    ),
    "cert-manager": (
        "cert-manager",
        [
            ("deployment", _deploy("cert-manager", "cert-manager", "quay.io/jetstack/cert-manager-controller:v1.16.2")),
            (
                "deployment",
                _deploy("cert-manager-webhook", "cert-manager", "quay.io/jetstack/cert-manager-webhook:v1.16.2"),
            ),
            (
                "deployment",
                _deploy("cert-manager-cainjector", "cert-manager", "quay.io/jetstack/cert-manager-cainjector:v1.16.2"),
            ),
        ],
        [],
    ),
    "aws-fsx-csi-driver": (
        "kube-system",
        [
            ("deployment", _deploy("fsx-csi-controller", "kube-system", FSX_IMAGE, 2)),
            ("daemonset", _daemon("fsx-csi-node", "kube-system", FSX_IMAGE)),
        ],
        [],
    ),
    "aws-mountpoint-s3-csi-driver": (
        "kube-system",
        [("daemonset", _daemon("s3-csi-node", "kube-system", S3_CSI_IMAGE))],
        [],
    ),
    "amazon-sagemaker-hyperpod-observability": (
        "hyperpod-observability",
        [
            (
                "deployment",
                _deploy(
                    "hyperpod-observability-operator",
                    "hyperpod-observability",
                    "public.ecr.aws/sagemaker/hyperpod-observability:latest",
                ),
            )
        ],
        [],
    ),
    TRAINING_ADDON: (
        "aws-hyperpod",
        [
            (
                "deployment",
                _deploy(
                    "hp-training-operator-controller-manager",
                    "aws-hyperpod",
                    "public.ecr.aws/sagemaker/hyperpod-training-operator:v1.0.0",
                ),
            )
        ],
        [HYPERPOD_PYTORCHJOB_CRD],
    ),
    INFERENCE_ADDON: (
        "hyperpod-inference-system",
        [
            (
                "deployment",
                _deploy(
                    "hyperpod-inference-operator-controller-manager",
                    "hyperpod-inference-system",
                    "public.ecr.aws/sagemaker/hyperpod-inference-operator:v2.0.0",
                ),
            )
        ],
        list(INFERENCE_CRDS),
    ),
    KUBERAY: (
        "kuberay-system",
        [("deployment", _deploy("kuberay-operator", "kuberay-system", "quay.io/kuberay/operator:v1.4.0"))],
        list(RAY_CRDS),
    ),
    KEDA: (
        "keda",
        [
            ("deployment", _deploy("keda-operator", "keda", "ghcr.io/kedacore/keda:2.16.1")),
            (
                "deployment",
                _deploy("keda-operator-metrics-apiserver", "keda", "ghcr.io/kedacore/keda-metrics-apiserver:2.16.1"),
            ),
        ],
        list(KEDA_CRDS),
    ),
}

# operators a user may install without an EKS add-on: Deployment names that count as "installed"
SELF_INSTALLED = {KUBERAY: {"kuberay-operator"}, KEDA: {"keda-operator"}}


def operator_active(c: Cluster, addon: str) -> bool:
    if addon in c.addons:
        return True
    names = SELF_INSTALLED.get(addon)
    if not names:
        return False
    return any(d["metadata"]["name"] in names for d in c.list("apps/deployments"))


def install_crd(c: Cluster, crd: Obj) -> None:
    name = crd["metadata"]["name"]
    rt = c.type_by_gr(CRD_GR)
    assert rt is not None
    if c.get(CRD_GR, "", name) is None:
        body = clone(crd)
        body.pop("status", None)
        body["metadata"] = {
            "name": name,
            "labels": {MANAGED_LABEL: "true"},
            "annotations": dict(crd["metadata"].get("annotations") or {}),
        }
        c.create(rt, body)


def preload(names: set[str]) -> None:
    """Parse the CRD files these add-ons need (slow the first time) before the cluster lock is taken."""
    for addon in names:
        for crd in (ADDONS.get(addon) or ("", [], []))[2]:
            if isinstance(crd, str):
                load_crd(crd)


def apply_addons(c: Cluster, names: set[str]) -> None:
    before = set(c.addons)
    c.addons = set(names)
    for addon in names:
        spec = ADDONS.get(addon)
        if spec is None:
            continue
        ns, workloads, crds = spec
        for crd in crds:
            install_crd(c, crd if isinstance(crd, dict) else load_crd(crd))
        ns_rt = c.type_by_gr("/namespaces")
        assert ns_rt is not None
        if c.get("/namespaces", "", ns) is None:
            c.create(ns_rt, {"metadata": {"name": ns}})
        for kind, manifest in workloads:
            gr = "apps/deployments" if kind == "deployment" else "apps/daemonsets"
            if c.get(gr, ns, manifest["metadata"]["name"]) is None:
                body = clone(manifest)
                body["metadata"]["labels"][MANAGED_LABEL] = addon
                rt = c.type_by_gr(gr)
                assert rt is not None
                c.create(rt, body, ns)
    for addon in before - names:
        spec = ADDONS.get(addon)
        if spec is None:
            continue
        ns, workloads, _crds = spec
        for kind, manifest in workloads:
            gr = "apps/deployments" if kind == "deployment" else "apps/daemonsets"
            rt = c.type_by_gr(gr)
            if rt is not None and c.get(gr, ns, manifest["metadata"]["name"]) is not None:
                c.delete(rt, ns, manifest["metadata"]["name"])
