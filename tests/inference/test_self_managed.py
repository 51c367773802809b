"""Self-managed endpoints end to end (sandbox, real worker): a vLLM endpoint behind an NLB answers through
invoke (whole and streamed), scaling to the same count changes nothing, delete leaves nothing, and
another team sees a 404 on every path and tool."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from inference.models import Endpoint
from instantstart.tenancy.roles import Role
from tests.clusters.helpers import wait_for_operation
from tests.inference.conftest import kube
from tests.mcp_client import MCP
from tests.mcp_client import body as tool_body
from tests.support import token_for

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

QWEN = {"source": "huggingface", "id": "Qwen/Qwen3-0.6B"}
CHAT = {"messages": [{"role": "user", "content": "What is a GPU?"}], "max_tokens": 8}


def deploy(api, cluster, **body) -> dict:
    body = {"name": "qwen", "engine": "vllm", "model": QWEN, "instance_group": "gpu", **body}
    response = api.post(f"/api/v1/clusters/{cluster.pk}/endpoints/", body, format="json")
    assert response.status_code == 202, response.content
    return response.json()


def owned_objects(cluster, name: str) -> list[str]:
    """Every object in the team namespace labelled as the endpoint's."""
    api = kube(cluster)
    selector = f"instantstart.io/endpoint={name}"
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    ns = cluster.team.slug
    found = [
        f"Deployment/{d.metadata.name}" for d in apps.list_namespaced_deployment(ns, label_selector=selector).items
    ]
    found += [f"Service/{s.metadata.name}" for s in core.list_namespaced_service(ns, label_selector=selector).items]
    found += [f"Pod/{p.metadata.name}" for p in core.list_namespaced_pod(ns, label_selector=f"app={name}").items]
    found += [
        f"ConfigMap/{c.metadata.name}" for c in core.list_namespaced_config_map(ns, label_selector=selector).items
    ]
    return found


