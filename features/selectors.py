"""Database reads of the features app, and the features list (desired rows + actual state)."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType

from clusters.models import Cluster
from instantstart.operations.models import ACTIVE, Operation

from .catalog import CATALOG, required_by
from .models import ClusterFeature
from .planning import unavailable_reason
from .readers.state import ClusterState, read_state

KIND = "features.update"


def records_of(cluster: Cluster) -> dict[str, ClusterFeature]:
    return {r.name: r for r in ClusterFeature.objects.filter(cluster=cluster)}


def running_update(cluster: Cluster) -> Operation | None:
    """The features.update running on the cluster (one at a time)."""
    return (
        Operation.objects.filter(
            kind=KIND,
            target_type=ContentType.objects.get_for_model(Cluster),
            target_id=str(cluster.pk),
            status__in=ACTIVE,
        )
        .order_by("created_at")
        .first()
    )


def features_now(cluster: Cluster, records: dict | None = None) -> tuple[list[dict], Operation | None]:
    """The features list read now, with the features.update running on the cluster. The operation is
    looked up before the cloud is read: an update that ends in between is then shown by the next read
    as what it left, never a state read before it ended as if nothing were changing."""
    running = running_update(cluster)
    return feature_list(cluster, read_state(cluster), records, running), running


def feature_list(
    cluster: Cluster, state: ClusterState, records: dict | None = None, running: Operation | None = None
) -> list[dict]:
    """Every feature and dependency with its actual state, desired state and drift; the features the
    `running` update changes show as enabling / disabling."""
    records = records_of(cluster) if records is None else records
    changing = {}
    if running is not None:
        for action in running.params.get("plan", []):
            changing[action["feature"]] = "disabling" if action["action"] == "disable" else "enabling"
    out = []
    for f in CATALOG.values():
        actual = state.features[f.name]
        record = records.get(f.name)
        desired = record.desired if record is not None else actual.enabled
        status = changing.get(f.name, actual.status)
        settings = {}
        if f.settings:
            settings = {s.name: s.default for s in f.settings}
            settings.update((record.settings if record else {}) or {})
            if actual.enabled:
                settings.update({k: v for k, v in actual.settings.items() if v is not None})
        reason = unavailable_reason(cluster, f, state)
        out.append(
            {
                "name": f.name,
                "title": f.title,
                "kind": f.kind,
                "enabled": actual.enabled,
                "desired": desired,
                "status": status,
                "requires": list(f.requires),
                "required_by": required_by(f.name),
                "settings": settings,
                "drift": record is not None and f.name not in changing and desired != actual.enabled,
                "detail": reason or actual.detail,
                "available": not reason,
                "description": f.description,
            }
        )
    return out
