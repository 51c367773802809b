"""Portal pages of inference: a cluster's Inference page (deploy form, endpoint list), an endpoint's page
(events, pods, URL, scale, delete, a chat box that streams through REST's invoke) and the Models page.
Thin adapters over the serializers, services and readers REST uses."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from clusters.selectors import active_cluster, get_cluster
from clusters.views.common import checked, flat_errors
from instantstart.operations.models import Operation
from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.portal.panels import panel_context
from instantstart.tenancy.roles import Role

from ..models import DownloadStatus, Engine, Mode, Routing, ServiceShape
from ..readers.endpoints import endpoint_view
from ..selectors import downloads_of, endpoints_of, get_endpoint
from ..serializers import EndpointDeploySerializer, EndpointScaleSerializer, ModelDownloadSerializer
from ..services import delete_endpoint, deploy_endpoint, download_model, scale_endpoint

FORM_KEYS = ("name", "mode", "engine", "model", "instance_group", "replicas", "gpus", "service", "routing", "args")
SCALING_KEYS = ("min", "max", "target", "cooldown")


def _page_url(cluster, operation: Operation | None = None) -> str:
    url = reverse("portal:inference", args=[cluster.pk])
    return url + (f"?operation={operation.pk}" if operation else "")


def _endpoint_url(endpoint, operation: Operation | None = None) -> str:
    url = reverse("portal:endpoint", args=[endpoint.cluster_id, endpoint.name])
    return url + (f"?operation={operation.pk}" if operation else "")


def _operation(request) -> Operation | None:
    op_id = request.GET.get("operation")
    if not op_id:
        return None
    return Operation.objects.visible_to(request.access).filter(pk=op_id).first()


@team_required
@require_GET
def endpoints_home(request):
    """The active cluster's Inference page (or the clusters to choose from)."""
    cluster = active_cluster(request.access)
    if cluster is not None:
        return redirect("portal:inference", cluster_id=cluster.pk)
    messages.info(request, "Choose a cluster (make one active) to see its endpoints.")
    return redirect("portal:clusters")


def _model_body(text: str) -> dict:
    """What the model field holds: an s3:// uri, an /fsx/ path, or a Hugging Face id."""
    text = text.strip()
    if text.startswith("s3://"):
        return {"source": "s3", "uri": text}
    if text.startswith("/fsx/"):
        return {"source": "fsx", "uri": text}
    return {"source": "huggingface", "id": text}


def _deploy_body(post) -> tuple[dict, dict]:
    values = {key: post.get(key, "").strip() for key in FORM_KEYS}
    values["router"] = checked(post, "router")
    values["autoscale"] = checked(post, "autoscale")
    values["kv_l1"], values["kv_l2"] = checked(post, "kv_l1"), checked(post, "kv_l2")
    values.update({f"as_{key}": post.get(f"as_{key}", "").strip() for key in SCALING_KEYS})
    body: dict = {
        "name": values["name"],
        "mode": values["mode"] or Mode.SELF_MANAGED,
        "engine": values["engine"] or Engine.VLLM,
        "model": _model_body(values["model"]),
        "instance_group": values["instance_group"],
        "service": values["service"] or ServiceShape.INTERNAL,
        "router": values["router"],
        "args": values["args"].split() if values["args"] else [],
    }
    for key in ("replicas", "gpus"):
        if values[key]:
            body[key] = values[key]
    if values["routing"]:
        body["routing"] = values["routing"]
    if values["autoscale"]:
        body["autoscaling"] = {key: values[f"as_{key}"] for key in SCALING_KEYS if values[f"as_{key}"]}
    if values["kv_l1"] or values["kv_l2"]:
        body["kv_cache"] = {"l1": values["kv_l1"], "l2": values["kv_l2"]}
    return body, values


def _inference_context(request, cluster, **extra) -> dict:
    views, list_error = [], ""
    with page_errors() as failed:
        views = [endpoint_view(e, detail=False) for e in endpoints_of(request.access, cluster)]
    list_error = failed.text
    ready = [d for d in downloads_of(request.access, cluster) if d.status == DownloadStatus.READY]
    context = {
        "section": "endpoints",
        "cluster": cluster,
        "endpoints": views,
        "list_error": list_error,
        "models": ready,
        "groups": list(cluster.instance_groups.all()),
        "modes": Mode.choices,
        "engines": Engine.choices,
        "shapes": ServiceShape.choices,
        "routings": Routing.choices,
        "values": {"replicas": "1", "gpus": "1", "engine": "vllm", "service": "internal", "mode": "self_managed"},
        "errors": {},
        "can_write": request.access.can(Role.MEMBER),
        "polling": any(v["status"] in ("deploying", "deleting", "degraded") for v in views),
    }
    operation = _operation(request)
    if operation is not None:
        context.update(panel_context(request, operation))
        context["section"] = "endpoints"
    context.update(extra)
    return context


