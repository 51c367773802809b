"""MCP tools of the inference app: each one is an inference REST endpoint (same auth, scoping, errors)."""

from __future__ import annotations

from agent_tools.registry import Tool, register
from instantstart.operations.serializers import STATUS_TOOL

from .api.endpoints import EndpointViewSet
from .api.models import ModelViewSet

_SHAPE = (
    "An endpoint is {id, name, mode (managed|self_managed), engine (vllm|sglang), model {source, id or uri}, "
    "served_model (the name chat requests use), instance_group, instance_type, gpus (per replica), status "
    "(deploying|ready|degraded|failed|deleting), replicas {desired, ready}, url (external only), service "
    "(external|internal|pool), router, autoscaling {min, max, target, cooldown}, kv_cache, routing, pods "
    "[{name, phase, ready, restarts, waiting, node, model}], events [{type, reason, object, message, time}], "
    "manifest [the Kubernetes objects applied]}."
)
_NOT_FOUND = "A cluster or endpoint of another team is a not_found error."
_ACCEPTED = (
    "Returns at once (HTTP 202) with an operation {id, status, phases}. Next: call get_operation with its id every "
    "few seconds until succeeded, failed or cancelled, then get_endpoint."
)

register(
    Tool(
        name="list_endpoints",
        title="List inference endpoints",
        description=(
            "List the inference endpoints of a cluster with status and ready replicas (read live from Kubernetes). "
            "Returns {count, results: [endpoint]}. " + _SHAPE + " " + _NOT_FOUND + " Next: get_endpoint for one "
            "endpoint's pods and events, invoke_endpoint to chat with it."
        ),
        view=EndpointViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_endpoint",
        title="Get an inference endpoint",
        description=(
            "Get one endpoint by name: status, replicas {desired, ready}, url, pods and the deployment events "
            "(image pulls, scheduling, crash loops, autoscaling). Use it while an endpoint comes up or to see "
            "why it is degraded. " + _SHAPE + " " + _NOT_FOUND
        ),
        view=EndpointViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="deploy_endpoint",
        title="Deploy an inference endpoint",
        description=(
            "Serve a model on a cluster. Inputs: name (lowercase, ≤30), mode self_managed (default: a vLLM or SGLang "
            "Deployment) or managed (an InferenceEndpointConfig; needs the inference_operator feature), engine vllm "
            "(default) or sglang, model {source: huggingface, id: 'Qwen/Qwen3-0.6B'} or {source: s3, uri: "
            "'s3://<the cluster bucket>/models/...'} (a uri from list_models) or {source: fsx, uri: '/fsx/...'}, "
            "instance_group (a group of the cluster), replicas (default 1), gpus per replica (at most the type's), "
            "service external (NLB) | internal (ClusterIP, default) | pool (warm workers, no Service), router "
            "(true: the SGLang router in front, SGLang only), autoscaling {min, max, target: requests in flight per "
            "replica, cooldown seconds} (needs router and the keda feature; managed: also server_address), "
            "kv_cache {l1, l2, backend} and routing (prefixaware|kvaware|session|roundrobin) for managed, args "
            "(extra engine flags). "
            "A request that cannot work is a field error (or a feature_required conflict naming the feature) and "
            "nothing is applied. " + _ACCEPTED
        ),
        view=EndpointViewSet,
        action="create",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="scale_endpoint",
        title="Scale an inference endpoint",
        description=(
            "Set an endpoint's replica count: {replicas: N}. When the cluster already runs N the answer is "
            "{changed: false} and nothing is applied; otherwise {changed: true, operation}. An autoscaled endpoint "
            "is a conflict (KEDA sets its count). " + _NOT_FOUND + " Then poll get_operation, then get_endpoint."
        ),
        view=EndpointViewSet,
        action="partial_update",
        status_tool=STATUS_TOOL,
        idempotent=True,
    ),
    Tool(
        name="delete_endpoint",
        title="Delete an inference endpoint",
        description=(
            "Delete an endpoint and everything its deploy created (Deployment, Service, router, Prometheus, "
            "ScaledObject or InferenceEndpointConfig) and nothing else. Destructive: only on the user's request. A "
            "repeat returns the deletion already running. " + _NOT_FOUND + " " + _ACCEPTED
        ),
        view=EndpointViewSet,
        action="destroy",
        status_tool=STATUS_TOOL,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="invoke_endpoint",
        title="Chat with an inference endpoint",
        description=(
            "Send an OpenAI chat completion to the endpoint: {messages: [{role, content}], max_tokens?, temperature?, "
            "model? (for a pool: the model whose workers answer)}. The request goes only to the endpoint's own "
            "Service through the cluster's API server; there is no URL argument. Returns the OpenAI answer {id, "
            "model, choices [{message {content}}], usage}. A not_ready conflict means no replica is ready yet: "
            "check get_endpoint. Tools always get the whole answer (stream is ignored here)."
        ),
        view=EndpointViewSet,
        action="invoke",
        read_only=True,
    ),
    Tool(
        name="assign_worker",
        title="Assign a pool worker to a model",
        description=(
            "For a pool endpoint: point one warm worker (a pod name from get_endpoint's pods) at a model: {model}. "
            "Only the pod's label changes, the worker is not restarted; invoke_endpoint with that model then reaches "
            "it. Returns {pod, model, changed} at once (changed false when it already serves that model). "
            + _NOT_FOUND
            + " Next: get_endpoint shows each pod's model."
        ),
        view=EndpointViewSet,
        action="assign",
        status_tool="get_endpoint",
        idempotent=True,
    ),
    Tool(
        name="download_model",
        title="Download a model or dataset",
        description=(
            "Download a Hugging Face model or dataset to the cluster's shared storage with a Kubernetes Job: {id: "
            "'Qwen/Qwen3-0.6B', kind: model|dataset, target: s3|fsx, token? (for gated repos; kept as a Kubernetes "
            "Secret and never returned), revision?}. "
            + _ACCEPTED.replace("then get_endpoint", "then list_models")
            + " list_models shows progress, and once ready the uri to give deploy_endpoint as model.uri."
        ),
        view=ModelViewSet,
        action="create",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="list_models",
        title="List downloaded models",
        description=(
            "List the cluster's model and dataset downloads, newest first: {id, kind, source, status "
            "(downloading|ready|failed), progress {percent, files_done, files_total, last_line}, size_bytes, uri "
            "(s3://… or /fsx/…: what an endpoint's model names), mount_path (/s3/… or /fsx/…)}. " + _NOT_FOUND
        ),
        view=ModelViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_model",
        title="Get a model download",
        description=(
            "Get one download: modeldownload_id is the download_id of download_model's answer or list_models. "
            "Answers status "
            "(downloading|ready|failed), progress {percent, files_done, files_total, last_line}, size_bytes, uri and "
            "mount_path. Use it to follow a download; once ready, give its uri to deploy_endpoint as model.uri. "
            + _NOT_FOUND
        ),
        view=ModelViewSet,
        action="retrieve",
        read_only=True,
    ),
)
