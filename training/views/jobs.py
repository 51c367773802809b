"""Portal pages of training: a cluster's Training page (recipe picker, form, preflight, submit, the job
list, shared files) and a job's page (pods, events, live logs, charts, cancel/resubmit) — over the
serializers, services and readers REST uses."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework import serializers

from clusters.models import Cluster
from clusters.readers import catalog
from clusters.selectors import active_cluster, get_cluster
from features.gate import has_feature
from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.portal.partials import wants_partial
from instantstart.tenancy.roles import Role

from ..models import Job, Recipe
from ..readers.files import list_files
from ..recipes import DEFAULT_IMAGE, FEATURE, KIND, MS_SWIFT_TRAINING
from ..selectors import get_job
from ..serializers import FileUploadSerializer, validated_submission
from ..serializers.jobs import resubmission
from ..services import cancel_job, resubmit_job, submit_job, upload_file

TEXT_FIELDS = ("name", "instance_group", "nodes", "gpus_per_node", "image", "max_retries")
RECIPE_FIELDS = {
    Recipe.PYTORCH: ("script", "args"),
    Recipe.LLAMA_FACTORY: ("config",),
    Recipe.MS_SWIFT: ("command", "config", "args"),
    Recipe.VERL: ("entrypoint", "worker_replicas"),
}


@team_required
def training_home(request):
    """The Training page of the active cluster (or the list of clusters to pick one from)."""
    cluster = active_cluster(request.access)
    if cluster is not None:
        return redirect("portal:training", cluster_id=cluster.pk)
    clusters = Cluster.objects.visible_to(request.access)
    return render(request, "training/home.html", {"section": "jobs", "clusters": clusters})


def _values(source, recipe: str) -> dict:
    values = {key: source.get(key, "").strip() for key in (*TEXT_FIELDS, *RECIPE_FIELDS[recipe])}
    values["recipe"] = recipe
    values["mlflow"] = source.get("mlflow", "") in serializers.BooleanField.TRUE_VALUES if source else True
    values["storage"] = source.getlist("storage") if hasattr(source, "getlist") else ["s3"]
    values["env"] = source.get("env", "") if source else ""
    values["hang_detection"] = (
        source.get("hang_detection", "") in serializers.BooleanField.TRUE_VALUES if source else True
    )
    return values


def _body(values: dict) -> dict:
    """The REST body of a submission, from the form (blank optional inputs left out, as a client would)."""
    body = {
        key: value for key, value in values.items() if value not in ("", None) and key not in ("env", "hang_detection")
    }
    body["mlflow"] = values["mlflow"]
    if not values["hang_detection"]:
        body["hang_detection"] = []  # the form offers the recipe's default rule or none
    body["storage"] = values["storage"]
    env = {}
    for line in (values.get("env") or "").splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    body["env"] = env
    return body


def _page_context(request, cluster, recipe: str, values: dict, errors: dict | None = None) -> dict:
    groups = list(cluster.instance_groups.all())
    with page_errors() as failed:
        types = {
            g.instance_type: catalog.instance_type_info(cluster.team, cluster.region, g.instance_type) for g in groups
        }
    jobs = list(Job.objects.visible_to(request.access).filter(cluster=cluster)[:50])
    return {
        "section": "jobs",
        "cluster": cluster,
        "recipes": Recipe.choices,
        "recipe": recipe,
        "recipe_fields": RECIPE_FIELDS[recipe],
        "kind": KIND[recipe],
        "feature": FEATURE[KIND[recipe]],
        "default_image": DEFAULT_IMAGE[recipe],
        "swift_commands": MS_SWIFT_TRAINING,
        "groups": [(g, types.get(g.instance_type)) for g in groups],
        "catalog_error": failed.text,
        "values": values,
        "errors": errors or {},
        "jobs": jobs,
        "can_submit": request.access.can(Role.MEMBER),
    }


def _recipe(request) -> str:
    recipe = request.POST.get("recipe") or request.GET.get("recipe") or Recipe.PYTORCH
    return recipe if recipe in RECIPE_FIELDS else Recipe.PYTORCH


@team_required
def training_page(request, cluster_id):
    cluster = get_cluster(request.access, cluster_id)
    recipe = _recipe(request)
    values = _values({}, recipe)
    values["mlflow"] = values["hang_detection"] = True
    values["storage"] = ["s3"]
    context = _page_context(request, cluster, recipe, values)
    if wants_partial(request) and request.GET.get("part") == "jobs":
        return render(request, "training/_jobs_table.html", context)
    if wants_partial(request) and request.GET.get("part") == "form":
        return render(request, "training/_form.html", context)
    return render(request, "training/page.html", context)


def _flat(errors) -> dict:
    out = {}
    for key, value in (errors or {}).items():
        if isinstance(value, dict):
            out[key] = [f"{k}: {' '.join(map(str, v))}" for k, v in value.items()]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            out[key] = [f"{k}: {' '.join(map(str, v))}" for item in value for k, v in item.items()]
        else:
            out[key] = [str(v) for v in (value if isinstance(value, list) else [value])]
    return out


@team_required(role=Role.MEMBER)
@require_POST
def training_preflight(request, cluster_id):
    """Check the form without submitting: the feature is on, the group has the nodes and GPUs, paths exist."""
    cluster = get_cluster(request.access, cluster_id)
    recipe = _recipe(request)
    values = _values(request.POST, recipe)
    checks, errors = [], {}
    with page_errors() as failed:
        feature = FEATURE[KIND[recipe]]
        checks.append((has_feature(cluster, feature), f"The {feature} feature is enabled on {cluster.name}."))
        try:
            spec = validated_submission(_body(values), cluster)
            checks.append((True, f"{spec['nodes']} × {spec['instance_type']} with {spec['gpus_per_node']} GPUs each."))
        except serializers.ValidationError as exc:
            errors = _flat(exc.detail)
    context = {"checks": checks, "errors": errors, "failed": failed.text}
    return render(request, "training/_preflight.html", context)


@team_required(role=Role.MEMBER)
@require_POST
def training_submit(request, cluster_id):
    cluster = get_cluster(request.access, cluster_id)
    recipe = _recipe(request)
    values = _values(request.POST, recipe)
    try:
        spec = validated_submission(_body(values), cluster)
    except serializers.ValidationError as exc:
        context = _page_context(request, cluster, recipe, values, _flat(exc.detail))
        return render(request, "training/page.html", context, status=400)
    with page_errors(request) as refused:
        job, _ = submit_job(access=request.access, cluster=cluster, spec=spec)
    if refused:
        context = _page_context(request, cluster, recipe, values)
        context["refusal"] = refused.text
        return render(request, "training/page.html", context, status=refused.status)
    messages.success(request, f"Job {job.name} submitted.")
    return redirect("portal:training_job", cluster_id=cluster.pk, job_id=job.pk)


@team_required(role=Role.MEMBER)
@require_POST
def training_upload(request, cluster_id):
    cluster = get_cluster(request.access, cluster_id)
    serializer = FileUploadSerializer(data={"file": request.FILES.get("file"), "path": request.POST.get("path", "")})
    if not serializer.is_valid():
        for field, problems in _flat(serializer.errors).items():
            messages.error(request, f"{field}: {' '.join(problems)}")
    else:
        with page_errors(request) as refused:
            stored = upload_file(
                access=request.access,
                cluster=cluster,
                path=serializer.validated_data["path"],
                upload=serializer.validated_data["file"],
            )
        if not refused:
            messages.success(
                request, f"Uploaded {stored['path']} ({stored['size']} bytes): use {stored['mount_path']}."
            )
    return redirect(reverse("portal:training", args=[cluster.pk]) + "#files")


@team_required
def training_files(request, cluster_id):
    cluster = get_cluster(request.access, cluster_id)
    with page_errors() as failed:
        files = list_files(cluster, request.GET.get("prefix", ""))
    return render(request, "training/_files.html", {"files": files if not failed else [], "failed": failed.text})


@team_required
def job_page(request, cluster_id, job_id):
    job = get_job(request.access, cluster_id, job_id)
    context = {"section": "jobs", "job": job, "cluster": job.cluster, "can_act": request.access.can(Role.MEMBER)}
    if wants_partial(request):
        return render(request, "training/_job_status.html", context)
    return render(request, "training/job.html", context)


@team_required(role=Role.MEMBER)
@require_POST
def job_cancel(request, cluster_id, job_id):
    job = get_job(request.access, cluster_id, job_id)
    with page_errors(request) as refused:
        cancel_job(access=request.access, job=job)
    if not refused:
        messages.success(request, f"Cancelling {job.name}: its logs stay here.")
    return redirect("portal:training_job", cluster_id=job.cluster_id, job_id=job.pk)


@team_required(role=Role.MEMBER)
@require_POST
def job_resubmit(request, cluster_id, job_id):
    job = get_job(request.access, cluster_id, job_id)
    try:
        spec = resubmission(job)
    except serializers.ValidationError as exc:
        for field, problems in _flat(exc.detail).items():
            messages.error(request, f"Cannot resubmit: {field}: {' '.join(problems)}")
        return redirect("portal:training_job", cluster_id=job.cluster_id, job_id=job.pk)
    with page_errors(request) as refused:
        new, _ = resubmit_job(access=request.access, job=job, spec=spec)
    if refused:
        return redirect("portal:training_job", cluster_id=job.cluster_id, job_id=job.pk)
    messages.success(request, f"Resubmitted {job.name} as a new job.")
    return redirect("portal:training_job", cluster_id=new.cluster_id, job_id=new.pk)
