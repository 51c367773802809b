"""Manifests made from each recipe validate against the CRD schemas as the operators register them, and the
schema check names what a broken manifest gets wrong (no cluster needed: the schemas come from the files)."""

from __future__ import annotations

import copy

import pytest

from sandbox.kube.operators.crds import HYPERPOD_PYTORCHJOB_SCHEMA, load_crd
from tests.factories import ClusterFactory
from training.manifests import manifest_for
from training.models import Job, JobKind
from training.readers.schema import schema_errors
from training.recipes import DEFAULT_HANG_DETECTION

pytestmark = pytest.mark.django_db

COMMON = {
    "nodes": 2,
    "gpus_per_node": 8,
    "efa_per_node": 32,
    "instance_group": "gpu",
    "instance_type": "ml.p5.48xlarge",
    "image": "img",
    "env": {"HF_HOME": "/fsx/hf"},
    "storage": {"s3": "shared", "fsx": "fsx"},
    "mlflow": True,
    "mlflow_tracking_uri": "arn:aws:sagemaker:us-west-2:111122223333:mlflow-tracking-server/x",
    "max_retries": 3,
    "elastic": None,
}
SPECS = {
    "pytorch": {"script": "/s3/train.py", "args": ["--max_steps", "10"]},
    "llama_factory": {"config": "stage: sft\n", "config_inline": "stage: sft\n"},
    "ms_swift": {"command": "sft", "config": "/s3/x.yaml", "config_path": "/s3/x.yaml", "args": []},
    "verl": {"entrypoint": "python3 -m verl.trainer.main_ppo", "worker_replicas": 1},
}


def _schema(kind: str) -> dict:
    if kind == JobKind.HYPERPOD:
        return HYPERPOD_PYTORCHJOB_SCHEMA
    crd = load_crd("ray.io_rayjobs.yaml")
    return next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("recipe", list(SPECS))
def test_every_recipe_makes_a_manifest_its_crd_accepts(recipe, team):
    cluster = ClusterFactory(team=team)
    kind = JobKind.RAY if recipe == "verl" else JobKind.HYPERPOD
    spec = {**COMMON, "recipe": recipe, "hang_detection": DEFAULT_HANG_DETECTION[recipe], **SPECS[recipe]}
    job = Job(cluster=cluster, name="j", recipe=recipe, kind=kind, namespace="acme", k8s_name="j-12345")
    manifest = manifest_for(job, spec)
    assert schema_errors(manifest, _schema(kind)) == []
    pods = (
        [manifest["spec"]["replicaSpecs"][0]["template"]]
        if kind == JobKind.HYPERPOD
        else [manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]]
    )
    container = pods[0]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/s3", "/fsx"}
    assert pods[0]["spec"]["nodeSelector"]["sagemaker.amazonaws.com/instance-group-name"] == "gpu"

    broken = copy.deepcopy(manifest)
    broken["spec"]["replicaSpecz" if kind == JobKind.HYPERPOD else "entrypointt"] = []
    assert any("unknown field" in e for e in schema_errors(broken, _schema(kind)))
    if kind == JobKind.HYPERPOD:
        broken = copy.deepcopy(manifest)
        broken["spec"]["runPolicy"]["jobMaxRetryCount"] = "three"
        assert any(e.startswith("spec.runPolicy.jobMaxRetryCount") for e in schema_errors(broken, _schema(kind)))
