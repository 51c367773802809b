"""Drift of features: a feature whose desired state (what was last asked for) differs from the actual
state while no features.update is changing it — e.g. an add-on deleted out of band. Reads only."""

from __future__ import annotations

from instantstart.errors import cloud_read

from ..selectors import features_now, records_of


@cloud_read()
def feature_drift(cluster) -> list[dict]:
    """Each drifting feature as {resource: "feature/<name>", field: "enabled", recorded, actual}."""
    records = records_of(cluster)
    if not records or not cluster.eks_cluster_name:
        return []  # nothing was ever asked for: nothing can drift (and nothing is read)
    rows, _ = features_now(cluster, records)
    return [
        {"resource": f"feature/{r['name']}", "field": "enabled", "recorded": r["desired"], "actual": r["enabled"]}
        for r in rows
        if r["drift"]
    ]
