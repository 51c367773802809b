"""State survives save()/reload, and a real kubectl works against the emulator."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.kube import KubeWorld

from .conftest import KEY, SPEEDUP, Kube, deployment, wait_for


def test_state_survives_save_and_reload(world_factory: Callable[..., Kube], tmp_path: Path) -> None:
    state = tmp_path / "state"
    kube = world_factory(state_dir=state, addons={"amazon-sagemaker-hyperpod-training-operator"})
    kube.apps.create_namespaced_deployment("default", deployment("keep", replicas=2))
    pods = wait_for(
        lambda: (
            [
                p
                for p in kube.core.list_namespaced_pod("default", label_selector="app=keep").items
                if p.status.phase == "Running"
            ]
            if len(kube.core.list_namespaced_pod("default", label_selector="app=keep").items) == 2
            else None
        )
    )
    wait_for(
        lambda: (
            len(
                [
                    p
                    for p in kube.core.list_namespaced_pod("default", label_selector="app=keep").items
                    if p.status.phase == "Running"
                ]
            )
            == 2
        )
    )
    # the ReplicaSet and Deployment record the ready pods a tick later: save only once they have
    wait_for(lambda: kube.apps.read_namespaced_deployment("keep", "default").status.ready_replicas == 2)
    pod_name = pods[0].metadata.name
    log_before = kube.core.read_namespaced_pod_log(pod_name, "default")
    rv_before = int(kube.core.list_namespace().metadata.resource_version)
    kube.world.save()
    assert (state / "kube.json").exists()

    reloaded = KubeWorld(state, speedup=SPEEDUP)
    kube2 = world_factory(world=reloaded, nodes=0)
    assert {n.metadata.name for n in kube2.core.list_node().items} == {"hyperpod-i-00000000", "hyperpod-i-00000001"}
    assert kube2.apps.read_namespaced_deployment("keep", "default").status.ready_replicas == 2
    assert kube2.core.read_namespaced_pod_log(pod_name, "default") == log_before
    # CRD-served kinds come back, and the resourceVersion keeps increasing
    assert (
        kube2.custom.list_namespaced_custom_object("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs")[
            "items"
        ]
        == []
    )
    cm = kube2.core.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
    assert int(cm.metadata.resource_version) > rv_before
    assert reloaded.cluster(KEY).addons == {"amazon-sagemaker-hyperpod-training-operator"}


def test_kubectl_get_apply_logs(kube: Kube, kubectl_bin: str, tmp_path: Path) -> None:
    out = kube.kubectl("get", "nodes").stdout
    assert "hyperpod-i-00000000" in out and "Ready" in out
    manifest = tmp_path / "app.yaml"
    manifest.write_text("""
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env: [{name: MODE, value: one}]
""")
    res = kube.kubectl("apply", "-f", str(manifest))
    assert "namespace/team-a created" in res.stdout and "deployment.apps/web created" in res.stdout
    # watch-based commands return as soon as the condition holds (the watch answers headers at once)
    t0 = time.monotonic()
    assert (
        "successfully rolled out"
        in kube.kubectl("rollout", "status", "deployment/web", "-n", "team-a", "--timeout=20s").stdout
    )
    assert (
        "condition met"
        in kube.kubectl("wait", "--for=condition=Available", "deployment/web", "-n", "team-a", "--timeout=20s").stdout
    )
    assert time.monotonic() - t0 < 10
    wait_for(lambda: kube.apps.read_namespaced_deployment("web", "team-a").status.ready_replicas == 2)
    manifest.write_text(manifest.read_text().replace("value: one", "value: two"))
    res = kube.kubectl("apply", "-f", str(manifest))
    assert "deployment.apps/web configured" in res.stdout
    env = kube.apps.read_namespaced_deployment("web", "team-a").spec.template.spec.containers[0].env
    assert [(e.name, e.value) for e in env] == [("MODE", "two")]
    res = kube.kubectl("apply", "--server-side", "-f", str(manifest))
    assert "serverside-applied" in res.stdout

    pods = json.loads(kube.kubectl("get", "pods", "-n", "team-a", "-o", "json").stdout)
    assert pods["kind"] == "List" or pods["kind"] == "PodList"
    assert len(pods["items"]) >= 2
    wait_for(lambda: all(p.status.phase == "Running" for p in kube.core.list_namespaced_pod("team-a").items))
    name = kube.core.list_namespaced_pod("team-a").items[0].metadata.name
    assert "started" in kube.kubectl("logs", "-n", "team-a", name).stdout
    table = kube.kubectl("get", "pods", "-n", "team-a").stdout
    assert table.splitlines()[0].split()[:3] == ["NAME", "READY", "STATUS"]
    err = kube.kubectl("get", "pod", "nope", "-n", "team-a", check=False)
    assert err.returncode != 0 and 'pods "nope" not found' in err.stderr


@pytest.mark.parametrize("header", [None, "Bearer bogus"])
def test_kubectl_style_anonymous_only_for_kubectl(kube: Kube, header: str | None) -> None:
    headers = {"User-Agent": "OpenAPI-Generator/37.0.1/python"}
    if header:
        headers["Authorization"] = header
    r = kube.api.rest_client.pool_manager.request("GET", kube.url + "/api/v1/pods", headers=headers)
    assert r.status == 401
    headers["User-Agent"] = "kubectl/v1.31.9 (linux/amd64)"
    r = kube.api.rest_client.pool_manager.request("GET", kube.url + "/api/v1/pods", headers=headers)
    assert r.status == (200 if header is None else 401)
