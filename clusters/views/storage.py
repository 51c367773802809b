"""The storage tab's actions: attach an existing S3 bucket or FSx file system, detach one — over the
serializer and services REST uses (StorageAttachSerializer, attach_storage, detach_storage)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required
from instantstart.tenancy.roles import Role

from ..selectors import get_cluster, get_storage
from ..serializers import StorageAttachSerializer
from ..services import attach_storage, detach_storage
from .common import flat_errors, tab_url
from .tabs import cluster_page

STORAGE_FIELDS = ("name", "kind", "bucket", "file_system_id")


@team_required(role=Role.ADMIN)
@require_POST
def storage_attach(request, cluster_id):
    """Mount an existing bucket or file system; the serializer checks it exists in the team's account."""
    cluster = get_cluster(request.access, cluster_id)
    values = {key: request.POST.get(key, "").strip() for key in STORAGE_FIELDS}
    body = {key: value for key, value in values.items() if value}
    serializer = StorageAttachSerializer(data=body, context={"cluster": cluster})
    valid = False
    with page_errors() as failed:  # the checks read the cloud
        valid = serializer.is_valid()
    errors = {"non_field_errors": [failed.text]} if failed else ({} if valid else flat_errors(serializer.errors))
    if errors:
        messages.error(request, "Storage not attached: correct the fields marked below.")
        return cluster_page(
            request,
            cluster,
            "storage",
            status=failed.status if failed else 400,
            storage_values=values,
            storage_errors=errors,
        )
    with page_errors(request) as refused:
        storage, operation = attach_storage(access=request.access, cluster=cluster, data=serializer.validated_data)
    if refused:
        return cluster_page(request, cluster, "storage", status=refused.status, storage_values=values)
    messages.success(
        request, f"Attaching {storage.name}: workloads mount the claim {storage.namespace}/{storage.claim_name}."
    )
    return redirect(tab_url(cluster, "storage", operation))


@team_required(role=Role.ADMIN)
@require_POST
def storage_detach(request, cluster_id, storage_id):
    """Unmount storage (the bucket or file system and its data stay)."""
    cluster = get_cluster(request.access, cluster_id)
    storage = get_storage(request.access, cluster_id, storage_id)
    with page_errors(request) as refused:
        operation = detach_storage(access=request.access, storage=storage)
    if refused:
        return cluster_page(request, cluster, "storage", status=refused.status)
    messages.success(request, f"Detaching {storage.name}: its data stays in the bucket or file system.")
    return redirect(tab_url(cluster, "storage", operation))
