"""Another team's cluster or job is the same 404 on every path and tool (rows only: nothing reaches a cloud)."""

from __future__ import annotations

import uuid

from clusters.models import ClusterStatus
from instantstart.operations.models import Operation
from tests.factories import ClusterFactory, InstanceGroupFactory
from tests.mcp_client import assert_same
from training.models import Job, LogLine


def _job(cluster, name="theirs-job") -> Job:
    job = Job.objects.create(
        cluster=cluster,
        name=name,
        recipe="pytorch",
        kind="HyperPodPyTorchJob",
        namespace=cluster.team.slug,
        k8s_name=f"{name}-abcde",
        spec={"mlflow": True},
        status="running",
    )
    LogLine.objects.create(job=job, seq=1, pod=f"{name}-abcde-pods-0", text="secret line")
    return job


def test_another_teams_jobs_and_files_are_the_same_404_on_every_path_and_tool(admin_mcp, rest, team, other_team):
    mine = ClusterFactory(team=team, name="mine", status=ClusterStatus.ACTIVE)
    theirs = ClusterFactory(team=other_team, name="theirs", status=ClusterStatus.ACTIVE)
    InstanceGroupFactory(cluster=theirs, name="gpu")
    job = _job(theirs)
    submit = {"name": "steal", "recipe": "pytorch", "instance_group": "gpu", "script": "/s3/x.py"}
    base = f"/api/v1/clusters/{theirs.pk}/jobs/"
    cases = [
        ("list_jobs", {"cluster_id": theirs.pk}, "get", base, None),
        ("get_job", {"cluster_id": theirs.pk, "job_id": job.pk}, "get", f"{base}{job.pk}/", None),
        ("submit_job", {"cluster_id": theirs.pk, **submit}, "post", base, submit),
        ("cancel_job", {"cluster_id": theirs.pk, "job_id": job.pk}, "delete", f"{base}{job.pk}/", None),
        ("resubmit_job", {"cluster_id": theirs.pk, "job_id": job.pk}, "post", f"{base}{job.pk}/resubmit/", None),
        ("get_job_logs", {"cluster_id": theirs.pk, "job_id": job.pk}, "get", f"{base}{job.pk}/logs/", None),
        ("get_job_metrics", {"cluster_id": theirs.pk, "job_id": job.pk}, "get", f"{base}{job.pk}/metrics/", None),
        ("list_files", {"cluster_id": theirs.pk}, "get", f"/api/v1/clusters/{theirs.pk}/files/", None),
        # Their job under my cluster is not found either.
        (
            "get_job",
            {"cluster_id": mine.pk, "job_id": job.pk},
            "get",
            f"/api/v1/clusters/{mine.pk}/jobs/{job.pk}/",
            None,
        ),
        (
            "get_job_logs",
            {"cluster_id": mine.pk, "job_id": job.pk},
            "get",
            f"/api/v1/clusters/{mine.pk}/jobs/{job.pk}/logs/",
            None,
        ),
    ]
    for tool, arguments, method, path, data in cases:
        arguments = {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in arguments.items()}
        result = admin_mcp.call(tool, arguments)
        response = getattr(rest, method)(path, data, format="json") if data else getattr(rest, method)(path)
        assert response.status_code == 404, (tool, response.json())
        assert_same(result, response)
    upload = rest.post(f"/api/v1/clusters/{theirs.pk}/files/", {"path": "x.py"}, format="multipart")
    assert upload.status_code == 404
    assert rest.get(f"/api/v1/clusters/{mine.pk}/jobs/").json()["count"] == 0
    job.refresh_from_db()
    assert job.status == "running"
    assert Job.objects.count() == 1
    assert not Operation.objects.exists()
