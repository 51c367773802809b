"""The one lookup per object: an endpoint or download of one of the caller's clusters, else NotFound (404)."""

from __future__ import annotations

import uuid

from clusters.selectors import get_cluster
from instantstart.errors import NotFound
from instantstart.tenancy.access import Access

from .models import Endpoint, ModelDownload


def get_endpoint(access: Access, cluster_pk, name: str) -> Endpoint:
    """An endpoint of one of the caller's clusters by name (another team's is not found, on every face)."""
    cluster = get_cluster(access, cluster_pk)
    endpoint = (
        Endpoint.objects.visible_to(access).select_related("cluster__team").filter(cluster=cluster, name=name).first()
    )
    if endpoint is None:
        raise NotFound(f"No endpoint {name} on this cluster.")
    return endpoint


def endpoints_of(access: Access, cluster) -> list[Endpoint]:
    return list(Endpoint.objects.visible_to(access).select_related("cluster__team").filter(cluster=cluster))


def get_download(access: Access, cluster_pk, pk) -> ModelDownload:
    cluster = get_cluster(access, cluster_pk)
    try:
        return (
            ModelDownload.objects.visible_to(access)
            .select_related("cluster__team")
            .get(cluster=cluster, pk=uuid.UUID(str(pk)))
        )
    except (ValueError, ModelDownload.DoesNotExist):
        raise NotFound() from None


def downloads_of(access: Access, cluster) -> list[ModelDownload]:
    return list(ModelDownload.objects.visible_to(access).select_related("cluster").filter(cluster=cluster))
