"""Fixtures of the clusters tests (helpers they import live in tests/clusters/helpers.py)."""

from __future__ import annotations

import pytest

from clusters.models import Cluster
from tests.factories import ClusterFactory, InstanceGroupFactory, StorageFactory


@pytest.fixture
def theirs(other_team, outsider_user) -> Cluster:
    """Another team's active cluster, with a HyperPod cluster recorded, one group (gpu) and storage (data)."""
    cluster = ClusterFactory(team=other_team, name="theirs", hyperpod_cluster_name="theirs-hp")
    InstanceGroupFactory(cluster=cluster, name="gpu", count=1)
    StorageFactory(cluster=cluster, name="data", bucket="globex-data")
    return cluster
