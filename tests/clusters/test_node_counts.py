"""Node counts as a user reads them: after a scale, an added group, a deleted node and a deleted
group, the cluster header, overview, list and REST ``nodes`` say what kubectl says; a deleted
cluster shows none."""

from __future__ import annotations

import re

import pytest
from kubernetes import client as k8s

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from tests.clusters.helpers import cluster_body, wait_for_operation

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


def kubectl_count(team, cluster: Cluster) -> int:
    api = api_client(team_cloud(team, "us-west-2"), cluster.eks_cluster_name)
    return len(k8s.CoreV1Api(api).list_node(label_selector="sagemaker.amazonaws.com/instance-group-name").items)


def header_counts(html: str) -> str:
    """The "ready / registered" figure of the cluster summary."""
    summary = re.search(r'id="cluster-summary".*?</section>', html, re.S).group(0)
    return re.search(r'title="ready / registered">([^<]*)<', summary).group(1).strip()


def list_counts(html: str, name: str) -> str:
    row = re.search(rf"<tr[^>]*>(?:(?!</tr>).)*<strong>{name}</strong>(?:(?!</tr>).)*</tr>", html, re.S).group(0)
    return re.search(r'title="ready / registered">([^<]*)<', row).group(1).strip()


def overview_nodes(html: str, group: str) -> str:
    """The Nodes column of the overview's instance-group table for one group."""
    row = re.search(rf"<tr>\s*<td>{group}</td>(.*?)</tr>", html, re.S).group(1)
    return re.findall(r"<td>(.*?)</td>", row, re.S)[2].strip()


def everywhere(admin_api, admin_client, cluster: Cluster) -> dict:
    detail = admin_client.get(f"/clusters/{cluster.pk}/").content.decode()
    listed = admin_client.get("/clusters/").content.decode()
    rest = admin_api.get(f"/api/v1/clusters/{cluster.pk}/").json()["nodes"]
    return {
        "header": header_counts(detail),
        "list": list_counts(listed, cluster.name),
        "rest": (rest["ready"], rest["total"]),
        "overview": {g: overview_nodes(detail, g) for g in rest["by_group"]},
    }


def test_counts_follow_scale_add_node_delete_group_delete_and_cluster_delete(
    admin_api, admin_client, team, start_worker
):
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("counted"), format="json").json()
    wait_for_operation(body["operation"]["id"])
    cluster = Cluster.objects.get(pk=body["cluster"]["id"])
    base = f"/api/v1/clusters/{cluster.pk}"
    assert everywhere(admin_api, admin_client, cluster)["header"] == "2 / 2"

    # Scale 2 → 3 and add a second group of 1: four nodes, and every page says four.
    scale = admin_api.patch(f"{base}/instance-groups/gpu/", {"count": 3}, format="json")
    wait_for_operation(scale.json()["operation"]["id"])
    added = admin_api.post(
        f"{base}/instance-groups/", {"name": "extra", "instance_type": "ml.g5.xlarge", "count": 1}, format="json"
    )
    assert added.status_code == 202, added.json()
    wait_for_operation(added.json()["operation"]["id"])
    assert kubectl_count(team, cluster) == 4
    assert everywhere(admin_api, admin_client, cluster) == {
        "header": "4 / 4",
        "list": "4 / 4",
        "rest": (4, 4),
        "overview": {"gpu": "3", "extra": "1"},
    }

    # A node deleted: three.
    victim = next(n for n in admin_api.get(f"{base}/nodes/").json()["results"] if n["instance_group"] == "gpu")
    deleted = admin_api.post(f"{base}/nodes/{victim['instance_id']}/delete/")
    assert deleted.status_code == 202, deleted.json()
    wait_for_operation(deleted.json()["id"])
    assert kubectl_count(team, cluster) == 3
    counts = everywhere(admin_api, admin_client, cluster)
    assert (counts["header"], counts["rest"], counts["overview"]) == ("3 / 3", (3, 3), {"gpu": "2", "extra": "1"})

    # The added group deleted: two again, and the group is gone from the counts.
    gone = admin_api.delete(f"{base}/instance-groups/extra/")
    wait_for_operation(gone.json()["id"])
    assert kubectl_count(team, cluster) == 2
    counts = everywhere(admin_api, admin_client, cluster)
    assert (counts["header"], counts["rest"], counts["overview"]) == ("2 / 2", (2, 2), {"gpu": "2"})

    # The cluster deleted: its page (kept for history) shows no nodes.
    deleting = admin_api.delete(f"{base}/")
    wait_for_operation(deleting.json()["operation"]["id"])
    page = admin_client.get(f"/clusters/{cluster.pk}/").content.decode()
    assert header_counts(page) == "0 / 0"
    assert "Schedulable" not in re.search(r'id="cluster-summary".*?</section>', page, re.S).group(0)
