"""The CRDs operators register: upstream files from sandbox/kube/crds (loaded once, cached as JSON),
the HyperPodPyTorchJob CRD written from the HyperPod CLI's models (no public CRD file exists), and
cert-manager's CRDs (names and scopes as upstream; schemas keep unknown fields, since nothing in the
sandbox validates certificates).
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
CRD_DIR = Path(__file__).resolve().parent.parent / "crds"

HPJ_GROUP = "sagemaker.amazonaws.com"
HPJ_GR = f"{HPJ_GROUP}/hyperpodpytorchjobs"


def root_schema(spec: Obj, status: Obj, required: tuple[str, ...] = ()) -> Obj:
    """The openAPIV3Schema of a kind: apiVersion, kind, metadata, and its spec and status."""
    out: Obj = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    if required:
        out["required"] = list(required)
    return out


def _int(desc: str = "", minimum: int | None = None) -> Obj:
    s: Obj = {"type": "integer", "format": "int32"}
    if desc:
        s["description"] = desc
    if minimum is not None:
        s["minimum"] = minimum
    return s


_PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

# Written from the HyperPod CLI's models (no public CRD file exists); see reference README.
HYPERPOD_PYTORCHJOB_SCHEMA: Obj = root_schema(
    spec={
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
    status={
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
            "restartStatus": {
                "type": "object",
                "properties": {
                    "currentEvalPeriod": {"type": "integer"},
                    "fullJobRestartCount": {"type": "integer"},
                    "restartCount": {"type": "integer"},
                },
            },
            "latestFaultyPodInstanceList": {
                "type": "object",
                "properties": {
                    "restartType": {"type": "string"},
                    "faultyInstanceIdList": {"type": "array", "items": {"type": "string"}},
                    "faultyPodList": {"type": "array", "items": {"type": "string"}},
                    "faultyRankList": {"type": "array", "items": {"type": "string"}},
                },
            },
            "masterAddr": {"type": "string"},
            "masterPort": {"type": "string"},
            "jobPods": {"type": "array", "items": _PRESERVE},
            "elasticScalingStatus": _PRESERVE,
            "startTime": {"type": "string"},
            "completionTime": {"type": "string"},
        },
    },
)

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


def crd(
    group: str,
    kind: str,
    plural: str,
    schema: Obj,
    scope: str = "Namespaced",
    columns: list[Obj] | None = None,
    **names: Any,
) -> Obj:
    """A one-version (v1) CRD with a status subresource, as the operators we write register them."""
    version: Obj = {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
    if columns:
        version["additionalPrinterColumns"] = columns
    version["schema"] = {"openAPIV3Schema": schema}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower(), **names},
            "scope": scope,
            "versions": [version],
        },
    }


def simple_crd(group: str, kind: str, plural: str, scope: str = "Namespaced", **names: Any) -> Obj:
    """A CRD whose schema keeps every field (for kinds the sandbox serves but does not validate)."""
    return crd(group, kind, plural, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}, scope, **names)


CERT_MANAGER_CRDS: list[Obj] = [
    simple_crd("cert-manager.io", "Certificate", "certificates", shortNames=["cert", "certs"]),
    simple_crd("cert-manager.io", "CertificateRequest", "certificaterequests", shortNames=["cr", "crs"]),
    simple_crd("cert-manager.io", "Issuer", "issuers"),
    simple_crd("cert-manager.io", "ClusterIssuer", "clusterissuers", scope="Cluster"),
    simple_crd("acme.cert-manager.io", "Order", "orders"),
    simple_crd("acme.cert-manager.io", "Challenge", "challenges"),
]


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
