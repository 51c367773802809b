"""The header's active-cluster switcher: the user's active cluster and the team's others."""

from __future__ import annotations

from django import template

from clusters.models import Cluster
from clusters.selectors import active_cluster

register = template.Library()


@register.inclusion_tag("clusters/_switcher.html", takes_context=True)
def active_cluster_switcher(context) -> dict:
    access = context.get("access")
    request = context.get("request")
    if not access or request is None:
        return {"show": False}
    return {
        "show": True,
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "clusters": list(Cluster.objects.visible_to(access).only("id", "name", "status")),
        "active": active_cluster(access),
    }