def test_vllm_external_answers_through_invoke_scales_and_deletes(
    admin_api, outsider_api, cluster, admin_mcp, other_team, outsider_user, outsider_client
):
    accepted = deploy(admin_api, cluster, service="external", replicas=1, gpus=2)
    assert accepted["endpoint"]["status"] == "deploying"
    assert accepted["operation"]["status_tool"] == "get_operation"
    wait_for_operation(accepted["operation"]["id"], timeout=120)

    base = f"/api/v1/clusters/{cluster.pk}/endpoints/qwen/"
    detail = admin_api.get(base).json()
    assert detail["status"] == "ready" and detail["replicas"] == {"desired": 1, "ready": 1}
    assert detail["url"].startswith("http://k8s-acme-qwen-") and ".elb.us-west-2.amazonaws.com:8000" in detail["url"]
    kinds = {(m["kind"], m["metadata"]["name"]) for m in detail["manifest"]}
    assert kinds == {("Deployment", "qwen"), ("Service", "qwen")}
    service = next(m for m in detail["manifest"] if m["kind"] == "Service")
    assert service["spec"]["type"] == "LoadBalancer"
    assert (
        service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internet-facing"
    )
    worker = detail["manifest"][0]["spec"]["template"]["spec"]["containers"][0]
    assert (
        worker["command"][:3] == ["vllm", "serve", "Qwen/Qwen3-0.6B"] and "--tensor-parallel-size" in worker["command"]
    )
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert detail["pods"][0]["ready"] and any(e["reason"] for e in detail["events"])
    listed = admin_api.get(f"/api/v1/clusters/{cluster.pk}/endpoints/").json()["results"]
    assert [(e["name"], e["status"], e["replicas"]["ready"]) for e in listed] == [("qwen", "ready", 1)]

    answer = admin_api.post(base + "invoke/", CHAT, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["model"] == "Qwen/Qwen3-0.6B" and body["usage"]["completion_tokens"] == 8
    assert body["choices"][0]["message"]["content"]

    streamed = admin_api.post(base + "invoke/", {**CHAT, "stream": True}, format="json")
    assert streamed.status_code == 200 and streamed["Content-Type"].startswith("text/event-stream")
    events = [e for e in b"".join(streamed.streaming_content).decode().split("\n\n") if e.strip()]
    assert events[-1] == "data: [DONE]" and len(events) > 3
    first = json.loads(events[0].removeprefix("data: "))
    assert first["object"] == "chat.completion.chunk"

    # nothing in the request chooses the address: address fields are refused, odd names are no endpoint
    aimed = {**CHAT, "url": "http://169.254.169.254/latest/meta-data/", "host": "169.254.169.254", "port": 80}
    refused = admin_api.post(base + "invoke/", aimed, format="json")
    assert refused.status_code == 400, refused.content
    assert {"url", "host", "port"} <= set(refused.json()["error"]["fields"]), refused.json()
    for name in ("..%2F..%2Fservices%2Fkubernetes:443", "kubernetes", "qwen%3A9000", "169.254.169.254"):
        path = f"/api/v1/clusters/{cluster.pk}/endpoints/{name}/invoke/"
        assert admin_api.post(path, CHAT, format="json").status_code == 404, name

    # the MCP tool gets the whole answer
    tool = admin_mcp.call("invoke_endpoint", {"cluster_id": str(cluster.pk), "name": "qwen", **CHAT, "stream": True})
    assert tool.structured_content["usage"]["completion_tokens"] == 8

    # scale to what runs: nothing is applied
    same = admin_api.patch(base, {"replicas": 1}, format="json")
    assert same.status_code == 200 and same.json()["changed"] is False
    assert not Endpoint.objects.get(name="qwen").cluster.team.operations.filter(kind="endpoint.scale").exists()
    scaled = admin_api.patch(base, {"replicas": 2}, format="json")
    assert scaled.status_code == 202 and scaled.json()["changed"] is True
    wait_for_operation(scaled.json()["operation"]["id"], timeout=120)
    assert admin_api.get(base).json()["replicas"] == {"desired": 2, "ready": 2}

    # another team: the same 404 on every path
    for method, path, data in (
        ("get", base, None),
        ("patch", base, {"replicas": 1}),
        ("delete", base, None),
        ("post", base + "invoke/", CHAT),
        ("post", base + f"workers/{detail['pods'][0]['name']}/assign/", {"model": "x"}),
        ("get", f"/api/v1/clusters/{cluster.pk}/endpoints/", None),
        ("post", f"/api/v1/clusters/{cluster.pk}/endpoints/", {"name": "x"}),
        ("get", f"/api/v1/clusters/{cluster.pk}/models/", None),
    ):
        response = getattr(outsider_api, method)(path, data, format="json")
        assert response.status_code == 404, (method, path, response.status_code)

    # ... on every tool (each dispatches into the same REST view) and every portal page
    outsider_mcp = MCP(token_for(other_team, outsider_user, Role.ADMIN))
    ids = {"cluster_id": str(cluster.pk)}
    for tool, arguments in (
        ("list_endpoints", ids),
        ("get_endpoint", {**ids, "name": "qwen"}),
        ("scale_endpoint", {**ids, "name": "qwen", "replicas": 1}),
        ("delete_endpoint", {**ids, "name": "qwen"}),
        ("invoke_endpoint", {**ids, "name": "qwen", **CHAT}),
        ("assign_worker", {**ids, "name": "qwen", "pod": detail["pods"][0]["name"], "model": "x"}),
        ("deploy_endpoint", {**ids, "name": "x", "model": QWEN, "instance_group": "gpu"}),
        ("list_models", ids),
        ("download_model", {**ids, "id": "Qwen/Qwen3-0.6B"}),
    ):
        result = outsider_mcp.call(tool, arguments)
        assert result.is_error and tool_body(result)["error"]["code"] == "not_found", (tool, tool_body(result))
    for path in (f"/endpoints/{cluster.pk}/", f"/endpoints/{cluster.pk}/qwen/", f"/endpoints/{cluster.pk}/models/"):
        assert outsider_client.get(path).status_code == 404, path
    for path in (f"/endpoints/{cluster.pk}/qwen/scale/", f"/endpoints/{cluster.pk}/qwen/delete/"):
        assert outsider_client.post(path, {"replicas": 1, "confirm": "qwen"}).status_code == 404, path
    assert Endpoint.objects.get(name="qwen").replicas == 2  # nothing they sent changed anything

    gone = admin_api.delete(base)
    assert gone.status_code == 202
    wait_for_operation(gone.json()["id"], timeout=120)
    assert owned_objects(cluster, "qwen") == []
    assert admin_api.get(base).status_code == 404
    # the cluster's own objects are untouched
    assert k8s.CoreV1Api(kube(cluster)).read_namespaced_persistent_volume_claim("shared", cluster.team.slug)
