"""Using a cluster from the portal: the overview's Connect box (kubectl, a kubeconfig kubectl accepts,
the shared claim in a pod, the API page) and attaching / detaching storage on the storage tab."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from django.urls import reverse

from clusters.models import Cluster, Storage
from instantstart.cloud.aws import team_cloud
from tests.clusters.helpers import cluster_body, wait_for_operation

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]
KUBECTL = shutil.which("kubectl")


@pytest.fixture
def cluster(admin_api, start_worker) -> Cluster:
    start_worker()
    body = admin_api.post("/api/v1/clusters/", cluster_body("usable"), format="json").json()
    wait_for_operation(body["operation"]["id"])
    return Cluster.objects.get(pk=body["cluster"]["id"])


def test_connect_box_and_kubeconfig(admin_client, viewer_client, cluster, tmp_path):
    page = viewer_client.get(reverse("portal:cluster", args=[cluster.pk])).content.decode()
    box = page[page.index('id="connect"') : page.index("</section>", page.index('id="connect"'))]
    assert f"kubectl --server {cluster.eks_endpoint} get nodes" in box
    assert "claimName: shared" in box and "mountPath: /shared" in box
    assert reverse("api:cluster-detail", args=[cluster.pk]) in box
    download = viewer_client.get(reverse("portal:cluster_kubeconfig", args=[cluster.pk]))
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="usable.kubeconfig"'
    config = yaml.safe_load(download.content)
    assert config["clusters"][0]["cluster"]["server"] == cluster.eks_endpoint
    assert "token" not in download.content.decode().lower()  # no credential in it
    if KUBECTL:
        path = tmp_path / "usable.kubeconfig"
        path.write_bytes(download.content)
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", str(path), "get", "nodes", "-o", "name"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.count("node/") == 2


def test_attach_and_detach_storage_in_the_portal(admin_client, viewer_client, team, cluster):
    team_cloud(team, "us-west-2").client("s3").create_bucket(
        Bucket="acme-corpus", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    tab = reverse("portal:cluster", args=[cluster.pk]) + "?tab=storage"
    assert 'id="storage-attach"' in admin_client.get(tab).content.decode()
    assert 'id="storage-attach"' not in viewer_client.get(tab).content.decode()  # admins attach
    attach = reverse("portal:cluster_storage_attach", args=[cluster.pk])

    missing = admin_client.post(attach, {"name": "corpus", "kind": "s3", "bucket": "no-such-bucket"})
    assert missing.status_code == 400 and "No bucket no-such-bucket" in missing.content.decode()
    assert not Storage.objects.filter(cluster=cluster, name="corpus").exists()

    done = admin_client.post(attach, {"name": "corpus", "kind": "s3", "bucket": "acme-corpus"})
    assert done.status_code == 302 and "tab=storage" in done["Location"]
    storage = Storage.objects.get(cluster=cluster, name="corpus")
    wait_for_operation(storage_operation(admin_client, done["Location"]))
    page = admin_client.get(tab).content.decode()
    assert "s3://acme-corpus" in page and "acme/corpus" in page

    detach = reverse("portal:cluster_storage_detach", args=[cluster.pk, storage.pk])
    assert viewer_client.post(detach).status_code == 403
    gone = admin_client.post(detach)
    assert gone.status_code == 302
    wait_for_operation(storage_operation(admin_client, gone["Location"]))
    assert "s3://acme-corpus" not in admin_client.get(tab).content.decode()


def storage_operation(client, location: str) -> str:
    return location.split("operation=")[1]
