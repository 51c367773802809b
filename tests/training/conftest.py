"""Fixtures of the training tests: one sandbox cluster for the whole run (made once through the product's
own create, then re-recorded for each test), with the training operator and KubeRay enabled on it.

The team keeps one id across tests, so it stays the same emulated AWS account and the cluster made by
the first test is still there for the next (the database is emptied between tests, the sandbox is not).
Until the features API lands, the operator and KubeRay are installed here directly (boto3 create_addon
and the documented Helm-equivalent objects), as tests/sandbox/kube/test_helm_installs.py does.
"""

from __future__ import annotations

import uuid

import pytest

from clusters.models import Cluster, InstanceGroup, Storage
from tests.factories import TeamFactory
from tests.support import wait_until

from .helpers import CLUSTER_BODY, AsgiServer, enable_training_features, wait_for_operation

TEAM_ID = uuid.UUID("7a1e0000-0000-4000-8000-00000000a1c3")
OTHER_TEAM_ID = uuid.UUID("7a1e0000-0000-4000-8000-00000000b10b")

# cluster, group and storage fields of the cloud cluster, by team id, once the first test made it
_MADE: dict[uuid.UUID, dict] = {}


@pytest.fixture
def team(db):
    return TeamFactory(id=TEAM_ID, slug="acme", name="Acme ML")


@pytest.fixture
def other_team(db):
    return TeamFactory(id=OTHER_TEAM_ID, slug="globex", name="Globex")


def _fields(obj, exclude=("id", "cluster", "team", "created_by", "cluster_id", "team_id", "created_by_id")) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields if f.attname not in exclude}


def _remember(cluster: Cluster) -> None:
    _MADE[cluster.team_id] = {
        "cluster": {**_fields(cluster), "id": cluster.pk},
        "groups": [_fields(g) for g in cluster.instance_groups.all()],
        "storages": [{**_fields(s), "id": s.pk} for s in cluster.storages.all()],
    }


def _restore(team) -> Cluster:
    made = _MADE[team.pk]
    cluster = Cluster.objects.create(team=team, **made["cluster"])
    for group in made["groups"]:
        InstanceGroup.objects.create(cluster=cluster, **group)
    for storage in made["storages"]:
        Storage.objects.create(cluster=cluster, **storage)
    return cluster


def made_cluster(team, api) -> Cluster:
    """The team's sandbox cluster (created by the product the first time), operator and KubeRay on."""
    if team.pk in _MADE:
        return _restore(team)
    body = api.post("/api/v1/clusters/", CLUSTER_BODY, format="json").json()
    wait_for_operation(body["operation"]["id"], timeout=240)
    cluster = Cluster.objects.get(pk=body["cluster"]["id"])
    enable_training_features(cluster)
    _remember(cluster)
    return cluster


@pytest.fixture
def worker(start_worker):
    return start_worker(pool="threads", concurrency=4)


@pytest.fixture
def cluster(sandbox, team, admin_api, worker) -> Cluster:
    """The team's active sandbox cluster with the training operator and KubeRay, and a worker running."""
    return made_cluster(team, admin_api)


@pytest.fixture
def bare_cluster(sandbox, other_team, outsider_api, worker) -> Cluster:
    """Another team's sandbox cluster with no training operator and no KubeRay."""
    if other_team.pk in _MADE:
        return _restore(other_team)
    body = outsider_api.post("/api/v1/clusters/", {**CLUSTER_BODY, "name": "bare"}, format="json").json()
    wait_for_operation(body["operation"]["id"], timeout=240)
    found = wait_until(lambda: Cluster.objects.filter(pk=body["cluster"]["id"]).first())
    _remember(found)
    return found


@pytest.fixture
def asgi(transactional_db):
    """The real ASGI application (portal, REST, websockets) under uvicorn on a free port."""
    server = AsgiServer()
    yield server
    server.stop()
