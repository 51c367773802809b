"""The Training page and the job page over the same serializers and services as REST."""

from __future__ import annotations

import re

import pytest

from tests.factories import ClusterFactory
from training.models import Job

from .helpers import upload, wait_for_job

pytestmark = [pytest.mark.worker]


def test_training_page_form_preflight_submit_and_job_page(cluster, admin_api, admin_client):
    upload(admin_api, cluster, "scripts/train.py", b"print(1)\n")
    page = admin_client.get(f"/jobs/{cluster.pk}/?recipe=llama_factory")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-recipe="verl"' in html and 'name="config"' in html
    form = {
        "recipe": "pytorch",
        "name": "from-form",
        "instance_group": "gpu",
        "nodes": "1",
        "mlflow": "true",
        "storage": "s3",
    }
    bad = admin_client.post(f"/jobs/{cluster.pk}/submit/", {**form, "script": "/s3/nope.py"})
    assert bad.status_code == 400 and "/s3/nope.py does not exist" in bad.content.decode(), re.findall(
        r"error[^<]*<[^>]*>[^<]*", bad.content.decode()
    )
    preflight = admin_client.post(f"/jobs/{cluster.pk}/preflight/", {**form, "script": "/s3/scripts/train.py"}).content
    assert "training_operator feature is enabled" in preflight.decode() and "Ready to submit" in preflight.decode()
    answer = admin_client.post(
        f"/jobs/{cluster.pk}/submit/", {**form, "script": "/s3/scripts/train.py", "storage": "s3"}
    )
    assert answer.status_code == 302
    job = Job.objects.get(name="from-form")
    assert answer["Location"] == f"/jobs/{cluster.pk}/{job.pk}/"
    job_page = admin_client.get(answer["Location"]).content.decode()
    assert "/static/training/chart.umd.min.js" in job_page and f"/ws/jobs/{job.pk}/logs/" in job_page
    assert wait_for_job(admin_api, cluster, str(job.pk))["status"] == "succeeded"
    listed = admin_client.get(f"/jobs/{cluster.pk}/?part=jobs", HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r"from-form.*Succeeded", listed, re.S)


def test_another_teams_training_pages_are_404(admin_client, other_team):
    theirs = ClusterFactory(team=other_team, name="theirs")
    job = Job.objects.create(
        cluster=theirs, name="x", recipe="pytorch", kind="HyperPodPyTorchJob", namespace="globex", k8s_name="x-1"
    )
    for method, url in (
        ("get", f"/jobs/{theirs.pk}/"),
        ("post", f"/jobs/{theirs.pk}/submit/"),
        ("post", f"/jobs/{theirs.pk}/preflight/"),
        ("get", f"/jobs/{theirs.pk}/files/"),
        ("post", f"/jobs/{theirs.pk}/files/upload/"),
        ("get", f"/jobs/{theirs.pk}/{job.pk}/"),
        ("post", f"/jobs/{theirs.pk}/{job.pk}/cancel/"),
        ("post", f"/jobs/{theirs.pk}/{job.pk}/resubmit/"),
    ):
        assert getattr(admin_client, method)(url).status_code == 404, url
