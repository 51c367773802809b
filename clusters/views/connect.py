"""How to use a cluster from a shell: the kubeconfig the overview's Connect box offers."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from instantstart.portal.errors import page_errors
from instantstart.portal.guards import team_required

from ..readers.connect import kubeconfig
from ..selectors import get_cluster
from .tabs import cluster_page


@team_required
@require_GET
def cluster_kubeconfig(request, cluster_id):
    """A kubeconfig for kubectl (no credential in it: `aws eks get-token` on AWS)."""
    cluster = get_cluster(request.access, cluster_id)
    text = ""
    with page_errors(request) as failed:
        text = kubeconfig(cluster)
    if failed:
        return cluster_page(request, cluster, "overview", status=failed.status)
    response = HttpResponse(text, content_type="application/yaml")
    response["Content-Disposition"] = f'attachment; filename="{cluster.name}.kubeconfig"'
    return response
