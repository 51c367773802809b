"""CustomResourceDefinitions: served once applied (discovery included), custom objects validated
against the real upstream schemas (422 with field paths), scope, status subresource, removal."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from .conftest import Kube, load_crd, wait_for

PYTORCHJOB_CRD = "kubeflow.org_pytorchjobs.yaml"
RAYJOB_CRD = "ray.io_rayjobs.yaml"
RAYCLUSTER_CRD = "ray.io_rayclusters.yaml"


def _apply_crd(kube: Kube, filename: str) -> dict:
    crd = load_crd(filename)
    code, body = kube.raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201, body
    return body


def _pytorchjob(name: str, replicas: object = 1) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": replicas,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.5"}]}},
                }
            }
        },
    }


def _rayjob(name: str) -> dict:
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "ray",
                    "image": "rayproject/ray:2.41.0",
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                }
            ]
        }
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": pod},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 1,
                        "minReplicas": 1,
                        "maxReplicas": 2,
                        "rayStartParams": {},
                        "template": pod,
                    }
                ],
            },
        },
    }


def test_crd_is_served_and_discoverable(kube: Kube) -> None:
    crd = _apply_crd(kube, PYTORCHJOB_CRD)
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conds["Established"] == "True" and conds["NamesAccepted"] == "True"
    code, group = kube.raw("GET", "/apis/kubeflow.org")
    assert code == 200 and group["preferredVersion"]["version"] == "v1"
    code, res = kube.raw("GET", "/apis/kubeflow.org/v1")
    pj = next(r for r in res["resources"] if r["name"] == "pytorchjobs")
    assert pj["kind"] == "PyTorchJob" and pj["namespaced"] is True
    assert any(r["name"] == "pytorchjobs/status" for r in res["resources"])

    obj = kube.custom.create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "pytorchjobs", _pytorchjob("good")
    )
    assert obj["metadata"]["uid"] and obj["metadata"]["generation"] == 1
    got = kube.custom.get_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", "good")
    assert got["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] == 1
    lst = kube.custom.list_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs")
    assert lst["kind"] == "PyTorchJobList" and [i["metadata"]["name"] for i in lst["items"]] == ["good"]
    # the status subresource: status on the main endpoint is dropped, /status takes it
    kube.custom.patch_namespaced_custom_object(
        "kubeflow.org",
        "v1",
        "default",
        "pytorchjobs",
        "good",
        {"status": {"conditions": []}, "metadata": {"labels": {"a": "b"}}},
    )
    got = kube.custom.get_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", "good")
    assert "status" not in got and got["metadata"]["labels"] == {"a": "b"}
    kube.custom.patch_namespaced_custom_object_status(
        "kubeflow.org", "v1", "default", "pytorchjobs", "good", {"status": {"replicaStatuses": {}}}
    )
    got = kube.custom.get_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", "good")
    assert got["status"] == {"replicaStatuses": {}}
    # strategic merge is not supported for custom objects
    code, body = kube.raw(
        "PATCH",
        "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs/good",
        {"metadata": {"labels": {"c": "d"}}},
        "application/strategic-merge-patch+json",
    )
    assert code == 415


def test_pytorchjob_schema_violation_is_422(kube: Kube) -> None:
    _apply_crd(kube, PYTORCHJOB_CRD)
    with pytest.raises(ApiException) as e:
        kube.custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", _pytorchjob("bad", replicas="two")
        )
    body = json.loads(e.value.body)
    assert e.value.status == 422 and body["reason"] == "Invalid"
    fields = [c["field"] for c in body["details"]["causes"]]
    assert "spec.pytorchReplicaSpecs.Master.replicas" in fields
    assert 'PyTorchJob.kubeflow.org "bad" is invalid' in body["message"]
    missing = _pytorchjob("nospec")
    del missing["spec"]["pytorchReplicaSpecs"]
    with pytest.raises(ApiException) as e:
        kube.custom.create_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", missing)
    causes = json.loads(e.value.body)["details"]["causes"]
    assert {"field": "spec.pytorchReplicaSpecs", "reason": "FieldValueRequired", "message": "Required value"} in causes


def test_rayjob_schema_violation_is_422_and_unknown_fields_pruned(kube: Kube) -> None:
    _apply_crd(kube, RAYJOB_CRD)
    bad = _rayjob("bad")
    bad["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = "one"
    del bad["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    with pytest.raises(ApiException) as e:
        kube.custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", bad)
    assert e.value.status == 422
    fields = {c["field"] for c in json.loads(e.value.body)["details"]["causes"]}
    assert {"spec.rayClusterSpec.workerGroupSpecs[0].replicas", "spec.rayClusterSpec.headGroupSpec.template"} <= fields

    ok = _rayjob("ok")
    ok["spec"]["notAField"] = True
    # kubectl asks for strict field validation: unknown fields are a 400 then
    code, body = kube.raw(
        "POST", "/apis/ray.io/v1/namespaces/default/rayjobs", ok, query=[("fieldValidation", "Strict")]
    )
    assert code == 400 and 'unknown field "spec.notAField"' in body["message"]
    created = kube.custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", ok)
    assert "notAField" not in created["spec"]  # otherwise pruned, as the apiserver prunes


def test_operator_not_installed_keeps_no_status(kube: Kube) -> None:
    _apply_crd(kube, RAYCLUSTER_CRD)
    _apply_crd(kube, RAYJOB_CRD)
    kube.custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", _rayjob("idle"))
    kube.core.list_namespace()
    import time

    time.sleep(0.5)  # hundreds of ticks at this speedup
    got = kube.custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "idle")
    assert "status" not in got
    assert kube.core.list_namespaced_pod("default").items == []


def test_cluster_scoped_crd_and_removal(kube: Kube) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {"size": {"type": "integer", "minimum": 1}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    kube.ext.create_custom_resource_definition(crd)
    kube.custom.create_cluster_custom_object(
        "example.com",
        "v1",
        "widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}},
    )
    with pytest.raises(ApiException) as e:
        kube.custom.create_cluster_custom_object(
            "example.com",
            "v1",
            "widgets",
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"size": 0}},
        )
    assert e.value.status == 422
    assert json.loads(e.value.body)["details"]["causes"][0]["field"] == "spec.size"
    code, _ = kube.raw("GET", "/apis/example.com/v1/namespaces/default/widgets")
    assert code == 404
    assert [
        w["metadata"]["name"] for w in kube.custom.list_cluster_custom_object("example.com", "v1", "widgets")["items"]
    ] == ["w1"]
    kube.ext.delete_custom_resource_definition("widgets.example.com")
    wait_for(lambda: kube.raw("GET", "/apis/example.com/v1/widgets")[0] == 404, what="CRD no longer served")


def test_bundled_crds_are_the_reference_files() -> None:
    """sandbox/kube/crds holds verbatim copies of the upstream CRDs in ../shared/reference/crds."""
    from pathlib import Path

    from .conftest import CRD_DIR

    ref = Path(__file__).resolve().parents[4] / "shared" / "reference" / "crds"
    if not ref.is_dir():
        pytest.skip("reference CRDs not present on this machine")
    for f in sorted(CRD_DIR.glob("*.yaml")):
        assert f.read_bytes() == (ref / f.name).read_bytes(), f.name
