"""invoke: a chat completion sent to the endpoint's own Service through the Kubernetes API server's
service proxy (pods proxy for a pool's worker).

Nothing in the request chooses where it goes: the namespace, Service (or pod of this endpoint) and
port come from the endpoint's record, the path is fixed to ``v1/chat/completions``, and the API
server (the cluster's, from EKS) is the only host contacted. So the call cannot be aimed at the
instance metadata address, another host, or another team's Service. The API server does not pass
the caller's Authorization on, so engines are started without an API key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

from kubernetes import client as k8s

from instantstart.errors import StateConflict, cloud_read

from ..manifests import POOL_MODEL_LABEL, engine_port, invoke_target, label_value, served_name
from ..models import Endpoint, EndpointStatus, ServiceShape
from .cluster_api import kube_of

CHAT_PATH = "v1/chat/completions"
TIMEOUT_SECONDS = 300


@dataclass
class Upstream:
    """The engine's answer: status, content type, and the body (read whole, or streamed)."""

    status: int
    content_type: str
    response: object  # urllib3 response

    def json(self) -> dict:
        try:
            return json.loads(self.response.data or b"{}")
        finally:
            self.response.release_conn()

    def chunks(self) -> Iterator[bytes]:
        try:
            yield from self.response.stream(1024)
        finally:
            self.response.release_conn()


def _pool_pod(endpoint: Endpoint, api: k8s.ApiClient, model: str | None) -> str:
    core = k8s.CoreV1Api(api)
    wanted = label_value(model or served_name(endpoint))
    pods = core.list_namespaced_pod(
        endpoint.namespace, label_selector=f"app={endpoint.name},{POOL_MODEL_LABEL}={wanted}"
    ).items
    ready = [
        p.metadata.name
        for p in sorted(pods, key=lambda p: p.metadata.name)
        if p.status.container_statuses and all(s.ready for s in p.status.container_statuses)
    ]
    if not ready:
        raise StateConflict(
            f"No ready worker of pool {endpoint.name} is assigned to {model or served_name(endpoint)}.",
            code="not_ready",
            hint="Assign a worker to that model (assign_worker), or wait until one is ready.",
        )
    return ready[0]


def _path(endpoint: Endpoint, api: k8s.ApiClient, model: str | None) -> str:
    if endpoint.service == ServiceShape.POOL:
        pod = _pool_pod(endpoint, api, model)
        target = f"pods/{quote(pod, safe='')}:{engine_port(endpoint)}"
    else:
        _, service, port = invoke_target(endpoint)
        target = f"services/{quote(service, safe='')}:{port}"
    return f"/api/v1/namespaces/{quote(endpoint.namespace, safe='')}/{target}/proxy/{CHAT_PATH}"


@cloud_read()
def invoke(endpoint: Endpoint, body: dict, *, stream: bool) -> Upstream:
    """Send the chat body to the endpoint; the caller reads ``Upstream.json()`` or ``Upstream.chunks()``."""
    if endpoint.status in (EndpointStatus.DELETING, EndpointStatus.DELETED):
        raise StateConflict(f"Endpoint {endpoint.name} is {endpoint.status}.", code="not_ready")
    api = kube_of(endpoint.cluster)
    requested = body.get("model")
    payload = {**body, "model": served_name(endpoint), "stream": stream}
    if endpoint.service != ServiceShape.POOL and requested and requested != served_name(endpoint):
        payload["model"] = requested  # the engine answers 404 for a model it does not serve, as vLLM does
    path = _path(endpoint, api, requested if endpoint.service == ServiceShape.POOL else None)
    method, url, headers, _, _ = api.param_serialize(
        "POST",
        path,
        header_params={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        auth_settings=["BearerToken"],
    )
    data = json.dumps(payload)
    response = api.rest_client.pool_manager.request(
        method, url, body=data, headers=headers, preload_content=False, timeout=TIMEOUT_SECONDS
    )
    content_type = response.headers.get("Content-Type", "")
    if _is_api_server_error(response, content_type):
        text = response.data.decode(errors="replace")
        response.release_conn()
        raise StateConflict(
            f"Endpoint {endpoint.name} cannot answer yet: {_status_message(text)}",
            code="not_ready",
            hint="Wait until a replica is ready (get_endpoint shows replicas.ready and events).",
        )
    return Upstream(response.status, content_type, response)


def _is_api_server_error(response, content_type: str) -> bool:
    # The API server's own refusals (no endpoints, no such Service, dial errors) come as a Status or text;
    # an engine's errors (an unknown model, a context overflow) are JSON of its own and pass through.
    if response.status < 400:
        return False
    if response.status in (502, 503) or "json" not in content_type:
        return True
    peek = response.data
    try:
        return json.loads(peek or b"{}").get("kind") == "Status"
    except ValueError:
        return True


def _status_message(text: str) -> str:
    try:
        return json.loads(text).get("message", text)
    except ValueError:
        return text.strip()[:300]
