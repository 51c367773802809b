"""Serving pods are real OpenAI-compatible servers on 127.0.0.1, reached as a client reaches them in
a real cluster: through the API server's proxy subresources (Service → ready endpoints → pod)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sandbox.kube import KubeWorld

from .conftest import KEY, TOKEN, Kube, deployment, gpu_node, wait_for

SVC = "/api/v1/namespaces/default/services"
SGLANG = ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-0.6B", "--port", "30000"]
PODS = "/api/v1/namespaces/default/pods"


def serving(
    name: str,
    command: list[str],
    replicas: int = 1,
    gpus: int = 1,
    image: str = "vllm/vllm-openai:v0.10.2",
    port: int = 8000,
    labels: dict[str, str] | None = None,
    **pod: Any,
) -> dict[str, Any]:
    dep = deployment(name, replicas=replicas, image=image, **pod)
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["command"] = command
    c["ports"] = [{"containerPort": port, "name": "http"}]
    c["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}
    if labels:
        dep["spec"]["template"]["metadata"]["labels"].update(labels)
    return dep


def service(name: str, port: int = 8000, selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **({"annotations": spec.pop("annotations")} if "annotations" in spec else {})},
        "spec": {
            "selector": selector or {"app": name},
            "ports": [{"name": "http", "port": port, "targetPort": "http"}],
            **spec,
        },
    }


def ready(kube: Kube, name: str, n: int = 1, timeout: float = 15.0) -> None:
    wait_for(
        lambda: (kube.apps.read_namespaced_deployment(name, "default").status.ready_replicas or 0) >= n,
        timeout=timeout,
        what=f"{name} ready",
    )


def chat(kube: Kube, path: str, content: str = "hello there", **body: Any) -> tuple[int, Any]:
    return kube.raw("POST", path, {"messages": [{"role": "user", "content": content}], **body})


def stream(kube: Kube, path: str, body: dict[str, Any]) -> list[bytes]:
    r = kube.api.rest_client.pool_manager.request(
        "POST",
        kube.url + path,
        body=json.dumps(body),
        preload_content=False,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    return [line for line in b"".join(r.stream(256)).split(b"\n\n") if line]


@pytest.fixture
def world(world_factory: Callable[..., Kube]) -> Kube:
    # a speedup that lets a model load (~40 s simulated) in a fraction of a second
    k = world_factory(nodes=0, world=KubeWorld(None, speedup=400))
    k.world.sync_nodes(KEY, [gpu_node("hyperpod-i-00000001"), gpu_node("hyperpod-i-00000002")])
    yield k
    assert not k.world.controller_errors, k.world.controller_errors[0]


def test_vllm_answers_chat_completions_and_streams_through_the_service_proxy(world: Kube) -> None:
    kube = world
    kube.apps.create_namespaced_deployment(
        "default", serving("qwen", ["vllm", "serve", "Qwen/Qwen3-0.6B", "--served-model-name", "qwen3"], replicas=2)
    )
    kube.core.create_namespaced_service("default", service("qwen"))
    ready(kube, "qwen", 2)
    code, models = kube.raw("GET", f"{SVC}/qwen:8000/proxy/v1/models")
    assert code == 200 and [m["id"] for m in models["data"]] == ["qwen3"] and models["data"][0]["owned_by"] == "vllm"
    code, out = chat(kube, f"{SVC}/qwen:http/proxy/v1/chat/completions", model="qwen3", max_tokens=200)
    assert code == 200 and out["object"] == "chat.completion"
    text = out["choices"][0]["message"]["content"]
    assert "qwen3" in text and "hello there" in text and out["choices"][0]["finish_reason"] == "stop"
    usage = out["usage"]
    assert usage["prompt_tokens"] > 0 and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # the same prompt gets the same answer (deterministic), a short max_tokens cuts it
    assert (
        chat(kube, f"{SVC}/qwen:8000/proxy/v1/chat/completions", max_tokens=200)[1]["choices"][0]["message"]["content"]
        == text
    )
    short = chat(kube, f"{SVC}/qwen:8000/proxy/v1/chat/completions", max_tokens=3)[1]
    assert short["usage"]["completion_tokens"] == 3 and short["choices"][0]["finish_reason"] == "length"
    code, comp = kube.raw("POST", f"{SVC}/qwen:8000/proxy/v1/completions", {"prompt": "Once upon", "max_tokens": 5})
    assert code == 200 and comp["object"] == "text_completion" and comp["usage"]["completion_tokens"] == 5
    events = stream(
        kube,
        f"{SVC}/qwen:8000/proxy/v1/chat/completions",
        {
            "messages": [{"role": "user", "content": "stream me"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert events[-1] == b"data: [DONE]"
    chunks = [json.loads(e[len(b"data: ") :]) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    streamed = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert "Qwen/Qwen3-0.6B" not in streamed and "qwen3" in streamed
    assert chunks[-1]["usage"]["completion_tokens"] == len(
        [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    )
    code, err = chat(kube, f"{SVC}/qwen:8000/proxy/v1/chat/completions", model="gpt-4")
    assert code == 404 and err["message"] == "The model `gpt-4` does not exist." and err["type"] == "NotFoundError"


def test_engine_metrics_and_health_are_the_engines_own(world: Kube) -> None:
    kube = world
    kube.apps.create_namespaced_deployment("default", serving("v", ["vllm", "serve", "Qwen/Qwen3-0.6B"]))
    for name, extra in (("s", []), ("sm", ["--enable-metrics"])):
        dep = serving(name, SGLANG + extra, image="lmsysorg/sglang:v0.5.2", port=30000)
        kube.apps.create_namespaced_deployment("default", dep)
    for n in ("v", "s", "sm"):
        ready(kube, n)
    pod = {
        n: kube.core.list_namespaced_pod("default", label_selector=f"app={n}").items[0].metadata.name
        for n in ("v", "s", "sm")
    }
    chat(kube, f"{PODS}/{pod['v']}:8000/proxy/v1/chat/completions")
    code, text = kube.raw("GET", f"{PODS}/{pod['v']}:8000/proxy/metrics")
    assert code == 200
    assert 'vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.0' in text
    assert 'vllm:request_success_total{engine="0",finished_reason="stop",model_name="Qwen/Qwen3-0.6B"} 1.0' in text
    assert "# TYPE vllm:generation_tokens_total counter" in text
    assert kube.raw("GET", f"{PODS}/{pod['v']}:8000/proxy/health")[0] == 200
    # SGLang serves /metrics only with --enable-metrics, as the real server does
    assert kube.raw("GET", f"{PODS}/{pod['s']}:30000/proxy/metrics")[0] == 404
    code, text = kube.raw("GET", f"{PODS}/{pod['sm']}:30000/proxy/metrics")
    assert code == 200 and "sglang:num_running_reqs{" in text and "sglang:num_queue_reqs{" in text
    code, gen = kube.raw(
        "POST",
        f"{PODS}/{pod['s']}:30000/proxy/generate",
        {"text": "The capital of France is", "sampling_params": {"max_new_tokens": 4}},
    )
    assert code == 200 and gen["meta_info"]["completion_tokens"] == 4


def test_proxy_errors_are_the_api_servers(world: Kube) -> None:
    kube = world
    kube.core.create_namespaced_service("default", service("nobody"))
    code, st = kube.raw("GET", f"{SVC}/nobody:8000/proxy/v1/models")
    assert code == 503 and st["message"] == 'no endpoints available for service "nobody"'
    assert (
        kube.raw("GET", f"{SVC}/nobody:9999/proxy/")[1]["message"] == 'no service port 9999 found for service "nobody"'
    )
    assert kube.raw("GET", f"{SVC}/missing:80/proxy/")[0] == 404
    kube.apps.create_namespaced_deployment("default", deployment("web"))  # nginx: nothing simulated listens
    wait_for(lambda: kube.core.list_namespaced_pod("default", label_selector="app=web").items[0].status.pod_ip)
    pod = kube.core.list_namespaced_pod("default", label_selector="app=web").items[0]
    code, st = kube.raw("GET", f"{PODS}/{pod.metadata.name}:80/proxy/")
    assert code == 503 and st["message"] == (
        f"error trying to reach service: dial tcp {pod.status.pod_ip}:80: connect: connection refused"
    )
    # no credentials, no proxy
    r = kube.api.rest_client.pool_manager.request("GET", kube.url + f"{SVC}/nobody:8000/proxy/")
    assert r.status == 401


def test_tensor_parallel_beyond_the_gpus_crash_loops_with_vllms_error(world: Kube) -> None:
    kube = world
    kube.apps.create_namespaced_deployment(
        "default", serving("big", ["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "8"], gpus=2)
    )

    def looping() -> Any:
        pods = kube.core.list_namespaced_pod("default", label_selector="app=big").items
        cs = pods[0].status.container_statuses if pods else None
        return cs and cs[0].state.waiting and cs[0].state.waiting.reason == "CrashLoopBackOff" and pods[0]

    pod = wait_for(looping, what="CrashLoopBackOff")
    assert pod.status.phase == "Running" and pod.status.container_statuses[0].restart_count >= 1
    assert pod.status.container_statuses[0].last_state.terminated.exit_code == 1
    log = kube.core.read_namespaced_pod_log(pod.metadata.name, "default")
    assert "ValueError: World size (8) is larger than the number of available GPUs (2) in this node." in log
    events = kube.core.list_namespaced_event("default", field_selector=f"involvedObject.name={pod.metadata.name}")
    assert any(e.reason == "BackOff" and e.type == "Warning" for e in events.items)
    kube.core.create_namespaced_service("default", service("big"))
    wait_for(lambda: kube.raw("GET", f"{SVC}/big:8000/proxy/v1/models")[0] == 503)


def test_a_gated_model_needs_a_token(world: Kube) -> None:
    kube = world
    cmd = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
    kube.apps.create_namespaced_deployment("default", serving("gated", cmd))
    kube.apps.create_namespaced_deployment(
        "default", serving("token", cmd, env=[{"name": "HF_TOKEN", "value": "hf_example"}])
    )
    ready(kube, "token")

    def failing() -> str:
        pod = kube.core.list_namespaced_pod("default", label_selector="app=gated").items[0]
        return kube.core.read_namespaced_pod_log(pod.metadata.name, "default")

    log = wait_for(lambda: "GatedRepoError" in failing() and failing())
    assert "401 Client Error" in log and "Access to model meta-llama/Llama-3.1-8B-Instruct is restricted" in log


def test_listeners_go_with_their_pods_and_come_back_after_a_restart(
    world_factory: Callable[..., Kube], tmp_path: Any
) -> None:
    state = tmp_path / "state"
    kube = world_factory(nodes=1, world=KubeWorld(state, speedup=400))
    kube.apps.create_namespaced_deployment("default", serving("keep", ["vllm", "serve", "Qwen/Qwen3-0.6B"]))
    kube.core.create_namespaced_service("default", service("keep"))
    ready(kube, "keep")
    assert kube.raw("GET", f"{SVC}/keep:8000/proxy/v1/models")[0] == 200
    kube.world.save()
    kube.world.close()
    again = world_factory(nodes=0, world=KubeWorld(state, speedup=400))
    wait_for(lambda: again.raw("GET", f"{SVC}/keep:8000/proxy/v1/models")[0] == 200, what="listener back")
    pod = again.core.list_namespaced_pod("default", label_selector="app=keep").items[0]
    # the process kept running: no second model load in its log
    assert again.core.read_namespaced_pod_log(pod.metadata.name, "default").count("Application startup complete") == 1
    again.apps.delete_namespaced_deployment("keep", "default")
    wait_for(lambda: not again.core.list_namespaced_pod("default", label_selector="app=keep").items)
    wait_for(lambda: not [k for k in again.world.serving.procs if k[0] == KEY], what="listener closed")


def test_endpoints_and_slices_follow_readiness_and_named_ports(world: Kube) -> None:
    kube = world
    kube.apps.create_namespaced_deployment("default", serving("ep", ["vllm", "serve", "Qwen/Qwen3-0.6B"], replicas=2))
    kube.core.create_namespaced_service("default", service("ep", port=80))
    ready(kube, "ep", 2)
    ep = kube.core.read_namespaced_endpoints("ep", "default")
    assert len(ep.subsets[0].addresses) == 2 and ep.subsets[0].ports[0].port == 8000  # targetPort "http" → 8000
    code, slices = kube.raw(
        "GET",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        query=[("labelSelector", "kubernetes.io/service-name=ep")],
    )
    assert code == 200 and len(slices["items"]) == 1
    sl = slices["items"][0]
    assert sl["addressType"] == "IPv4" and sl["ports"][0]["port"] == 8000
    assert all(e["conditions"]["ready"] for e in sl["endpoints"]) and len(sl["endpoints"]) == 2


def test_load_balancer_services_get_elb_hostnames(world: Kube) -> None:
    kube = world
    lbc = {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external",
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
        "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
    }
    kube.core.create_namespaced_service("default", service("nlb", type="LoadBalancer", annotations=lbc))
    kube.core.create_namespaced_service("default", service("clb", type="LoadBalancer"))
    internal = {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}
    kube.core.create_namespaced_service("default", service("iclb", type="LoadBalancer", annotations=internal))

    def host(name: str) -> str | None:
        ing = kube.core.read_namespaced_service(name, "default").status.load_balancer.ingress
        return ing[0].hostname if ing else None

    nlb = wait_for(lambda: host("nlb"))
    assert nlb.startswith("k8s-default-nlb-") and nlb.endswith(".elb.us-west-2.amazonaws.com")
    clb = wait_for(lambda: host("clb"))
    assert clb.startswith("a") and clb.endswith(".us-west-2.elb.amazonaws.com")
    assert wait_for(lambda: host("iclb")).startswith("internal-a")


def test_a_pool_worker_is_reassigned_by_a_label_change_without_a_restart(world: Kube) -> None:
    kube = world
    pool = serving(
        "pool",
        ["vllm", "serve", "Qwen/Qwen3-0.6B"],
        replicas=2,
        labels={"model-id": "qwen", "business": "unassigned", "deployment-type": "model-pool"},
    )
    kube.apps.create_namespaced_deployment("default", pool)
    kube.core.create_namespaced_service("default", service("chat-a", selector={"model-id": "qwen", "business": "a"}))
    ready(kube, "pool", 2)
    assert kube.raw("GET", f"{SVC}/chat-a:8000/proxy/v1/models")[0] == 503
    worker = kube.core.list_namespaced_pod("default", label_selector="app=pool").items[0]
    kube.core.patch_namespaced_pod(worker.metadata.name, "default", {"metadata": {"labels": {"business": "a"}}})
    wait_for(lambda: kube.raw("GET", f"{SVC}/chat-a:8000/proxy/v1/models")[0] == 200, what="endpoint follows label")
    # through the official client's ApiClient, as the product will call it (the generated
    # connect_post_*_proxy_with_path methods take no body)
    method, url, headers, body, _ = kube.api.param_serialize(
        "POST",
        "/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}",
        path_params={"namespace": "default", "name": "chat-a:8000", "path": "v1/completions"},
        header_params={"Content-Type": "application/json"},
        body={"prompt": "hi", "max_tokens": 2},
        auth_settings=["BearerToken"],
    )
    resp = kube.api.call_api(method, url, header_params=headers, body=body)
    resp.read()
    assert resp.status == 200 and json.loads(resp.data)["usage"]["completion_tokens"] == 2
    same = kube.core.read_namespaced_pod(worker.metadata.name, "default")
    assert same.status.container_statuses[0].restart_count == 0


def test_an_api_key_guards_the_openai_routes_and_the_api_server_does_not_pass_credentials(world: Kube) -> None:
    kube = world
    dep = serving("keyed", ["vllm", "serve", "Qwen/Qwen3-0.6B", "--api-key", "sk-local"])
    kube.apps.create_namespaced_deployment("default", dep)
    kube.core.create_namespaced_service("default", service("keyed"))
    ready(kube, "keyed")
    # the API server consumed the caller's Authorization header, so the server sees none
    code, body = kube.raw("GET", f"{SVC}/keyed:8000/proxy/v1/models")
    assert code == 401 and body == {"error": "Unauthorized"}
    assert kube.raw("GET", f"{SVC}/keyed:8000/proxy/health")[0] == 200
    port = next(p for k, proc in kube.world.serving.procs.items() for p in proc.ports.values())
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models", headers={"Authorization": "Bearer sk-local"})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