@team_required
@require_http_methods(["GET", "POST"])
def inference_page(request, cluster_id):
    """GET: the cluster's endpoints and the deploy form. POST: deploy (same serializer and service as REST)."""
    cluster = get_cluster(request.access, cluster_id)
    if request.method == "GET":
        template = "inference/_endpoint_rows.html" if request.GET.get("rows") else "inference/page.html"
        return render(request, template, _inference_context(request, cluster))
    if not request.access.can(Role.MEMBER):
        return render(request, "403.html", status=403)
    body, values = _deploy_body(request.POST)
    serializer = EndpointDeploySerializer(data=body, context={"cluster": cluster})
    errors: dict = {}
    with page_errors() as failed:
        valid = serializer.is_valid()
    if failed:
        errors["non_field_errors"] = [failed.text]
    elif not valid:
        errors = flat_errors(serializer.errors)
    if not errors:
        with page_errors() as refused:
            endpoint, operation = deploy_endpoint(
                access=request.access, cluster=cluster, data=serializer.validated_data
            )
        if not refused:
            messages.success(request, f"Deploying {endpoint.name}: its progress, pods and events are below.")
            return redirect(_endpoint_url(endpoint, operation))
        errors["non_field_errors"] = [refused.text]
    messages.error(request, "Endpoint not deployed: correct the fields marked below.")
    context = _inference_context(request, cluster, values=values, errors=errors)
    return render(request, "inference/page.html", context, status=failed.status if failed else 400)


def _endpoint_context(request, endpoint, **extra) -> dict:
    view, error = None, ""
    with page_errors() as failed:
        view = endpoint_view(endpoint)
    error = failed.text
    context = {
        "section": "endpoints",
        "cluster": endpoint.cluster,
        "endpoint": endpoint,
        "view": view,
        "view_error": error,
        "can_write": request.access.can(Role.MEMBER),
        "invoke_url": reverse("api:endpoint-invoke", args=[endpoint.cluster_id, endpoint.name]),
        "polling": view is not None and view["status"] in ("deploying", "deleting", "degraded"),
        "scale_errors": {},
    }
    operation = _operation(request)
    if operation is not None:
        context.update(panel_context(request, operation))
        context["section"] = "endpoints"
    context.update(extra)
    return context


@team_required
@require_GET
def endpoint_page(request, cluster_id, name):
    endpoint = get_endpoint(request.access, cluster_id, name)
    template = "inference/_endpoint_live.html" if request.GET.get("live") else "inference/endpoint.html"
    return render(request, template, _endpoint_context(request, endpoint))


@team_required(role=Role.MEMBER)
@require_POST
def endpoint_scale(request, cluster_id, name):
    """Scale with the explicit diff: the count it runs already is a message, no operation."""
    endpoint = get_endpoint(request.access, cluster_id, name)
    serializer = EndpointScaleSerializer(data={"replicas": request.POST.get("replicas", "")})
    if not serializer.is_valid():
        context = _endpoint_context(request, endpoint, scale_errors=flat_errors(serializer.errors))
        return render(request, "inference/endpoint.html", context, status=400)
    with page_errors(request) as refused:
        operation = scale_endpoint(
            access=request.access, endpoint=endpoint, replicas=serializer.validated_data["replicas"]
        )
    if refused:
        return redirect(_endpoint_url(endpoint))
    if operation is None:
        messages.info(request, f"{endpoint.name} already runs {serializer.validated_data['replicas']} replicas.")
        return redirect(_endpoint_url(endpoint))
    messages.success(request, f"Scaling {endpoint.name} to {serializer.validated_data['replicas']} replicas.")
    return redirect(_endpoint_url(endpoint, operation))


@team_required(role=Role.MEMBER)
@require_POST
def endpoint_delete(request, cluster_id, name):
    endpoint = get_endpoint(request.access, cluster_id, name)
    if request.POST.get("confirm") != endpoint.name:
        messages.error(request, f"Type the endpoint's name ({endpoint.name}) to delete it.")
        return redirect(_endpoint_url(endpoint))
    with page_errors(request) as refused:
        operation = delete_endpoint(access=request.access, endpoint=endpoint)
    if refused:
        return redirect(_endpoint_url(endpoint))
    messages.success(request, f"Deleting {endpoint.name} and everything its deploy created.")
    return redirect(_page_url(endpoint.cluster, operation))


# --- models ---------------------------------------------------------------------------------


def _models_context(request, cluster, **extra) -> dict:
    downloads = downloads_of(request.access, cluster)
    context = {
        "section": "endpoints",
        "cluster": cluster,
        "downloads": downloads,
        "values": {"kind": "model", "target": "s3"},
        "errors": {},
        "can_write": request.access.can(Role.MEMBER),
        "polling": any(d.status == DownloadStatus.DOWNLOADING for d in downloads),
        "storages": {s.kind for s in cluster.storages.all()},
    }
    context.update(extra)
    return context


@team_required
@require_http_methods(["GET", "POST"])
def models_page(request, cluster_id):
    """GET: the cluster's downloads with progress. POST: start a download (same serializer and service as REST)."""
    cluster = get_cluster(request.access, cluster_id)
    if request.method == "GET":
        template = "inference/_download_rows.html" if request.GET.get("rows") else "inference/models.html"
        return render(request, template, _models_context(request, cluster))
    if not request.access.can(Role.MEMBER):
        return render(request, "403.html", status=403)
    values = {key: request.POST.get(key, "").strip() for key in ("id", "kind", "target", "revision", "token")}
    body = {k: v for k, v in values.items() if v}
    serializer = ModelDownloadSerializer(data={"source": "huggingface", **body}, context={"cluster": cluster})
    values.pop("token")  # never shown again
    if not serializer.is_valid():
        context = _models_context(request, cluster, values=values, errors=flat_errors(serializer.errors))
        return render(request, "inference/models.html", context, status=400)
    with page_errors(request) as refused:
        download, _ = download_model(access=request.access, cluster=cluster, data=serializer.validated_data)
    if refused:
        return render(
            request, "inference/models.html", _models_context(request, cluster, values=values), status=refused.status
        )
    messages.success(request, f"Downloading {download.repo_id}: progress below.")
    return redirect("portal:inference_models", cluster_id=cluster.pk)
