"""API server semantics through the official client: discovery, auth, CRUD status codes,
selectors, the patch flavours, server-side apply, subresources, cascading delete."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .conftest import TOKEN, Kube, deployment, wait_for


def _err(e: ApiException) -> dict:
    return json.loads(e.body)


def test_discovery_and_version(kube: Kube) -> None:
    code, version = kube.raw("GET", "/version")
    assert code == 200 and version["major"] == "1" and version["gitVersion"].startswith("v1.31")
    groups = client.ApisApi(kube.api).get_api_versions()
    names = {g.name for g in groups.groups}
    assert {
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "storage.k8s.io",
        "coordination.k8s.io",
        "policy",
    } <= names
    core = kube.core.get_api_resources()
    pods = next(r for r in core.resources if r.name == "pods")
    assert pods.namespaced and pods.kind == "Pod" and "watch" in pods.verbs and "po" in pods.short_names
    assert any(r.name == "pods/log" for r in core.resources)
    nodes = next(r for r in core.resources if r.name == "nodes")
    assert nodes.namespaced is False
    apps = kube.apps.get_api_resources()
    assert any(r.name == "deployments/scale" for r in apps.resources)


def test_auth_required(kube: Kube) -> None:
    r = kube.api.rest_client.pool_manager.request("GET", kube.url + "/api/v1/namespaces")
    assert r.status == 401
    body = json.loads(r.data)
    assert body["kind"] == "Status" and body["reason"] == "Unauthorized" and body["code"] == 401
    r = kube.api.rest_client.pool_manager.request(
        "GET", kube.url + "/api/v1/namespaces", headers={"Authorization": "Bearer not-an-eks-token"}
    )
    assert r.status == 401
    r = kube.api.rest_client.pool_manager.request(
        "GET", kube.url + "/api/v1/namespaces", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status == 200


def test_default_namespaces_and_unknown_cluster(kube: Kube) -> None:
    names = {n.metadata.name for n in kube.core.list_namespace().items}
    assert {"default", "kube-system", "kube-public"} <= names
    r = kube.api.rest_client.pool_manager.request(
        "GET", kube.url.replace("/demo", "/nope") + "/api/v1/namespaces", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status == 404


def test_crud_status_codes_and_metadata(kube: Kube) -> None:
    cm = kube.core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c1", "labels": {"a": "1"}}, "data": {"k": "v"}}
    )
    assert cm.metadata.uid and int(cm.metadata.resource_version) > 0 and cm.metadata.creation_timestamp
    code, _ = kube.raw("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c2"}})
    assert code == 201
    with pytest.raises(ApiException) as e:
        kube.core.create_namespaced_config_map("default", {"metadata": {"name": "c1"}})
    assert e.value.status == 409 and _err(e.value)["reason"] == "AlreadyExists"
    assert _err(e.value)["details"]["name"] == "c1"
    with pytest.raises(ApiException) as e:
        kube.core.read_namespaced_config_map("missing", "default")
    assert e.value.status == 404 and _err(e.value)["reason"] == "NotFound"
    assert _err(e.value)["message"] == 'configmaps "missing" not found'

    # update with the current resourceVersion works, a stale one is a Conflict
    stale_rv = cm.metadata.resource_version
    cm.data = {"k": "v2"}
    updated = kube.core.replace_namespaced_config_map("c1", "default", cm)
    assert int(updated.metadata.resource_version) > int(stale_rv)
    cm.metadata.resource_version = stale_rv
    with pytest.raises(ApiException) as e:
        kube.core.replace_namespaced_config_map("c1", "default", cm)
    assert e.value.status == 409 and _err(e.value)["reason"] == "Conflict"

    # generation bumps on spec changes only
    d = kube.apps.create_namespaced_deployment("default", deployment("gen"))
    assert d.metadata.generation == 1
    d2 = kube.apps.patch_namespaced_deployment("gen", "default", {"metadata": {"labels": {"x": "y"}}})
    assert d2.metadata.generation == 1
    d3 = kube.apps.patch_namespaced_deployment("gen", "default", {"spec": {"replicas": 3}})
    assert d3.metadata.generation == 2

    # creating in a missing namespace
    with pytest.raises(ApiException) as e:
        kube.core.create_namespaced_config_map("nope", {"metadata": {"name": "x"}})
    assert e.value.status == 404

    # delete returns, then 404
    kube.core.delete_namespaced_config_map("c2", "default")
    with pytest.raises(ApiException) as e:
        kube.core.delete_namespaced_config_map("c2", "default")
    assert e.value.status == 404


def test_validation_422_with_causes(kube: Kube) -> None:
    bad = deployment("nosel")
    del bad["spec"]["selector"]
    # (the client validates required fields itself, so this one goes through the REST layer)
    code, body = kube.raw("POST", "/apis/apps/v1/namespaces/default/deployments", bad)
    assert code == 422 and body["kind"] == "Status" and body["reason"] == "Invalid"
    assert "spec.selector" in [c["field"] for c in body["details"]["causes"]]
    assert body["message"].startswith('Deployment.apps "nosel" is invalid: ')

    bad = deployment("nocontainers")
    bad["spec"]["template"]["spec"]["containers"] = []
    with pytest.raises(ApiException) as e:
        kube.apps.create_namespaced_deployment("default", bad)
    assert "spec.template.spec.containers" in [c["field"] for c in _err(e.value)["details"]["causes"]]

    with pytest.raises(ApiException) as e:
        kube.core.create_namespaced_config_map("default", {"metadata": {"name": "Bad_Name"}})
    assert e.value.status == 422
    assert _err(e.value)["details"]["causes"][0]["field"] == "metadata.name"

    with pytest.raises(ApiException) as e:
        kube.batch.create_namespaced_job(
            "default",
            {
                "metadata": {"name": "j"},
                "spec": {
                    "template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}
                },
            },
        )
    assert e.value.status == 422
    assert _err(e.value)["details"]["causes"][0]["field"] == "spec.template.spec.restartPolicy"


def test_label_and_field_selectors(kube: Kube) -> None:
    kube.core.create_namespace({"metadata": {"name": "sel"}})
    for name, labels in [
        ("a", {"tier": "web", "env": "prod"}),
        ("b", {"tier": "web", "env": "dev"}),
        ("c", {"tier": "db"}),
        ("d", {}),
    ]:
        kube.core.create_namespaced_config_map("sel", {"metadata": {"name": name, "labels": labels}})

    def names(**kw: str) -> list[str]:
        return [
            x.metadata.name
            for x in kube.core.list_namespaced_config_map("sel", **kw).items
            if x.metadata.name != "kube-root-ca.crt"
        ]

    assert names(label_selector="tier=web") == ["a", "b"]
    assert names(label_selector="tier==web,env=prod") == ["a"]
    assert names(label_selector="tier!=web") == ["c", "d"]
    assert names(label_selector="env in (dev,qa)") == ["b"]
    assert names(label_selector="tier notin (web)") == ["c", "d"]
    assert names(label_selector="env") == ["a", "b"]
    assert names(label_selector="!env") == ["c", "d"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c", label_selector="tier") == ["a", "b"]
    lst = kube.core.list_namespaced_config_map("sel")
    assert lst.kind == "ConfigMapList" and int(lst.metadata.resource_version) > 0
    # all-namespaces list + field selector on namespace
    everywhere = kube.core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=sel")
    assert {x.metadata.namespace for x in everywhere.items} == {"sel"}
    assert len(kube.core.list_config_map_for_all_namespaces().items) > len(everywhere.items)


def test_patch_flavours_and_server_side_apply(kube: Kube) -> None:
    kube.apps.create_namespaced_deployment("default", deployment("p", env=[{"name": "A", "value": "1"}]))
    # strategic merge (the client's default for a dict body on built-ins): containers merge by name
    kube.apps.patch_namespaced_deployment(
        "p",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "p", "env": [{"name": "B", "value": "2"}]}]}}}},
    )
    d = kube.apps.read_namespaced_deployment("p", "default")
    c0 = d.spec.template.spec.containers[0]
    assert c0.image == "nginx:1.27" and {e.name for e in c0.env} == {"A", "B"}
    # JSON patch
    kube.apps.patch_namespaced_deployment(
        "p",
        "default",
        [
            {"op": "replace", "path": "/spec/replicas", "value": 2},
            {"op": "add", "path": "/metadata/labels/patched", "value": "json"},
        ],
    )
    d = kube.apps.read_namespaced_deployment("p", "default")
    assert d.spec.replicas == 2 and d.metadata.labels["patched"] == "json"
    # JSON merge patch: lists are replaced, null deletes
    kube.apps.patch_namespaced_deployment(
        "p", "default", {"metadata": {"labels": {"patched": None}}}, _content_type="application/merge-patch+json"
    )
    d = kube.apps.read_namespaced_deployment("p", "default")
    assert "patched" not in d.metadata.labels
    # strategic merge $patch: delete on a named list item
    kube.apps.patch_namespaced_deployment(
        "p",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "p", "env": [{"name": "A", "$patch": "delete"}]}]}}}},
    )
    d = kube.apps.read_namespaced_deployment("p", "default")
    assert [e.name for e in d.spec.template.spec.containers[0].env] == ["B"]
    # bad json patch path → 422
    with pytest.raises(ApiException) as e:
        kube.apps.patch_namespaced_deployment("p", "default", [{"op": "remove", "path": "/spec/nope"}])
    assert e.value.status == 422

    # server-side apply creates when missing (201) and then merges (200), recording the field manager
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "namespace": "default"},
        "data": {"a": "1"},
    }
    code, body = kube.raw(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ssa",
        json.dumps(manifest),
        "application/apply-patch+yaml",
        [("fieldManager", "instantstart")],
    )
    assert code == 201 and body["data"] == {"a": "1"}
    assert body["metadata"]["managedFields"][0]["manager"] == "instantstart"
    assert body["metadata"]["managedFields"][0]["operation"] == "Apply"
    yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  b: '2'\n"
    code, body = kube.raw(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ssa",
        yaml_body,
        "application/apply-patch+yaml",
        [("fieldManager", "other"), ("force", "true")],
    )
    assert code == 200 and body["data"] == {"a": "1", "b": "2"}  # another manager's apply merges
    # the client's own SSA call
    cm = kube.core.patch_namespaced_config_map(
        "ssa2",
        "default",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa2"}, "data": {"x": "y"}},
        field_manager="instantstart",
        _content_type="application/apply-patch+yaml",
    )
    assert cm.data == {"x": "y"}
    code, body = kube.raw(
        "PATCH", "/api/v1/namespaces/default/configmaps/ssa3", json.dumps(manifest), "application/apply-patch+yaml"
    )
    assert code == 400  # fieldManager is required


def test_server_side_apply_removes_what_the_manager_stopped_applying(kube: Kube) -> None:
    def apply(body: dict) -> dict:
        code, out = kube.raw(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/ssa",
            json.dumps(body),
            "application/apply-patch+yaml",
            [("fieldManager", "instantstart")],
        )
        assert code in (200, 201), out["message"]
        return out

    first = deployment("ssa", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    first["metadata"]["labels"]["extra"] = "yes"
    out = apply(first)
    fields = out["metadata"]["managedFields"][0]["fieldsV1"]
    assert 'k:{"name":"ssa"}' in fields["f:spec"]["f:template"]["f:spec"]["f:containers"]
    # another writer's change is kept, the manager's dropped fields go
    kube.apps.patch_namespaced_deployment("ssa", "default", {"metadata": {"annotations": {"team": "a"}}})
    second = deployment("ssa", env=[{"name": "A", "value": "1"}])
    out = apply(second)
    assert out["metadata"]["labels"] == {"app": "ssa"} and out["metadata"]["annotations"] == {"team": "a"}
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_status_and_scale_subresources(kube: Kube) -> None:
    kube.core.create_namespaced_service(
        "default", {"metadata": {"name": "s"}, "spec": {"selector": {"app": "s"}, "ports": [{"port": 80}]}}
    )
    svc = kube.core.read_namespaced_service("s", "default")
    assert svc.spec.cluster_ip.startswith("10.100.") and svc.spec.ports[0].target_port == 80
    # status written on the main endpoint is ignored ...
    kube.core.patch_namespaced_service("s", "default", {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}})
    assert not (kube.core.read_namespaced_service("s", "default").status.load_balancer.ingress)
    # ... and taken on /status, which leaves the spec alone
    kube.core.patch_namespaced_service_status(
        "s", "default", {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}, "spec": {"type": "NodePort"}}
    )
    svc = kube.core.read_namespaced_service_status("s", "default")
    assert svc.status.load_balancer.ingress[0].ip == "1.2.3.4" and svc.spec.type == "ClusterIP"

    kube.apps.create_namespaced_deployment("default", deployment("scaled"))
    kube.apps.patch_namespaced_deployment_scale("scaled", "default", {"spec": {"replicas": 3}})
    scale = kube.apps.read_namespaced_deployment_scale("scaled", "default")
    assert scale.spec.replicas == 3
    wait_for(
        lambda: kube.apps.read_namespaced_deployment("scaled", "default").status.ready_replicas == 3,
        what="3 ready replicas after scale",
    )


def test_cascading_delete(kube: Kube) -> None:
    kube.apps.create_namespaced_deployment("default", deployment("casc", replicas=2))
    wait_for(lambda: len(kube.core.list_namespaced_pod("default", label_selector="app=casc").items) == 2)
    assert len(kube.apps.list_namespaced_replica_set("default", label_selector="app=casc").items) == 1
    kube.apps.delete_namespaced_deployment("casc", "default", propagation_policy="Foreground")
    assert kube.apps.list_namespaced_replica_set("default", label_selector="app=casc").items == []
    assert kube.core.list_namespaced_pod("default", label_selector="app=casc").items == []

    # orphaning keeps the dependents and drops their ownerReferences
    kube.apps.create_namespaced_deployment("default", deployment("orph"))
    wait_for(lambda: kube.apps.list_namespaced_replica_set("default", label_selector="app=orph").items)
    kube.apps.delete_namespaced_deployment("orph", "default", propagation_policy="Orphan")
    rs = kube.apps.list_namespaced_replica_set("default", label_selector="app=orph").items
    assert len(rs) == 1 and not rs[0].metadata.owner_references

    # a namespace delete removes everything in it
    kube.core.create_namespace({"metadata": {"name": "gone"}})
    kube.core.create_namespaced_config_map("gone", {"metadata": {"name": "x"}})
    ns = kube.core.delete_namespace("gone")
    assert ns is not None
    wait_for(
        lambda: "gone" not in {n.metadata.name for n in kube.core.list_namespace().items}, what="namespace removal"
    )
    with pytest.raises(ApiException) as e:
        kube.core.read_namespaced_config_map("x", "gone")
    assert e.value.status == 404


def test_finalizers_hold_deletion(kube: Kube) -> None:
    kube.core.create_namespaced_config_map("default", {"metadata": {"name": "fin", "finalizers": ["x/y"]}})
    kube.core.delete_namespaced_config_map("fin", "default")
    cm = kube.core.read_namespaced_config_map("fin", "default")
    assert cm.metadata.deletion_timestamp is not None
    kube.core.patch_namespaced_config_map(
        "fin", "default", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json"
    )
    with pytest.raises(ApiException) as e:
        kube.core.read_namespaced_config_map("fin", "default")
    assert e.value.status == 404
